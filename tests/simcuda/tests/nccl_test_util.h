// Helpers shared by the tests of the simulated NCCL (libnccl.so.2):
// nccl_collectives_test.cc and nccl_comm_test.cc.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace nccltest {

using Bytes = std::vector<unsigned char>;

#define NCCL_OK(x) ASSERT_EQ(ncclSuccess, (x))
#define CUDA_OK(x) ASSERT_EQ(cudaSuccess, (x))

inline void* to_device(const void* host, size_t bytes) {
  void* d = nullptr;
  EXPECT_EQ(cudaSuccess, cudaMalloc(&d, bytes));
  EXPECT_EQ(cudaSuccess, cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
  return d;
}

inline Bytes from_device(const void* d, size_t bytes) {
  Bytes h(bytes);
  EXPECT_EQ(cudaSuccess, cudaMemcpy(h.data(), d, bytes, cudaMemcpyDeviceToHost));
  return h;
}

template <class T>
std::vector<T> download(const void* d, size_t count) {
  std::vector<T> v(count);
  EXPECT_EQ(cudaSuccess, cudaMemcpy(v.data(), d, count * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

// Runs `body` on `n` threads, rank r on device r, each with its own comm
// (ncclCommInitRank) and a fresh blocking stream.
inline void run_ranks(int n, const std::function<void(int, ncclComm_t, cudaStream_t)>& body) {
  ncclUniqueId id;
  ASSERT_EQ(ncclSuccess, ncclGetUniqueId(&id));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      ASSERT_EQ(cudaSuccess, cudaSetDevice(r));
      ncclComm_t comm = nullptr;
      ASSERT_EQ(ncclSuccess, ncclCommInitRank(&comm, n, id, r));
      cudaStream_t s;
      ASSERT_EQ(cudaSuccess, cudaStreamCreate(&s));
      body(r, comm, s);
      EXPECT_EQ(cudaSuccess, cudaStreamSynchronize(s));
      EXPECT_EQ(cudaSuccess, cudaStreamDestroy(s));
      EXPECT_EQ(ncclSuccess, ncclCommDestroy(comm));
    });
  }
  for (auto& t : threads) t.join();
}

// A distinct test value for element i of rank r.
inline int32_t val(int r, size_t i) { return static_cast<int32_t>(r * 1000003 + i * 7 + 1); }

}  // namespace nccltest

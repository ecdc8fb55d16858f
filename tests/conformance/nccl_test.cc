// NCCL results: the NCCL documentation, "Collective Operations" (AllReduce:
// "reduce data arrays of length count in sendbuff using op operation and
// leaves identical copies of the result on each recvbuff"; Broadcast;
// AllGather: "each rank receives the aggregation of data from all ranks in
// the order of the ranks") and "Group Calls"; tests/simcuda/README.md,
// "NCCL". libnccl.so.2 is loaded at run time, like gpuslack finds it: one
// rank per device, up to two (a single H200 runs one rank).
#include <dlfcn.h>
#include <nccl.h>

#include <vector>

#include "conformance.h"

using namespace conformance;

namespace {

struct Nccl {
  void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  template <class F>
  F fn(const char* name) const {
    return lib ? reinterpret_cast<F>(dlsym(lib, name)) : nullptr;
  }
  decltype(&ncclCommInitAll) init_all = fn<decltype(&ncclCommInitAll)>("ncclCommInitAll");
  decltype(&ncclCommDestroy) destroy = fn<decltype(&ncclCommDestroy)>("ncclCommDestroy");
  decltype(&ncclAllReduce) all_reduce = fn<decltype(&ncclAllReduce)>("ncclAllReduce");
  decltype(&ncclAllGather) all_gather = fn<decltype(&ncclAllGather)>("ncclAllGather");
  decltype(&ncclBroadcast) broadcast = fn<decltype(&ncclBroadcast)>("ncclBroadcast");
  decltype(&ncclGroupStart) group_start = fn<decltype(&ncclGroupStart)>("ncclGroupStart");
  decltype(&ncclGroupEnd) group_end = fn<decltype(&ncclGroupEnd)>("ncclGroupEnd");
};

constexpr size_t kCount = 1 << 16;

struct Ranks {
  int n = 0;
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
  std::vector<float*> send, recv;
};

// Creates one rank per device (at most two), each with a stream and
// buffers; send of rank r holds r + 1 everywhere.
void make_ranks(const Nccl& nccl, Ranks* r, size_t recv_count) {
  int devices = 0;
  ASSERT_EQ(cudaSuccess, cudaGetDeviceCount(&devices));
  r->n = devices < 2 ? devices : 2;
  r->comms.resize(r->n);
  std::vector<int> ids(r->n);
  for (int i = 0; i < r->n; ++i) ids[i] = i;
  ASSERT_EQ(ncclSuccess, nccl.init_all(r->comms.data(), r->n, ids.data()));
  for (int i = 0; i < r->n; ++i) {
    ASSERT_EQ(cudaSuccess, cudaSetDevice(i));
    cudaStream_t s;
    float *a, *b;
    ASSERT_EQ(cudaSuccess, cudaStreamCreate(&s));
    ASSERT_EQ(cudaSuccess, cudaMalloc(&a, kCount * sizeof(float)));
    ASSERT_EQ(cudaSuccess, cudaMalloc(&b, recv_count * sizeof(float)));
    std::vector<float> v(kCount, static_cast<float>(i + 1));
    ASSERT_EQ(cudaSuccess, cudaMemcpy(a, v.data(), kCount * sizeof(float), cudaMemcpyHostToDevice));
    r->streams.push_back(s);
    r->send.push_back(a);
    r->recv.push_back(b);
  }
}

void free_ranks(const Nccl& nccl, Ranks* r) {
  for (int i = 0; i < r->n; ++i) {
    cudaSetDevice(i);
    cudaStreamSynchronize(r->streams[i]);
    nccl.destroy(r->comms[i]);
    cudaFree(r->send[i]);
    cudaFree(r->recv[i]);
    cudaStreamDestroy(r->streams[i]);
  }
  cudaSetDevice(0);
}

std::vector<float> read(int device, const float* p, size_t n) {
  std::vector<float> v(n);
  cudaSetDevice(device);
  EXPECT_EQ(cudaSuccess, cudaMemcpy(v.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost));
  return v;
}

TEST(Nccl, AllReduceSumLeavesTheSumOnEveryRank) {
  Nccl nccl;
  ASSERT_NE(nullptr, nccl.lib) << "libnccl.so.2 not found (gpu-check.sh leaves Nccl.* out where none is installed)";
  Ranks r;
  make_ranks(nccl, &r, kCount);
  ASSERT_EQ(ncclSuccess, nccl.group_start());
  for (int i = 0; i < r.n; ++i)
    ASSERT_EQ(ncclSuccess, nccl.all_reduce(r.send[i], r.recv[i], kCount, ncclFloat, ncclSum, r.comms[i], r.streams[i]));
  ASSERT_EQ(ncclSuccess, nccl.group_end());
  const float sum = static_cast<float>(r.n * (r.n + 1) / 2);
  for (int i = 0; i < r.n; ++i) {
    CUDA_OK(cudaSetDevice(i));
    CUDA_OK(cudaStreamSynchronize(r.streams[i]));
    std::vector<float> v = read(i, r.recv[i], kCount);
    EXPECT_EQ(sum, v[0]);
    EXPECT_EQ(sum, v[kCount - 1]);
  }
  free_ranks(nccl, &r);
}

TEST(Nccl, AllGatherConcatenatesInRankOrderAndBroadcastCopiesTheRoot) {
  Nccl nccl;
  ASSERT_NE(nullptr, nccl.lib) << "libnccl.so.2 not found";
  Ranks r;
  make_ranks(nccl, &r, kCount * 2);
  ASSERT_EQ(ncclSuccess, nccl.group_start());
  for (int i = 0; i < r.n; ++i)
    ASSERT_EQ(ncclSuccess, nccl.all_gather(r.send[i], r.recv[i], kCount, ncclFloat, r.comms[i], r.streams[i]));
  ASSERT_EQ(ncclSuccess, nccl.group_end());
  for (int i = 0; i < r.n; ++i) {
    CUDA_OK(cudaSetDevice(i));
    CUDA_OK(cudaStreamSynchronize(r.streams[i]));
    std::vector<float> v = read(i, r.recv[i], kCount * r.n);
    for (int k = 0; k < r.n; ++k) EXPECT_EQ(static_cast<float>(k + 1), v[k * kCount + kCount / 2]) << k;
  }
  ASSERT_EQ(ncclSuccess, nccl.group_start());
  for (int i = 0; i < r.n; ++i)
    ASSERT_EQ(ncclSuccess, nccl.broadcast(r.send[i], r.recv[i], kCount, ncclFloat, 0, r.comms[i], r.streams[i]));
  ASSERT_EQ(ncclSuccess, nccl.group_end());
  for (int i = 0; i < r.n; ++i) {
    CUDA_OK(cudaSetDevice(i));
    CUDA_OK(cudaStreamSynchronize(r.streams[i]));
    EXPECT_EQ(1.0f, read(i, r.recv[i], kCount)[kCount - 1]);
  }
  free_ranks(nccl, &r);
}

}  // namespace

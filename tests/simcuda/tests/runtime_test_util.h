// Shared by the simulated runtime's tests (runtime_test.cc,
// runtime_memory_test.cc): buffers, random data and the timing margins.
//
// Timing assertions use wide margins. A call that must wait for a 50 ms busy
// kernel must return >= 40 ms after the kernel was launched (the clock starts
// before the launch, so a slow machine can only lengthen it); a call that
// must not wait must return in < 25 ms. Both hold on a loaded 2-core machine
// and under the sanitizers.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <vector>

#include "gpusim.h"

// Declared by the headers only under CUDA_API_PER_THREAD_DEFAULT_STREAM.
extern "C" cudaError_t cudaStreamQuery_ptsz(cudaStream_t);

namespace runtimetest {

using Clock = std::chrono::steady_clock;
inline constexpr unsigned kBusyUs = 50000;
inline constexpr double kBlockedMs = 40;
inline constexpr double kFreeMs = 25;

inline double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

#define CUDA_OK(x) ASSERT_EQ(cudaSuccess, (x))

struct DevBuf {
  void* p = nullptr;
  explicit DevBuf(size_t n) { EXPECT_EQ(cudaSuccess, cudaMalloc(&p, n)); }
  ~DevBuf() { cudaFree(p); }
};

inline std::vector<unsigned char> random_bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

struct Pinned {
  void* p = nullptr;
  size_t n;
  explicit Pinned(size_t n) : n(n) { EXPECT_EQ(cudaSuccess, cudaMallocHost(&p, n)); }
  ~Pinned() { cudaFreeHost(p); }
};

}  // namespace runtimetest

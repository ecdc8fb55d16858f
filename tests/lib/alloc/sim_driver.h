// For the tests of lib/alloc on the simulated driver: the driver API
// (failing the test, not crashing it, when it cannot be loaded), sizes, and
// a non-blocking stream the allocator's fences know of.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>

#include "cuda/driver_api.h"
#include "sync/stream_registry.h"

namespace gpuslack {
namespace alloc {
namespace test_support {

constexpr uint64_t kMiB = 1ull << 20;

inline const cuda::DriverApi* api() {
  const cuda::DriverApi* a = cuda::driver();
  EXPECT_NE(nullptr, a) << cuda::why_no_driver();
  return a;
}

// A new non-blocking stream, registered as the stream hooks would.
inline cudaStream_t non_blocking() {
  cudaStream_t s = nullptr;
  EXPECT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  sync::stream_created(s, 0, cudaStreamNonBlocking);
  return s;
}

}  // namespace test_support
}  // namespace alloc
}  // namespace gpuslack

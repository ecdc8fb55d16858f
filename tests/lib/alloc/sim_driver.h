// For the tests of lib/alloc on the simulated driver: the driver API
// (failing the test, not crashing it, when it cannot be loaded) and sizes.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include "cuda/driver_api.h"

namespace gpuslack {
namespace alloc {
namespace test_support {

constexpr uint64_t kMiB = 1ull << 20;

inline const cuda::DriverApi* api() {
  const cuda::DriverApi* a = cuda::driver();
  EXPECT_NE(nullptr, a) << cuda::why_no_driver();
  return a;
}

}  // namespace test_support
}  // namespace alloc
}  // namespace gpuslack

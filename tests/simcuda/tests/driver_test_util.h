// Helpers shared by the tests of the simulated driver (libcuda.so.1).
#pragma once

#include <cuda.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace drivertest {

constexpr size_t kMiB = 1ull << 20;
constexpr size_t kGran = 2 * kMiB;

#define CU_OK(x) ASSERT_EQ(CUDA_SUCCESS, (x))

inline CUmemAllocationProp device_prop(int device = 0, bool posix_fd = false) {
  CUmemAllocationProp p;
  std::memset(&p, 0, sizeof(p));
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = device;
  if (posix_fd) p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return p;
}

inline CUmemAccessDesc rw_access(int device = 0,
                                 CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
  CUmemAccessDesc d;
  std::memset(&d, 0, sizeof(d));
  d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  d.location.id = device;
  d.flags = flags;
  return d;
}

inline void* ptr(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

// The permission field ("rw-s", "---p", ...) of the host mapping holding `p`,
// from /proc/self/maps; "" when unmapped.
inline std::string perms_at(CUdeviceptr p) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long long lo = 0, hi = 0;
    char perms[8] = {0};
    if (std::sscanf(line.c_str(), "%llx-%llx %7s", &lo, &hi, perms) != 3) continue;
    if (p >= lo && p < hi) return perms;
  }
  return "";
}

// Touches `p` (read, or write) in a death-test child: exits with 42 when the
// access faults, 0 when it does not.
[[noreturn]] inline void touch_and_exit(CUdeviceptr p, bool write) {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = [](int) { _exit(42); };
  sigaction(SIGSEGV, &sa, nullptr);
  sigaction(SIGBUS, &sa, nullptr);
  volatile char* c = static_cast<volatile char*>(ptr(p));
  if (write) *c = 1;
  else (void)*c;
  _exit(0);
}

inline double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// Binds `device`'s primary context to the calling thread, as a driver API
// program must before the calls that act on the current context
// (cuMemGetInfo, cuMemGetAddressRange, ...): a thread has none until then
// (driver_context_test.cc).
inline void bind_primary_context(int device = 0) {
  CUcontext c = nullptr;
  ASSERT_EQ(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&c, device));
  ASSERT_EQ(CUDA_SUCCESS, cuCtxSetCurrent(c));
}

// A test of an initialized driver (driver_test.cc, driver_vmm_test.cc).
class DriverTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(CUDA_SUCCESS, cuInit(0)); }
};

}  // namespace drivertest

// The suite's main: finds the busy kernel and allocates its buffer once,
// before any test (an allocation inside a test would be an ordering point
// of its own), on the main thread (context_test.cc uses fresh threads).
#include <dlfcn.h>
#include <stdint.h>

#include <cstdio>

#include "conformance.h"

#ifdef CONFORMANCE_HAS_SPIN_KERNEL
#include "spin_kernel.h"
#endif

namespace conformance {
namespace {

using BusyFn = cudaError_t (*)(cudaStream_t, void*, size_t, unsigned, uint32_t, volatile int*);
constexpr size_t kBusyBytes = 4096;
void* g_busy_buf = nullptr;

BusyFn sim_busy() { return reinterpret_cast<BusyFn>(dlsym(RTLD_DEFAULT, "gpusim_busy_kernel")); }

class Device : public ::testing::Environment {
 public:
  void SetUp() override {
    ASSERT_EQ(cudaSuccess, cudaMalloc(&g_busy_buf, kBusyBytes));
    ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
    std::printf("conformance: %s device\n", simulated() ? "simulated" : "real");
  }
};

}  // namespace

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

bool simulated() { return sim_busy() != nullptr; }

cudaError_t busy(cudaStream_t stream, unsigned ms) {
  if (BusyFn f = sim_busy()) return f(stream, g_busy_buf, kBusyBytes, ms * 1000u, 1, nullptr);
#ifdef CONFORMANCE_HAS_SPIN_KERNEL
  return launch_spin(stream, static_cast<unsigned long long>(ms) * 1000000ull);
#else
  std::fprintf(stderr, "conformance: no busy kernel (built without nvcc, not simulated)\n");
  return cudaErrorNotSupported;
#endif
}

}  // namespace conformance

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Death tests (vmm_test.cc) re-run this binary for the one test.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ::testing::AddGlobalTestEnvironment(new conformance::Device);
  return RUN_ALL_TESTS();
}

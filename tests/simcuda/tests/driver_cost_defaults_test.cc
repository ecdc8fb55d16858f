// The simulated driver's default VMM costs are the figures its README's
// cost table cites (README.md, "Cost model", "The VMM calls"): the one
// published per-call measurement, kvcached's bench_vmm on an A100 80GB with
// 2 MiB handles (cuMemCreate 193.32 us, cuMemMap 1.45, cuMemSetAccess
// 35.99, cuMemUnmap 25.63), and the model's stated growth with size. A
// change to the defaults or to the formula that the README does not follow
// fails here. No environment: these are the defaults.
#include <gtest/gtest.h>

#include "sim.h"

namespace {

using gpusim::VmmCall;
using gpusim::vmm_cost_us;

constexpr size_t kMiB = 1ull << 20;

TEST(DriverCostDefaults, A2MiBCallCostsWhatWasMeasured) {
  EXPECT_NEAR(193.1, vmm_cost_us(VmmCall::kCreate, 2 * kMiB), 0.1);  // measured 193.32
  EXPECT_NEAR(1.5, vmm_cost_us(VmmCall::kMap, 2 * kMiB), 0.01);      // measured 1.45
  EXPECT_NEAR(36.0, vmm_cost_us(VmmCall::kSetAccess, 2 * kMiB), 0.01);  // measured 35.99
  EXPECT_NEAR(25.6, vmm_cost_us(VmmCall::kUnmap, 2 * kMiB, 1), 0.01);   // measured 25.63
  EXPECT_EQ(0.0, vmm_cost_us(VmmCall::kRelease, 2 * kMiB));  // no published figure
}

TEST(DriverCostDefaults, GrowthWithSizeIsTheReadmes) {
  // cuMemCreate: 191 us per call + zeroing at 1000 GB/s (20 MiB: 212.0 us).
  EXPECT_NEAR(191.0 + 20.0 * kMiB / 1e9 * 1e6 / 1000.0, vmm_cost_us(VmmCall::kCreate, 20 * kMiB), 0.01);
  // cuMemMap: per call, whatever the size.
  EXPECT_NEAR(1.5, vmm_cost_us(VmmCall::kMap, 20 * kMiB), 0.01);
  // cuMemSetAccess: 34 us + 2 us per 2 MiB granule, rounded up (20 MiB: 54).
  EXPECT_NEAR(54.0, vmm_cost_us(VmmCall::kSetAccess, 20 * kMiB), 0.01);
  EXPECT_NEAR(38.0, vmm_cost_us(VmmCall::kSetAccess, 2 * kMiB + 1), 0.01);
  // cuMemUnmap: per mapping removed, whatever their size.
  EXPECT_NEAR(10 * 25.6, vmm_cost_us(VmmCall::kUnmap, 20 * kMiB, 10), 0.01);
  EXPECT_NEAR(25.6, vmm_cost_us(VmmCall::kUnmap, 20 * kMiB, 1), 0.01);
}

}  // namespace

// The kernel rule (lib/findings/kernel_rules.cc) over built summaries: it
// fires on kernels that fill the GPU in partial waves and take a tenth of
// busy time, and stays quiet on the near misses (efficient kernels;
// inefficient ones too small to matter; NCCL's; unknown limits).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "findings/findings.h"

namespace gpuslack {
namespace findings {
namespace {

// A kernel of `seconds` whose launches ran at `efficiency` on 132 SMs, in
// grids of `blocks` (one block per SM).
report::KernelRow kernel(const std::string& name, double seconds, double efficiency, uint64_t blocks) {
  report::KernelRow k;
  k.name = name;
  k.count = 1000;
  k.total_s = seconds;
  k.mean_s = seconds / 1000;
  report::KernelLaunches& l = k.launches;
  l.sm_count = 132;
  l.shapes = 1;
  l.blocks_min = l.blocks_max = blocks;
  l.blocks_per_sm_min = l.blocks_per_sm_max = 1;
  l.waves_min = l.waves_max = static_cast<double>(blocks) / 132;
  l.wave_efficiency = l.wave_efficiency_min = efficiency;
  l.shaped_s = seconds;
  l.below_sms_s = blocks < 132 ? seconds : 0;
  if (blocks < 132 || efficiency < 0.75) {
    l.underfilled_s = seconds;
    l.underfilled_idle_s = seconds * (1 - efficiency);
  }
  l.top_shapes = {report::KernelShapeRow{blocks, 384, 168, 196608, 1, l.waves_max, efficiency, 1000, seconds}};
  return k;
}

// A 10 s run, its device measured 10 s, 8 s busy computing in `kernels`.
report::Summary measured(std::vector<report::KernelRow> kernels) {
  report::Summary s;
  s.wall_s = 10;
  s.gpu_timeline.status = timeline::Status::kMeasured;
  report::GpuDeviceRow d;
  d.wall_s = 10;
  d.busy_s = 8;
  d.busy_by[static_cast<int>(timeline::Busy::kCompute)] = 8;
  d.idle_s = 2;
  d.top_kernels = std::move(kernels);
  s.gpu_timeline.devices.push_back(d);
  return s;
}

std::vector<report::Finding> run(const report::Summary& s, bool pytorch = false) {
  std::vector<report::Finding> out;
  Context c;
  c.pytorch = pytorch;
  kernel_rules(s, c, &out);
  return out;
}

const char kGemm[] = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x128x64_cublas";

TEST(UnderfilledKernels, FiresOnAGemmInHalfAWave) {
  // 64 blocks on 132 SMs: 48% of the wave used, 3 s of 8 busy.
  auto out = run(measured({kernel(kGemm, 3, 64.0 / 132, 64), kernel("relu_kernel", 2, 0.99, 5000)}));
  ASSERT_EQ(1u, out.size());
  const report::Finding& f = out[0];
  EXPECT_EQ("underfilled_kernels", f.rule);
  EXPECT_NEAR(3 * (1 - 64.0 / 132), f.cost_s, 1e-9);
  EXPECT_NEAR(f.cost_s / 10, f.cost_share, 1e-9);
  EXPECT_EQ(-1, f.gpu_idle_s);  // SMs idle inside busy time, not GPU idle
  ASSERT_EQ(2u, f.evidence.size());
  EXPECT_EQ(kGemm, f.evidence[1].first);
  EXPECT_EQ("38% of GPU busy time in launches that leave SMs idle (3.000 s of its 3.000 s): 64 blocks of 384 "
            "threads: 1/SM, 0.48 waves on 132 SMs, wave efficiency 48%, fewer blocks than SMs (3.000 s); 1.545 s of "
            "SM time idle",
            f.evidence[1].second);
  EXPECT_NE(std::string::npos, f.fix.find("fewer tensor-parallel ranks")) << f.fix;
  EXPECT_NE(std::string::npos, f.fix.find("larger micro-batches")) << f.fix;
  EXPECT_EQ(std::string::npos, f.fix.find("torch.compile")) << f.fix;
}

// One kernel name, several GEMMs: only the ill-shaped one's launches count.
TEST(UnderfilledKernels, JudgedPerShapeNotPerName) {
  report::KernelRow k = kernel(kGemm, 4, 0.97, 512);
  report::KernelLaunches& l = k.launches;
  l.shapes = 2;
  l.top_shapes.insert(l.top_shapes.begin(), report::KernelShapeRow{192, 384, 168, 196608, 1, 192.0 / 132,
                                                                     192.0 / 264, 500, 2});
  l.underfilled_s = 2;
  l.underfilled_idle_s = 2 * (1 - 192.0 / 264);
  l.wave_efficiency = (2 * 192.0 / 264 + 2 * 0.97) / 4;  // 85%: the name alone would pass
  auto out = run(measured({k}));
  ASSERT_EQ(1u, out.size());
  EXPECT_NEAR(2 * (1 - 192.0 / 264), out[0].cost_s, 1e-9);
  EXPECT_NE(std::string::npos, out[0].evidence[1].second.find("192 blocks of 384 threads: 1/SM, 1.45 waves on 132 "
                                                               "SMs, wave efficiency 73% (2.000 s)"))
      << out[0].evidence[1].second;
  EXPECT_EQ(std::string::npos, out[0].evidence[1].second.find("512 blocks")) << out[0].evidence[1].second;
}

TEST(UnderfilledKernels, SmallKernelsGetFusionAsTheirFix) {
  auto out = run(measured({kernel("void at::native::vectorized_elementwise_kernel<4>()", 4, 0.55, 145)}),
                 /*pytorch=*/true);
  ASSERT_EQ(1u, out.size());
  EXPECT_NE(std::string::npos, out[0].fix.find("torch.compile")) << out[0].fix;
  EXPECT_EQ(std::string::npos, out[0].fix.find("tensor-parallel")) << out[0].fix;
  EXPECT_NEAR(4 * 0.45, out[0].cost_s, 1e-9);
}

// Near misses.
TEST(UnderfilledKernels, EfficientKernelsAreQuiet) {
  EXPECT_TRUE(run(measured({kernel(kGemm, 6, 0.97, 256)})).empty());
  EXPECT_TRUE(run(measured({kernel(kGemm, 6, 0.75, 528 - 132)})).empty());  // exactly at the line
}

TEST(UnderfilledKernels, InefficientButTooSmallToMatterIsQuiet) {
  // 0.7 s of 8 busy: under a tenth.
  EXPECT_TRUE(run(measured({kernel(kGemm, 0.7, 0.30, 40), kernel("k", 7, 0.99, 9999)})).empty());
  // A tenth of busy, but its idle SM time under the findings' floor (1% of wall).
  EXPECT_TRUE(run(measured({kernel(kGemm, 1, 0.95, 126)})).empty());
}

TEST(UnderfilledKernels, FewerBlocksThanSmsCountsEvenAtHighEfficiency) {
  // 128 blocks on 132 SMs: 97% but fewer blocks than SMs; 6 s of it: 0.18 s idle SM time.
  auto out = run(measured({kernel(kGemm, 6, 128.0 / 132, 128)}));
  ASSERT_EQ(1u, out.size());
  EXPECT_NEAR(6 * (4.0 / 132), out[0].cost_s, 1e-9);
}

TEST(UnderfilledKernels, NcclKernelsAndUnknownLimitsAreLeftOut) {
  EXPECT_TRUE(run(measured({kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 5,
                                   0.2, 24)}))
                  .empty());
  report::KernelRow unknown = kernel(kGemm, 5, 0.4, 64);
  unknown.launches.sm_count = 0;
  unknown.launches.wave_efficiency = 0;
  EXPECT_TRUE(run(measured({unknown})).empty());
  report::Summary off = measured({kernel(kGemm, 5, 0.4, 64)});
  off.gpu_timeline.status = timeline::Status::kUnavailable;
  EXPECT_TRUE(run(off).empty());
}

TEST(UnderfilledKernels, TheWorstDeviceAndAtMostThreeKernels) {
  report::Summary s = measured({kernel("gemm_a", 2, 0.5, 66), kernel("gemm_b", 1.5, 0.5, 66),
                                kernel("gemm_c", 1, 0.5, 66), kernel("gemm_d", 0.9, 0.5, 66)});
  report::GpuDeviceRow d1 = s.gpu_timeline.devices[0];
  d1.device = 1;
  d1.top_kernels = {kernel("gemm_a", 1, 0.5, 66)};
  s.gpu_timeline.devices.push_back(d1);
  auto out = run(s);
  ASSERT_EQ(1u, out.size());
  EXPECT_EQ("0", out[0].evidence[0].second);
  EXPECT_NEAR(0.5 * (2 + 1.5 + 1 + 0.9), out[0].cost_s, 1e-9);
  ASSERT_EQ(5u, out[0].evidence.size());  // device, three kernels, "more kernels"
  EXPECT_EQ("more kernels", out[0].evidence[4].first);
  EXPECT_EQ("1", out[0].evidence[4].second);
}

}  // namespace
}  // namespace findings
}  // namespace gpuslack

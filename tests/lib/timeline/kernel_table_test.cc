// The kernels by GPU time: counted by name address, merged by demangled
// name, largest first (timeline/kernel_table.h).
#include "timeline/kernel_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis_fixture.h"
#include "timeline/occupancy.h"
#include "timeline/record_decoder.h"
#include "timeline/timeline_analysis.h"

namespace gpuslack {
namespace timeline {
namespace {

using namespace testing;  // NOLINT: the fixture's helpers

TEST(KernelTable, Demangles) {
  EXPECT_EQ("gemm(float*, int)", demangled_kernel_name("_Z4gemmPfi"));
  EXPECT_EQ("void ns::relu<float>(float const*)", demangled_kernel_name("_ZN2ns4reluIfEEvPKf"));
  EXPECT_EQ("plain_c_kernel", demangled_kernel_name("plain_c_kernel"));
  EXPECT_EQ("_Z", demangled_kernel_name("_Z"));  // not a valid mangled name: as given
  EXPECT_EQ("(unnamed kernel)", demangled_kernel_name(nullptr));
}

TEST(KernelTable, MergesByDemangledNameAndSortsByTime) {
  // Two copies of one name at two addresses (two modules).
  static const char kGemmA[] = "_Z4gemmPfi";
  static const char kGemmB[] = "_Z4gemmPfi";
  static const char kRelu[] = "relu";
  static const char kTiny[] = "tiny";
  ASSERT_NE(static_cast<const void*>(kGemmA), static_cast<const void*>(kGemmB));
  KernelTable t;
  t.add(kGemmA, 100);
  t.add(kGemmB, 300);
  t.add(kRelu, 50);
  t.add(kRelu, 50);
  t.add(kRelu, 50);
  t.add(kTiny, 1);
  EXPECT_EQ(4u, t.distinct_names());  // by address
  std::vector<KernelRow> rows;
  t.fill(2, 1e-9, &rows);
  ASSERT_EQ(2u, rows.size());
  EXPECT_EQ("gemm(float*, int)", rows[0].name);
  EXPECT_EQ(2u, rows[0].count);
  EXPECT_DOUBLE_EQ(400e-9, rows[0].total_s);
  EXPECT_DOUBLE_EQ(200e-9, rows[0].mean_s);
  EXPECT_EQ("relu", rows[1].name);
  EXPECT_EQ(3u, rows[1].count);
  EXPECT_DOUBLE_EQ(50e-9, rows[1].mean_s);
}

TEST(KernelTable, PerDeviceThroughTheAnalysisKernelsOnly) {
  static const char kK[] = "_Z1kv";
  AnalysisOptions o = small_options();
  o.top_kernels = 5;
  TimelineAnalysis a(o);
  a.add(gpu(0, 10, Busy::kCompute, kK, 0));
  a.add(gpu(0, 30, Busy::kCommunication, "ncclDevKernel_AllReduce", 0));
  a.add(gpu(10, 20, Busy::kCopies, nullptr, 0));  // a copy: not a kernel
  a.add(gpu(5, 25, Busy::kCompute, kK, 1));
  const auto out = fill(a, 100);
  ASSERT_EQ(2u, out.size());
  ASSERT_EQ(2u, out[0].top_kernels.size());
  EXPECT_EQ("ncclDevKernel_AllReduce", out[0].top_kernels[0].name);
  EXPECT_EQ("k()", out[0].top_kernels[1].name);
  ASSERT_EQ(1u, out[1].top_kernels.size());
  EXPECT_DOUBLE_EQ(20e-9, out[1].top_kernels[0].total_s);
}

LaunchShape launch(uint64_t blocks, uint32_t threads = 256, uint32_t regs = 128, uint32_t shared = 0) {
  LaunchShape s;
  s.blocks = blocks;
  s.threads_per_block = threads;
  s.registers_per_thread = regs;
  s.shared_bytes_per_block = shared;
  return s;
}

// One name, two shapes: the figures per shape and their distribution.
TEST(KernelTable, ShapesGiveBlocksPerSmWavesAndEfficiency) {
  static const char kGemm[] = "gemm_tile";
  KernelTable t;
  t.set_limits(h100_limits());  // 132 SMs
  // 384 threads, 168 registers, 192 KiB of shared memory: one block per SM.
  const LaunchShape narrow = launch(64, 384, 168, 192 << 10);    // 64 blocks: half a wave
  const LaunchShape wide = launch(264, 384, 168, 192 << 10);     // two full waves
  for (int i = 0; i < 3; ++i) t.add(kGemm, 100, narrow);
  t.add(kGemm, 100, wide);
  t.add(kGemm, 50);  // a record without a grid: its time, not its shape
  std::vector<KernelRow> rows;
  t.fill(5, 1e-9, &rows);
  ASSERT_EQ(1u, rows.size());
  const KernelLaunches& l = rows[0].launches;
  EXPECT_EQ(5u, rows[0].count);
  EXPECT_EQ(132, l.sm_count);
  EXPECT_EQ(2u, l.shapes);
  EXPECT_EQ(64u, l.blocks_min);
  EXPECT_EQ(264u, l.blocks_max);
  EXPECT_EQ(1, l.blocks_per_sm_min);
  EXPECT_EQ(1, l.blocks_per_sm_max);
  EXPECT_NEAR(64.0 / 132, l.waves_min, 1e-12);
  EXPECT_DOUBLE_EQ(2.0, l.waves_max);
  EXPECT_NEAR(64.0 / 132, l.wave_efficiency_min, 1e-12);
  // Weighted by GPU time: 300 ticks at 64/132, 100 at 1.
  EXPECT_NEAR((300 * 64.0 / 132 + 100) / 400, l.wave_efficiency, 1e-12);
  EXPECT_DOUBLE_EQ(400e-9, l.shaped_s);
  EXPECT_DOUBLE_EQ(300e-9, l.below_sms_s);
  EXPECT_DOUBLE_EQ(300e-9, l.underfilled_s);  // the 64-block launches alone
  EXPECT_NEAR(300e-9 * (1 - 64.0 / 132), l.underfilled_idle_s, 1e-18);
  ASSERT_EQ(2u, l.top_shapes.size());
  EXPECT_EQ(64u, l.top_shapes[0].blocks);
  EXPECT_EQ(3u, l.top_shapes[0].count);
  EXPECT_EQ(384u, l.top_shapes[0].threads_per_block);
  EXPECT_EQ(168u, l.top_shapes[0].registers_per_thread);
  EXPECT_EQ(192u << 10, l.top_shapes[0].shared_bytes_per_block);
  EXPECT_EQ(1, l.top_shapes[0].blocks_per_sm);
  EXPECT_DOUBLE_EQ(1.0, l.top_shapes[1].wave_efficiency);
}

// Underfilled launches: under 75% wave efficiency (145 blocks: 1.1 waves,
// 55%) count; whole waves (264) do not, nor does 75% exactly (396 of 528).
TEST(KernelTable, UnderfilledLaunchesByEfficiency) {
  static const char kK[] = "k";
  KernelTable t;
  t.set_limits(h100_limits());
  t.add(kK, 1000, launch(145, 384, 168, 192 << 10));
  t.add(kK, 500, launch(264, 384, 168, 192 << 10));
  t.add(kK, 700, launch(396, 384, 168, 192 << 10));
  std::vector<KernelRow> rows;
  t.fill(1, 1e-9, &rows);
  const KernelLaunches& l = rows[0].launches;
  EXPECT_DOUBLE_EQ(0, l.below_sms_s);
  EXPECT_DOUBLE_EQ(1000e-9, l.underfilled_s);
  EXPECT_NEAR(1000e-9 * (1 - 145.0 / 264), l.underfilled_idle_s, 1e-18);
  EXPECT_NEAR(145.0 / 264, l.wave_efficiency_min, 1e-12);
}

// Limits unknown: shapes and blocks, no blocks per SM or waves; shapes
// beyond the cap count as time only.
TEST(KernelTable, UnknownLimitsAndTheShapeCap) {
  static const char kK[] = "k";
  KernelTable t;
  for (uint64_t b = 1; b <= KernelTable::kMaxShapes + 5; ++b) t.add(kK, 10, launch(b));
  std::vector<KernelRow> rows;
  t.fill(1, 1e-9, &rows);
  ASSERT_EQ(1u, rows.size());
  const KernelLaunches& l = rows[0].launches;
  EXPECT_EQ(0, l.sm_count);
  EXPECT_EQ(KernelTable::kMaxShapes, l.shapes);
  EXPECT_EQ(KernelTable::kTopShapes, l.top_shapes.size());
  EXPECT_EQ(0, l.blocks_per_sm_max);
  EXPECT_EQ(0, l.wave_efficiency);
  EXPECT_EQ(1u, l.blocks_min);
  EXPECT_EQ(KernelTable::kMaxShapes, l.blocks_max);
  EXPECT_DOUBLE_EQ(KernelTable::kMaxShapes * 10e-9, l.shaped_s);
  EXPECT_EQ(KernelTable::kMaxShapes + 5, rows[0].count);
}

bool h100_device(int device, DeviceLimits* out) {
  if (device != 0) return false;  // device 1: unknown
  *out = h100_limits();
  return true;
}

// Through the analysis: each device asks its limits once; shapes merge
// across the addresses of one demangled name.
TEST(KernelTable, ThroughTheAnalysisPerDeviceLimits) {
  static const char kA[] = "_Z1kv";
  static const char kB[] = "_Z1kv";
  AnalysisOptions o = small_options();
  o.device_limits = h100_device;
  TimelineAnalysis a(o);
  GpuActivity g = gpu(0, 10, Busy::kCompute, kA, 0);
  g.shape = launch(132);
  a.add(g);
  g.name = kB;
  a.add(g);
  g.device = 1;
  a.add(g);
  const auto out = fill(a, 100);
  ASSERT_EQ(2u, out.size());
  ASSERT_EQ(1u, out[0].top_kernels.size());
  const KernelLaunches& l0 = out[0].top_kernels[0].launches;
  EXPECT_EQ(1u, l0.shapes);
  ASSERT_EQ(1u, l0.top_shapes.size());
  EXPECT_EQ(2u, l0.top_shapes[0].count);
  // 256 threads x 128 registers: 4096 registers per warp, 16 warps by
  // registers, 8 per block: 2 blocks; 132 blocks are half a wave.
  EXPECT_EQ(2, l0.top_shapes[0].blocks_per_sm);
  EXPECT_DOUBLE_EQ(0.5, l0.top_shapes[0].wave_efficiency);
  EXPECT_EQ(0, out[1].top_kernels[0].launches.sm_count);
  EXPECT_EQ(0, out[1].top_kernels[0].launches.top_shapes[0].blocks_per_sm);
}

// The decoder reads the shape from a CUPTI 13.x kernel record.
TEST(RecordDecoder, KernelShape) {
  CUpti_ActivityKernel11 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 10;
  k.end = 20;
  k.name = "_Z4gemmv";
  k.gridX = 8, k.gridY = 4, k.gridZ = 2;
  k.blockX = 128, k.blockY = 2, k.blockZ = 1;
  k.registersPerThread = 168;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 65536;
  GpuActivity a;
  ASSERT_EQ(Decoded::kActivity, decode_record(reinterpret_cast<const CUpti_Activity*>(&k), &a));
  EXPECT_EQ(64u, a.shape.blocks);
  EXPECT_EQ(256u, a.shape.threads_per_block);
  EXPECT_EQ(168u, a.shape.registers_per_thread);
  EXPECT_EQ(66560u, a.shape.shared_bytes_per_block);
  k.gridY = 0;  // no grid: no shape
  GpuActivity b;
  ASSERT_EQ(Decoded::kActivity, decode_record(reinterpret_cast<const CUpti_Activity*>(&k), &b));
  EXPECT_EQ(0u, b.shape.blocks);
}

}  // namespace
}  // namespace timeline
}  // namespace gpuslack

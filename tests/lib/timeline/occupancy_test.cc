// The occupancy and wave arithmetic (timeline/occupancy.h) against NVIDIA's
// own worked examples, each cited where it is checked.
#include "timeline/occupancy.h"

#include <gtest/gtest.h>

namespace gpuslack {
namespace timeline {
namespace {

LaunchShape shape(uint64_t blocks, uint32_t threads, uint32_t regs, uint32_t shared = 0) {
  LaunchShape s;
  s.blocks = blocks;
  s.threads_per_block = threads;
  s.registers_per_thread = regs;
  s.shared_bytes_per_block = shared;
  return s;
}

// CUDA C++ Best Practices Guide, "Calculating Occupancy" (Execution
// Configuration Optimizations > Occupancy): "on a device of compute
// capability 7.0, a kernel with 128-thread blocks using 37 registers per
// thread results in an occupancy of 75% with 12 active 128-thread blocks
// per multi-processor, whereas a kernel with 320-thread blocks using the
// same 37 registers per thread results in an occupancy of 63% because only
// four 320-thread blocks can reside on a multiprocessor."
TEST(Occupancy, BestPracticesRegisterGranularityExample) {
  const DeviceLimits v100 = v100_limits();
  Occupancy a = occupancy(shape(1000, 128, 37), v100);
  EXPECT_TRUE(a.fits);
  EXPECT_EQ(12, a.blocks_per_sm);
  EXPECT_DOUBLE_EQ(0.75, a.occupancy);
  EXPECT_EQ(Limiter::kRegisters, a.limiter);
  Occupancy b = occupancy(shape(1000, 320, 37), v100);
  EXPECT_EQ(4, b.blocks_per_sm);
  EXPECT_EQ(40, b.warps_per_sm);
  EXPECT_DOUBLE_EQ(0.625, b.occupancy);  // 40 of 64 warps: 62.5%, the guide's "63%"
  EXPECT_EQ(Limiter::kRegisters, b.limiter);
}

// The same guide: 2048 threads and 65,536 registers per SM on 7.0, "for a
// multiprocessor to have 100% occupancy, each thread can use at most 32
// registers". One register more, and the per-warp allocation (units of
// 256) and the warp granularity (4) leave 48 warps: 75%.
TEST(Occupancy, ThirtyTwoRegistersIsFullOccupancyAndThirtyThreeIsNot) {
  const DeviceLimits v100 = v100_limits();
  Occupancy full = occupancy(shape(1000, 256, 32), v100);
  EXPECT_EQ(8, full.blocks_per_sm);
  EXPECT_DOUBLE_EQ(1.0, full.occupancy);
  Occupancy less = occupancy(shape(1000, 256, 33), v100);
  EXPECT_EQ(6, less.blocks_per_sm);
  EXPECT_DOUBLE_EQ(0.75, less.occupancy);
  EXPECT_EQ(Limiter::kRegisters, less.limiter);
}

// CUDA C++ Programming Guide, "Compute Capabilities", 9.0: 228 KB of
// shared memory per SM, at most 227 KB per block, and (Shared Memory of
// 8.x and 9.0) 1 KB reserved by the system per block. So a block of 113 KiB
// takes 114 KiB and two fit; a block of 114 KiB takes 115 and only one does
// (without the reserve, two would).
TEST(Occupancy, SharedMemoryCountsThePerBlockReserve) {
  const DeviceLimits h100 = h100_limits();
  Occupancy two = occupancy(shape(1000, 128, 32, 113 << 10), h100);
  EXPECT_EQ(2, two.blocks_per_sm);
  EXPECT_EQ(Limiter::kSharedMemory, two.limiter);
  Occupancy one = occupancy(shape(1000, 128, 32, 114 << 10), h100);
  EXPECT_EQ(1, one.blocks_per_sm);
  EXPECT_EQ(Limiter::kSharedMemory, one.limiter);
  // The allocation unit (128 bytes): 100 KiB + 1 B rounds up, still 2.
  EXPECT_EQ(2, occupancy(shape(1, 128, 32, (100 << 10) + 1), h100).blocks_per_sm);
  // More than the per-block maximum could not have launched.
  Occupancy too_big = occupancy(shape(1, 128, 32, 228 << 10), h100);
  EXPECT_FALSE(too_big.fits);
  EXPECT_EQ(0, too_big.blocks_per_sm);
  // On 7.0 nothing is reserved and the unit is 256 bytes: 48 KiB, two blocks.
  EXPECT_EQ(2, occupancy(shape(1, 128, 32, 48 << 10), v100_limits()).blocks_per_sm);
}

// The Programming Guide's table: at most 32 resident blocks per SM on 9.0
// and 2048 threads: 32-thread blocks stop at 32 (half the warps), 1024-thread
// blocks at 2.
TEST(Occupancy, BlockAndWarpLimits) {
  const DeviceLimits h100 = h100_limits();
  Occupancy small = occupancy(shape(1, 32, 16), h100);
  EXPECT_EQ(32, small.blocks_per_sm);
  EXPECT_EQ(Limiter::kBlocks, small.limiter);
  EXPECT_DOUBLE_EQ(0.5, small.occupancy);
  Occupancy big = occupancy(shape(1, 1024, 32), h100);
  EXPECT_EQ(2, big.blocks_per_sm);
  EXPECT_EQ(Limiter::kWarps, big.limiter);
  // A partial warp counts whole: 33 threads are 2 warps.
  EXPECT_EQ(32, occupancy(shape(1, 33, 0), h100).blocks_per_sm);  // 64 warps / 2 = 32, and the block cap 32
  EXPECT_EQ(21, occupancy(shape(1, 96, 0), h100).blocks_per_sm);   // 3 warps: floor(64 / 3)
}

TEST(Occupancy, ImpossibleBlocksAndUnknownDevices) {
  const DeviceLimits h100 = h100_limits();
  EXPECT_FALSE(occupancy(shape(1, 1025, 32), h100).fits);    // > 1024 threads
  EXPECT_FALSE(occupancy(shape(1, 128, 256), h100).fits);    // > 255 registers
  EXPECT_FALSE(occupancy(shape(1, 1024, 255), h100).fits);   // 1024 x 255 > 64K registers per block
  EXPECT_EQ(0, occupancy(shape(1, 0, 32), h100).blocks_per_sm);
  EXPECT_EQ(0, occupancy(shape(1, 128, 32), DeviceLimits{}).blocks_per_sm);
  EXPECT_FALSE(DeviceLimits{}.known());
  // 255 registers, 128 threads: 8160 per warp rounds to 8192; 8 warps by
  // registers; 4 warps per block: 2 blocks.
  EXPECT_EQ(2, occupancy(shape(1, 128, 255), h100).blocks_per_sm);
}

// Waves (NVIDIA, Matrix Multiplication Background User's Guide, "Wave
// Quantization"): on an A100 (108 SMs) with 256x128 tiles, one block per
// SM, 108 tiles make exactly one wave; one tile more needs a second wave
// that runs one block.
TEST(Waves, MatrixMultiplicationGuideExample) {
  const int sms = a100_limits().sm_count;
  Waves one = waves(108, 1, sms);
  EXPECT_DOUBLE_EQ(1.0, one.waves);
  EXPECT_DOUBLE_EQ(1.0, one.efficiency);
  Waves spill = waves(109, 1, sms);
  EXPECT_NEAR(1.009, spill.waves, 0.001);
  EXPECT_DOUBLE_EQ(109.0 / 216.0, spill.efficiency);  // 50.5%
}

// The figure: a grid of 1.1 waves runs at about 55%.
TEST(Waves, OnePointOneWavesIsAbout55Percent) {
  Waves w = waves(1452, 10, 132);  // 1320 per wave: 1.1 waves
  EXPECT_NEAR(1.1, w.waves, 1e-12);
  EXPECT_NEAR(0.55, w.efficiency, 1e-12);
  EXPECT_EQ(1320u, w.wave_blocks);
  // Fewer blocks than SMs: one partial wave.
  Waves few = waves(64, 1, 132);
  EXPECT_NEAR(64.0 / 132.0, few.efficiency, 1e-12);
  // Whole waves are full.
  EXPECT_DOUBLE_EQ(1.0, waves(3 * 264, 2, 132).efficiency);
  // Unknowns: zero.
  EXPECT_EQ(0, waves(0, 1, 132).efficiency);
  EXPECT_EQ(0, waves(10, 0, 132).efficiency);
  EXPECT_EQ(0, waves(10, 1, 0).efficiency);
}

TEST(Occupancy, LimiterKeys) {
  EXPECT_STREQ("registers", limiter_key(Limiter::kRegisters));
  EXPECT_STREQ("shared_memory", limiter_key(Limiter::kSharedMemory));
  EXPECT_STREQ("warps", limiter_key(Limiter::kWarps));
  EXPECT_STREQ("blocks", limiter_key(Limiter::kBlocks));
  EXPECT_STREQ("none", limiter_key(Limiter::kNone));
}

}  // namespace
}  // namespace timeline
}  // namespace gpuslack

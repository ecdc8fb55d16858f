// The allocator rules (lib/findings/allocator_rules.cc) over built
// summaries: each fires on its figures and not on a near miss.
#include <gtest/gtest.h>

#include "summaries.h"

namespace gpuslack {
namespace findings {
namespace {

using testing::add_call;
using testing::add_site;
using testing::fired;
using testing::run_of;

// 10 s; cudaFree blocked 1.2 s, 0.9 s of it in the middle of the run.
report::Summary steady_frees() {
  report::Summary s = run_of(10);
  add_call(&s, "cudaFree", Category::kAllocation, 120, 1.2, 0.9);
  add_call(&s, "cudaMalloc", Category::kAllocation, 120, 0.01, 0);
  add_site(&s, Category::kAllocation, "cudaFree", 1.1, {"train_step(int)+0x1a (/app/train)", "main+0x10 (/app/train)"});
  add_site(&s, Category::kAllocation, "cudaMallocHost", 2.0, {"pinned_setup+0x1 (/app/train)"});
  return s;
}

TEST(AllocatorSync, FiresOnFreesThatKeepBlockingThroughTheRun) {
  std::vector<report::Finding> f = fired(steady_frees(), "allocator_sync");
  ASSERT_EQ(1u, f.size());
  EXPECT_DOUBLE_EQ(1.2, f[0].cost_s);
  EXPECT_DOUBLE_EQ(0.12, f[0].cost_share);
  EXPECT_EQ(-1, f[0].gpu_idle_s);  // no timeline
  ASSERT_EQ(1u, f[0].where.size());  // the cudaFree site, not cudaMallocHost's
  EXPECT_EQ("train_step(int)+0x1a (/app/train)", f[0].where[0][0]);
  EXPECT_NE(std::string::npos, f[0].fix.find("GPUSLACK_CONF=allocator:vmm"));
  EXPECT_NE(std::string::npos, testing::evidence_of(f[0]).find("cudaFree calls=120"));
}

TEST(AllocatorSync, UnderPyTorchSaysExpandableSegments) {
  std::vector<report::Finding> f = fired(steady_frees(), "allocator_sync", /*pytorch=*/true);
  ASSERT_EQ(1u, f.size());
  EXPECT_NE(std::string::npos, f[0].fix.find("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"));
}

TEST(AllocatorSync, GpuIdleComesFromTheTimelineWhereItMeasured) {
  report::Summary s = steady_frees();
  s.gpu_timeline.status = timeline::Status::kMeasured;
  report::GpuDeviceRow d;
  d.idle_by[static_cast<int>(timeline::Idle::kAllocation)] = 0.7;
  s.gpu_timeline.devices.push_back(d);
  std::vector<report::Finding> f = fired(s, "allocator_sync");
  ASSERT_EQ(1u, f.size());
  EXPECT_DOUBLE_EQ(0.7, f[0].gpu_idle_s);
}

TEST(AllocatorSync, NearMissFreesAtStartAndTeardownOnly) {
  // As much time in cudaFree, none of it in the middle of the run.
  report::Summary s = run_of(10);
  add_call(&s, "cudaFree", Category::kAllocation, 500, 1.2, 0);
  EXPECT_TRUE(fired(s, "allocator_sync").empty());
}

TEST(AllocatorSync, NearMissBelowTheThresholds) {
  report::Summary s = run_of(10);
  add_call(&s, "cudaFree", Category::kAllocation, 50, 0.2, 0.09);  // 0.9% of wall
  EXPECT_TRUE(fired(s, "allocator_sync").empty());
  report::Summary short_run = run_of(2);
  add_call(&short_run, "cudaFree", Category::kAllocation, 50, 0.05, 0.04);  // 2%, but 40 ms
  EXPECT_TRUE(fired(short_run, "allocator_sync").empty());
}

TEST(AllocatorSync, NearMissUnderTheVmmAllocator) {
  report::Summary s = steady_frees();
  s.allocator.push_back(report::AllocatorRow());
  EXPECT_TRUE(fired(s, "allocator_sync").empty());
}

// Point 5 of issue 28: allocator:vmm selected but off (a driver without
// VMM): the finding stays, its fix recommends nothing already in force.
TEST(AllocatorSync, NoFixInForceWhenTheVmmAllocatorIsOff) {
  for (bool pytorch : {false, true}) {
    report::Summary s = steady_frees();
    s.allocator_status.selected = "vmm";
    s.allocator_status.off.push_back({0, "the driver does not support virtual memory management on this device"});
    std::vector<report::Finding> out = fired(s, "allocator_sync", pytorch);
    ASSERT_EQ(1u, out.size());
    EXPECT_EQ(std::string::npos, out[0].fix.find("GPUSLACK_CONF=allocator:vmm")) << out[0].fix;
    EXPECT_EQ(std::string::npos, out[0].fix.find("expandable_segments")) << out[0].fix;
    EXPECT_NE(std::string::npos, out[0].fix.find("already selected but off (the driver does not support")) << out[0].fix;
    EXPECT_NE(std::string::npos, testing::evidence_of(out[0]).find("selected, off: the driver")) << out[0].fix;
  }
  // Selected and serving: no finding at all (as before).
  report::Summary served = steady_frees();
  served.allocator_status.selected = "vmm";
  served.allocator.push_back(report::AllocatorRow());
  EXPECT_TRUE(fired(served, "allocator_sync").empty());
  // Native: the fix recommends allocator:vmm.
  std::vector<report::Finding> native = fired(steady_frees(), "allocator_sync");
  ASSERT_EQ(1u, native.size());
  EXPECT_NE(std::string::npos, native[0].fix.find("allocator:vmm")) << native[0].fix;
}

report::AllocatorRow vmm_row(uint64_t peak_allocated, uint64_t peak_reserved, uint64_t retries, double stall_s) {
  report::AllocatorRow a;
  a.stats.peak_allocated = peak_allocated;
  a.stats.peak_reserved = peak_reserved;
  a.stats.oom_retries = retries;
  a.stats.stall_s = stall_s;
  a.stats.largest_free = 64 << 20;
  return a;
}

TEST(Fragmentation, FiresOnRetriesThatStalled) {
  report::Summary s = run_of(10);
  s.allocator.push_back(vmm_row(3ull << 30, 4ull << 30, 12, 0.5));
  add_site(&s, Category::kAllocation, "cudaMalloc", 0.5, {"grow+0x1 (/app/train)"});
  std::vector<report::Finding> f = fired(s, "fragmentation");
  ASSERT_EQ(1u, f.size());
  EXPECT_DOUBLE_EQ(0.5, f[0].cost_s);
  const std::string e = testing::evidence_of(f[0]);
  EXPECT_NE(std::string::npos, e.find("out-of-memory retries=12")) << e;
  EXPECT_NE(std::string::npos, e.find("largest free range=64.0 MiB")) << e;
  EXPECT_NE(std::string::npos, e.find("4.0 GiB / 3.0 GiB (1.3x)")) << e;
  ASSERT_EQ(1u, f[0].where.size());
}

TEST(Fragmentation, FiresOnReservedFarAboveAllocatedThatStalled) {
  report::Summary s = run_of(10);
  s.allocator.push_back(vmm_row(1ull << 30, 3ull << 30, 0, 0.3));
  EXPECT_EQ(1u, fired(s, "fragmentation").size());
}

TEST(Fragmentation, NearMissNoStall) {
  report::Summary s = run_of(10);
  s.allocator.push_back(vmm_row(1ull << 30, 3ull << 30, 40, 0.01));  // retries, but 10 ms of stall
  EXPECT_TRUE(fired(s, "fragmentation").empty());
}

TEST(Fragmentation, NearMissStallWithoutFragmentation) {
  report::Summary s = run_of(10);
  s.allocator.push_back(vmm_row(3ull << 30, 4ull << 30, 0, 1.0));  // tight but not fragmented
  EXPECT_TRUE(fired(s, "fragmentation").empty());
}

}  // namespace
}  // namespace findings
}  // namespace gpuslack

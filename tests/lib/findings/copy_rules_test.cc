// The copy rules (lib/findings/copy_rules.cc) over built summaries: each
// fires on its figures and not on a near miss.
#include <gtest/gtest.h>

#include "summaries.h"

namespace gpuslack {
namespace findings {
namespace {

using testing::add_call;
using testing::add_copy;
using testing::add_site;
using testing::fired;
using testing::run_of;

// 10 s; 200 pageable H2D copies blocked 0.8 s, 0.7 s of cudaMemcpyAsync in
// the middle of the run.
report::Summary pageable_loop() {
  report::Summary s = run_of(10);
  add_call(&s, "cudaMemcpyAsync", Category::kCopy, 200, 0.8, 0.7);
  add_copy(&s, CopyKind::kHostToDevice, HostMemory::kPageable, 200, 200ull << 20, 0.8);
  s.staging.present = true;
  s.staging.stats.enabled = true;
  s.staging.stats.h2d.seen = 200;
  report::PageableSiteRow site;
  site.api = "cudaMemcpyAsync";
  site.frames = {"load_batch(Batch&)+0x44 (/app/train)", "main+0x10 (/app/train)"};
  s.staging.sites.push_back(site);
  return s;
}

TEST(PageableCopies, FiresOnPageableCopiesInTheLoop) {
  std::vector<report::Finding> f = fired(pageable_loop(), "pageable_copies");
  ASSERT_EQ(1u, f.size());
  EXPECT_DOUBLE_EQ(0.8, f[0].cost_s);
  ASSERT_EQ(1u, f[0].where.size());
  EXPECT_EQ("load_batch(Batch&)+0x44 (/app/train)", f[0].where[0][0]);
  EXPECT_NE(std::string::npos, f[0].fix.find("cudaMallocHost"));
  EXPECT_EQ(std::string::npos, f[0].fix.find("stage_copies"));  // it was on
  EXPECT_NE(std::string::npos, testing::evidence_of(f[0]).find("pageable H2D copies=200, 200.0 MiB"));
}

TEST(PageableCopies, UnderPyTorchSaysPinMemoryAndNonBlocking) {
  std::vector<report::Finding> f = fired(pageable_loop(), "pageable_copies", /*pytorch=*/true);
  ASSERT_EQ(1u, f.size());
  EXPECT_NE(std::string::npos, f[0].fix.find("pin_memory=True"));
  EXPECT_NE(std::string::npos, f[0].fix.find("non_blocking=True"));
}

TEST(PageableCopies, SaysStageCopiesWhereItWasOff) {
  report::Summary s = pageable_loop();
  s.staging.stats.enabled = false;
  std::vector<report::Finding> f = fired(s, "pageable_copies");
  ASSERT_EQ(1u, f.size());
  EXPECT_NE(std::string::npos, f[0].fix.find("stage_copies:true"));
}

TEST(PageableCopies, NearMissOneCopyAtStartUp) {
  // As much time, all of it in one copy before the loop.
  report::Summary s = run_of(10);
  add_call(&s, "cudaMemcpy", Category::kCopy, 1, 0.8, 0);
  add_copy(&s, CopyKind::kHostToDevice, HostMemory::kPageable, 1, 1ull << 30, 0.8);
  EXPECT_TRUE(fired(s, "pageable_copies").empty());
}

TEST(PageableCopies, NearMissMemsetsInTheLoopAreNotCopies) {
  // The copy blocked once at start-up; what blocked in the loop was memsets.
  report::Summary s = run_of(10);
  add_call(&s, "cudaMemcpy", Category::kCopy, 1, 0.8, 0);
  add_call(&s, "cudaMemsetAsync", Category::kCopy, 500, 0.8, 0.7);
  add_copy(&s, CopyKind::kHostToDevice, HostMemory::kPageable, 1, 1ull << 30, 0.8);
  EXPECT_TRUE(fired(s, "pageable_copies").empty());
  // The driver's copies count as the runtime's do.
  add_call(&s, "cuMemcpyHtoD_v2", Category::kCopy, 100, 0.3, 0.2);
  EXPECT_EQ(1u, fired(s, "pageable_copies").size());
}

TEST(PageableCopies, NearMissPinnedCopies) {
  report::Summary s = run_of(10);
  add_call(&s, "cudaMemcpyAsync", Category::kCopy, 200, 0.8, 0.7);
  add_copy(&s, CopyKind::kHostToDevice, HostMemory::kPinned, 200, 200ull << 20, 0.8);
  EXPECT_TRUE(fired(s, "pageable_copies").empty());
}

// 10 s; 300 .item()-like reads: a D2H copy and a stream sync each.
report::Summary item_loop() {
  report::Summary s = run_of(10);
  add_call(&s, "cudaMemcpyAsync", Category::kCopy, 300, 0.05, 0.04);
  add_copy(&s, CopyKind::kDeviceToHost, HostMemory::kPageable, 300, 1200, 0.05);
  add_call(&s, "cudaStreamSynchronize", Category::kSync, 300, 1.5, 1.2);
  add_site(&s, Category::kSync, "cudaStreamSynchronize", 1.5, {"read_loss()+0x9 (/app/train)", "main+0x10 (/app/train)"});
  add_site(&s, Category::kCopy, "cudaMemcpyAsync", 0.05, {"read_loss()+0x5 (/app/train)"});
  return s;
}

// The GPU timeline measured: the GPU idled `in_waits` in the
// synchronizations and `host_gaps` while the host worked between steps.
report::Summary with_gpu_idle(report::Summary s, double in_waits, double host_gaps) {
  s.gpu_timeline.status = timeline::Status::kMeasured;
  report::GpuDeviceRow d;
  d.wall_s = s.wall_s;
  d.idle_by[static_cast<int>(timeline::Idle::kSync)] = in_waits;
  d.idle_by[static_cast<int>(timeline::Idle::kHostBound)] = host_gaps;
  d.idle_s = in_waits + host_gaps;
  d.busy_s = d.wall_s - d.idle_s;
  s.gpu_timeline.devices.push_back(d);
  return s;
}

TEST(SyncCopies, FiresOnReadsThatWaitForTheGpuEveryStep) {
  // The GPU idled 0.1 s in the waits and 0.95 s in the host's gaps after
  // them (under host_bound's 10% of the window, so that rule stays quiet).
  std::vector<report::Finding> f = fired(with_gpu_idle(item_loop(), 0.1, 0.95), "sync_copies");
  ASSERT_EQ(1u, f.size());
  EXPECT_DOUBLE_EQ(1.05, f[0].cost_s);
  EXPECT_DOUBLE_EQ(1.05, f[0].gpu_idle_s);
  ASSERT_EQ(2u, f[0].where.size());
  EXPECT_EQ("read_loss()+0x9 (/app/train)", f[0].where[0][0]);
  EXPECT_NE(std::string::npos, f[0].fix.find(".item()"));
  EXPECT_NE(std::string::npos, testing::evidence_of(f[0]).find("cudaStreamSynchronize calls=300"));
}

// See Note [What a wait for the GPU costs]: the same reads behind long kernels
// with nothing else to do; the host waited 1.55 s, the GPU never idled.
TEST(SyncCopies, NearMissTheGpuStayedBusyThroughTheWaits) {
  EXPECT_TRUE(fired(with_gpu_idle(item_loop(), 0.001, 0.01), "sync_copies").empty());
}

// A loaded host's slower returns: 0.9 s of idle over 10 s, under
// kMinIdleShare.
TEST(SyncCopies, NearMissALittleIdleInEveryStep) {
  EXPECT_TRUE(fired(with_gpu_idle(item_loop(), 0.1, 0.8), "sync_copies").empty());
}

// Without the timeline the cost is unknown: no finding.
TEST(SyncCopies, NearMissNoTimelineNoCost) { EXPECT_TRUE(fired(item_loop(), "sync_copies").empty()); }

TEST(SyncCopies, NearMissOneSyncAtTheEnd) {
  report::Summary s = run_of(10);
  add_call(&s, "cudaDeviceSynchronize", Category::kSync, 1, 2.0, 0);
  add_copy(&s, CopyKind::kDeviceToHost, HostMemory::kPageable, 1, 4 << 20, 0.01);
  add_call(&s, "cudaMemcpy", Category::kCopy, 1, 0.01, 0);
  EXPECT_TRUE(fired(s, "sync_copies").empty());
}

TEST(SyncCopies, NearMissCopyTimeThatIsNotDeviceToHost) {
  // The loop's copy calls blocked in steady state, but they were H2D.
  report::Summary s = pageable_loop();
  EXPECT_TRUE(fired(s, "sync_copies").empty());
}

TEST(Evaluate, RanksMostCostlyFirst) {
  report::Summary s = with_gpu_idle(item_loop(), 0.1, 0.95);
  add_call(&s, "cudaFree", Category::kAllocation, 100, 3.0, 2.0);
  std::vector<report::Finding> all = evaluate(s, Context());
  ASSERT_EQ(2u, all.size());
  EXPECT_EQ("allocator_sync", all[0].rule);
  EXPECT_EQ("sync_copies", all[1].rule);
}

}  // namespace
}  // namespace findings
}  // namespace gpuslack

// TimelineAnalysis on hand-made timelines: the union and its priority, each
// cause of idle, the launch-bound edge, call sites, late records, several
// devices, empty windows (timeline/timeline_analysis.h, device_analysis.h).
#include "timeline/timeline_analysis.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "analysis_fixture.h"

namespace gpuslack {
namespace timeline {
namespace {

using namespace testing;  // NOLINT: the fixture's helpers

TEST(TimelineAnalysis, UnionCountsOverlapsOnceByPriority) {
  TimelineAnalysis a(small_options());
  a.add(gpu(0, 100, Busy::kCompute));
  a.add(gpu(20, 60, Busy::kCompute));          // inside the first: nothing new
  a.add(gpu(50, 150, Busy::kCopies));          // 100..150 copies
  a.add(gpu(140, 200, Busy::kMemsets));        // 150..180 memsets
  a.add(gpu(180, 220, Busy::kCommunication));  // 180..220 communication, over the memset
  a.add(gpu(300, 400, Busy::kMemsets));
  a.add(gpu(310, 320, Busy::kCopies));         // copies over a memset
  a.commit(1000);
  auto out = fill(a, 1000);
  ASSERT_EQ(1u, out.size());
  const DeviceTimeline& d = out[0];
  EXPECT_DOUBLE_EQ(1000, ticks(d.wall_s));
  EXPECT_DOUBLE_EQ(100, busy_ticks(d, Busy::kCompute));
  EXPECT_DOUBLE_EQ(60, busy_ticks(d, Busy::kCopies));
  EXPECT_DOUBLE_EQ(30 + 90, busy_ticks(d, Busy::kMemsets));
  EXPECT_DOUBLE_EQ(40, busy_ticks(d, Busy::kCommunication));
  EXPECT_DOUBLE_EQ(320, ticks(d.busy_s));
  EXPECT_DOUBLE_EQ(680, ticks(d.idle_s));
  // No blocked call: the gaps (220..300: 80, 400..1000: 600) are host-bound.
  EXPECT_DOUBLE_EQ(680, idle_ticks(d, Idle::kHostBound));
}

TEST(TimelineAnalysis, EachCauseOfIdle) {
  // Busy 0..100, 200..300, ..., 1200..1300, then 1310..1400. Gaps:
  // 100..200 allocation, 300..400 copies, 500..600 collectives, 700..800
  // sync, 900..1000 other (each call blocked over its whole gap),
  // 1100..1200 host-bound, 1300..1310 launch-bound.
  const ApiCall* calls[] = {&kFree, &kMemcpy, &kAllReduce, &kSync, &kQuery};
  TimelineAnalysis b(small_options());
  for (int i = 0; i <= 12; i += 2) b.add(gpu(i * 100, i * 100 + 100));
  for (int i = 0; i < 5; ++i) b.add(host(90 + 200 * i, 210 + 200 * i, *calls[i], i + 1));
  b.add(gpu(1310, 1400));
  b.commit(1400, true);
  auto out = fill(b, 1400);
  const DeviceTimeline& d = out[0];
  EXPECT_DOUBLE_EQ(100, idle_ticks(d, Idle::kAllocation));
  EXPECT_DOUBLE_EQ(100, idle_ticks(d, Idle::kCopies));
  EXPECT_DOUBLE_EQ(100, idle_ticks(d, Idle::kCollectives));
  EXPECT_DOUBLE_EQ(100, idle_ticks(d, Idle::kSync));
  EXPECT_DOUBLE_EQ(100, idle_ticks(d, Idle::kOther));
  EXPECT_DOUBLE_EQ(10, idle_ticks(d, Idle::kLaunchBound));
  EXPECT_DOUBLE_EQ(100, idle_ticks(d, Idle::kHostBound));  // 1100..1200
  EXPECT_DOUBLE_EQ(1400, ticks(d.wall_s));
}

TEST(TimelineAnalysis, PriorityWhenThreadsOverlap) {
  TimelineAnalysis a(small_options());
  a.add(gpu(0, 10));
  a.add(gpu(510, 520));
  // Gap 10..510 (500 ticks: not launch-bound).
  a.add(host(50, 450, kQuery, 3));
  a.add(host(100, 400, kSync, 1));
  a.add(host(200, 300, kFree, 2));
  a.add(host(250, 350, kAllReduce, 4));
  a.add(host(260, 280, kMemcpy, 5));  // inside the free: allocation wins
  a.commit(520);
  const DeviceTimeline d = fill(a, 520)[0];
  EXPECT_DOUBLE_EQ(40 + 60, idle_ticks(d, Idle::kHostBound));  // 10..50, 450..510
  EXPECT_DOUBLE_EQ(50 + 50, idle_ticks(d, Idle::kOther));      // 50..100, 400..450
  EXPECT_DOUBLE_EQ(100 + 50, idle_ticks(d, Idle::kSync));      // 100..200, 350..400
  EXPECT_DOUBLE_EQ(100, idle_ticks(d, Idle::kAllocation));     // 200..300
  EXPECT_DOUBLE_EQ(50, idle_ticks(d, Idle::kCollectives));     // 300..350
  EXPECT_DOUBLE_EQ(0, idle_ticks(d, Idle::kCopies));
}

TEST(TimelineAnalysis, SameCategoryGoesToTheEarliestCall) {
  TimelineAnalysis a(small_options());
  a.add(gpu(0, 10));
  a.add(gpu(410, 420));
  a.add(host(150, 300, kMalloc, 2, 22));
  a.add(host(100, 200, kFree, 1, 11));
  a.commit(420);
  const DeviceTimeline d = fill(a, 420)[0];
  EXPECT_DOUBLE_EQ(200, idle_ticks(d, Idle::kAllocation));
  ASSERT_EQ(2u, d.idle_sites.size());
  EXPECT_EQ(&kFree, d.idle_sites[0].call);  // 100..200, then the malloc 200..300
  EXPECT_DOUBLE_EQ(100, ticks(d.idle_sites[0].idle_s));
  EXPECT_EQ(&kMalloc, d.idle_sites[1].call);
  EXPECT_DOUBLE_EQ(100, ticks(d.idle_sites[1].idle_s));
}

TEST(TimelineAnalysis, LaunchBoundThresholdIsInclusive) {
  TimelineAnalysis a(small_options());
  a.add(gpu(0, 100));
  a.add(gpu(120, 200));  // gap 20: launch-bound
  a.add(gpu(221, 300));  // gap 21: host-bound
  a.commit(300);
  DeviceTimeline d = fill(a, 300)[0];
  EXPECT_DOUBLE_EQ(20, idle_ticks(d, Idle::kLaunchBound));
  EXPECT_DOUBLE_EQ(21, idle_ticks(d, Idle::kHostBound));
  // A short gap open at the watermark waits for its end: 300..315 then busy.
  a.commit(310);
  a.add(gpu(315, 400));
  a.commit(400);
  d = fill(a, 400)[0];
  EXPECT_DOUBLE_EQ(35, idle_ticks(d, Idle::kLaunchBound));
  // A gap already longer than the threshold at the watermark is host-bound,
  // all of it, however the commits cut it.
  a.commit(410);
  a.commit(430);
  a.add(gpu(440, 500));
  a.commit(500);
  d = fill(a, 500)[0];
  EXPECT_DOUBLE_EQ(35, idle_ticks(d, Idle::kLaunchBound));
  EXPECT_DOUBLE_EQ(21 + 40, idle_ticks(d, Idle::kHostBound));
  // Partly blocked, partly not: the unblocked part of a short gap is
  // launch-bound.
  a.add(host(505, 510, kSync));
  a.add(gpu(515, 600));
  a.commit(600);
  d = fill(a, 600)[0];
  EXPECT_DOUBLE_EQ(35 + 10, idle_ticks(d, Idle::kLaunchBound));
  EXPECT_DOUBLE_EQ(5, idle_ticks(d, Idle::kSync));
}

bool fake_frames(uint64_t key, std::vector<void*>* frames) {
  if (key == 99) return false;  // unknown
  frames->assign({reinterpret_cast<void*>(key), reinterpret_cast<void*>(key + 1)});
  return true;
}

TEST(TimelineAnalysis, IdleSitesAreSummedPerCallAndSite) {
  TimelineAnalysis a(small_options());
  a.add(gpu(0, 10));
  a.add(gpu(1000, 1010));
  a.add(host(100, 150, kFree, 1, 7));
  a.add(host(200, 260, kFree, 1, 7));   // same site: 110 in all
  a.add(host(300, 400, kFree, 2, 8));   // another site of the same call
  a.add(host(500, 530, kFree, 1, 0));   // no site captured
  a.add(host(600, 640, kMemcpy, 1, 99));  // a key the ledger does not know
  a.commit(1010);
  const DeviceTimeline d = fill(a, 1010, fake_frames)[0];
  ASSERT_EQ(4u, d.idle_sites.size());
  EXPECT_EQ(&kFree, d.idle_sites[0].call);
  EXPECT_DOUBLE_EQ(110, ticks(d.idle_sites[0].idle_s));
  EXPECT_EQ((std::vector<void*>{reinterpret_cast<void*>(7), reinterpret_cast<void*>(8)}), d.idle_sites[0].frames);
  EXPECT_DOUBLE_EQ(100, ticks(d.idle_sites[1].idle_s));
  EXPECT_EQ(reinterpret_cast<void*>(8), d.idle_sites[1].frames.at(0));
  EXPECT_EQ(&kMemcpy, d.idle_sites[2].call);
  EXPECT_TRUE(d.idle_sites[2].frames.empty());
  EXPECT_DOUBLE_EQ(40, ticks(d.idle_sites[2].idle_s));
  EXPECT_DOUBLE_EQ(30, ticks(d.idle_sites[3].idle_s));
  EXPECT_TRUE(d.idle_sites[3].frames.empty());
  // Without a frames function: sites, no frames.
  EXPECT_TRUE(fill(a, 1010)[0].idle_sites[0].frames.empty());
}

TEST(TimelineAnalysis, ALateRecordIsClippedToThePositionAndCounted) {
  TimelineAnalysis a(small_options());
  a.add(gpu(0, 100));
  a.commit(500);  // 100..500 host-bound, final
  // Arrives after the commit: 400..600 (a kernel in flight at the flush).
  a.add(gpu(400, 600));
  a.add(gpu(450, 480));  // entirely before the position: dropped
  EXPECT_EQ(2u, a.late_records());
  EXPECT_EQ(100u + 30u, a.late_ticks());
  DeviceTimeline d = fill(a, 700)[0];  // provisional: 500..600 busy
  EXPECT_DOUBLE_EQ(200, ticks(d.busy_s));
  EXPECT_DOUBLE_EQ(400 + 100, idle_ticks(d, Idle::kHostBound));
  a.commit(700, true);
  const DeviceTimeline c = fill(a, 700)[0];
  EXPECT_DOUBLE_EQ(d.busy_s, c.busy_s);
  EXPECT_DOUBLE_EQ(d.idle_s, c.idle_s);
}

TEST(TimelineAnalysis, OrderOfArrivalDoesNotMatter) {
  // Sorted, in a few sorted runs (merged), shuffled (many runs: sorted
  // outright): the same figures.
  std::vector<GpuActivity> records;
  for (uint64_t i = 0; i < 3000; ++i) records.push_back(gpu(i * 10 + (i * 7919) % 13, i * 10 + 5 + (i * 104729) % 31,
                                                           static_cast<Busy>(i % kBusyCount)));
  std::vector<std::vector<GpuActivity>> orders(3, records);
  std::stable_partition(orders[1].begin(), orders[1].end(), [](const GpuActivity& g) { return g.end_ticks % 4 == 0; });
  std::mt19937 rng(7);
  std::shuffle(orders[2].begin(), orders[2].end(), rng);
  std::vector<DeviceTimeline> got;
  for (const auto& order : orders) {
    TimelineAnalysis a(small_options());
    for (const GpuActivity& g : order) a.add(g);
    a.commit(15000);
    a.commit(40000, true);
    got.push_back(fill(a, 40000)[0]);
  }
  for (int k = 0; k < kBusyCount; ++k) {
    EXPECT_EQ(got[0].busy_by[k], got[1].busy_by[k]);
    EXPECT_EQ(got[0].busy_by[k], got[2].busy_by[k]);
  }
  for (int k = 0; k < kIdleCount; ++k) {
    EXPECT_EQ(got[0].idle_by[k], got[1].idle_by[k]);
    EXPECT_EQ(got[0].idle_by[k], got[2].idle_by[k]);
  }
  EXPECT_GT(got[0].busy_s, 0);
}

TEST(TimelineAnalysis, FillIsProvisionalAndLeavesTheStateAlone) {
  TimelineAnalysis a(small_options());
  a.add(gpu(0, 100));
  a.add(gpu(300, 400));
  a.add(host(100, 200, kFree));
  DeviceTimeline p = fill(a, 350)[0];  // nothing committed yet
  EXPECT_DOUBLE_EQ(350, ticks(p.wall_s));
  EXPECT_DOUBLE_EQ(150, ticks(p.busy_s));
  EXPECT_DOUBLE_EQ(100, idle_ticks(p, Idle::kAllocation));
  EXPECT_DOUBLE_EQ(100, idle_ticks(p, Idle::kHostBound));
  EXPECT_EQ(2u, a.pending_records());
  EXPECT_EQ(1u, a.pending_host_intervals());
  a.commit(1000);
  EXPECT_EQ(0u, a.pending_records());
  EXPECT_EQ(0u, a.pending_host_intervals());  // ended before every position
  DeviceTimeline d = fill(a, 1000)[0];
  EXPECT_DOUBLE_EQ(200, ticks(d.busy_s));
  EXPECT_DOUBLE_EQ(100, idle_ticks(d, Idle::kAllocation));
  EXPECT_DOUBLE_EQ(700, idle_ticks(d, Idle::kHostBound));
  // A host interval whose time is already final is dropped and counted.
  a.add(host(500, 600, kFree));
  EXPECT_EQ(1u, a.host_intervals_late());
}

TEST(TimelineAnalysis, HostIntervalsSpanningTheWatermarkAreKept) {
  TimelineAnalysis a(small_options());
  a.add(gpu(0, 100));
  a.add(host(150, 700, kSync));
  a.commit(400);
  EXPECT_EQ(1u, a.pending_host_intervals());
  a.add(gpu(800, 900));
  a.commit(900);
  const DeviceTimeline d = fill(a, 900)[0];
  EXPECT_DOUBLE_EQ(550, idle_ticks(d, Idle::kSync));
  EXPECT_DOUBLE_EQ(50 + 100, idle_ticks(d, Idle::kHostBound));
  EXPECT_EQ(0u, a.pending_host_intervals());
}

TEST(TimelineAnalysis, ShortKernelsAreTheirUnion) {
  TimelineAnalysis a(small_options());
  a.add(gpu(0, 5, Busy::kCompute, "a"));
  a.add(gpu(3, 8, Busy::kCompute, "a"));          // overlaps: union 0..8
  a.add(gpu(20, 29, Busy::kCommunication, "b"));  // 9 < 10: short
  a.add(gpu(40, 50, Busy::kCompute, "c"));        // 10: not short
  a.add(gpu(60, 65, Busy::kCopies));              // not a kernel
  a.commit(100);
  const DeviceTimeline d = fill(a, 100)[0];
  EXPECT_DOUBLE_EQ(8 + 9, ticks(d.short_kernel_busy_s));
}

TEST(TimelineAnalysis, EachDeviceHasItsOwnAnalysisAndSharesTheHost) {
  TimelineAnalysis a(small_options());
  a.add(gpu(0, 100, Busy::kCompute, "k", 0));
  a.add(gpu(0, 300, Busy::kCompute, "k", 1));
  a.add(host(100, 200, kFree));
  a.set_launches(7);
  a.commit(400);
  // Device 3 is first seen after the commit: its window starts there.
  a.add(gpu(450, 500, Busy::kCopies, nullptr, 3));
  a.add(gpu(350, 420, Busy::kCopies, nullptr, 3));  // before its window: late
  a.add(host(500, 600, kMemcpy));
  const auto out = fill(a, 600);
  ASSERT_EQ(3u, out.size());
  EXPECT_EQ(0, out[0].device);
  EXPECT_EQ(1, out[1].device);
  EXPECT_EQ(3, out[2].device);
  EXPECT_DOUBLE_EQ(100, idle_ticks(out[0], Idle::kAllocation));
  EXPECT_DOUBLE_EQ(0, idle_ticks(out[1], Idle::kAllocation));  // busy meanwhile
  EXPECT_DOUBLE_EQ(100, idle_ticks(out[0], Idle::kCopies));
  EXPECT_DOUBLE_EQ(100, idle_ticks(out[1], Idle::kCopies));
  EXPECT_DOUBLE_EQ(100, idle_ticks(out[2], Idle::kCopies));
  EXPECT_DOUBLE_EQ(600, ticks(out[0].wall_s));
  EXPECT_DOUBLE_EQ(200, ticks(out[2].wall_s));
  EXPECT_DOUBLE_EQ(20 + 50, ticks(out[2].busy_s));
  EXPECT_EQ(7u, out[1].launches);
  EXPECT_EQ(1u, a.late_records());
  EXPECT_EQ(3u, a.devices());
}

TEST(TimelineAnalysis, BadInputIsCountedNotAnalysed) {
  TimelineAnalysis a(small_options());
  a.add(gpu(100, 50));                                   // ends before it starts
  a.add(gpu(0, 10, Busy::kCompute, nullptr, -1));        // no such device
  a.add(gpu(0, 10, Busy::kCompute, nullptr, TimelineAnalysis::kMaxDevices));
  ledger::HostInterval h = host(0, 10, kFree);
  h.call = nullptr;
  a.add(h);
  EXPECT_EQ(3u, a.bad_records());
  EXPECT_EQ(3u, a.records());
  EXPECT_EQ(1u, a.host_intervals_bad());
  EXPECT_EQ(0u, a.devices());
}

TEST(TimelineAnalysis, EmptyWindows) {
  TimelineAnalysis none(small_options(100));
  EXPECT_TRUE(fill(none, 500).empty());  // no device seen
  TimelineAnalysis a(small_options(100));
  a.ensure_device(0);
  DeviceTimeline d = fill(a, 100)[0];  // a window of zero
  EXPECT_EQ(0, d.wall_s);
  EXPECT_EQ(0, d.busy_s);
  EXPECT_EQ(0, d.idle_s);
  EXPECT_EQ(0u, d.steps.count);
  EXPECT_TRUE(d.top_kernels.empty());
  d = fill(a, 600)[0];  // nothing ran: all host-bound
  EXPECT_DOUBLE_EQ(500, ticks(d.wall_s));
  EXPECT_DOUBLE_EQ(500, idle_ticks(d, Idle::kHostBound));
  a.commit(600, true);
  a.commit(550);  // behind the position: nothing to do
  d = fill(a, 600)[0];
  EXPECT_DOUBLE_EQ(500, idle_ticks(d, Idle::kHostBound));
}

}  // namespace
}  // namespace timeline
}  // namespace gpuslack

// TimelineAnalysis against a reference that looks at every tick: random
// records (all kinds, concurrent), random blocked calls on several threads,
// random step marks; fed in shuffled order and committed at random
// watermarks (each one passed once every record before it has arrived),
// with provisional fills in between. The figures must equal the
// reference's exactly, whatever the commits.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "analysis_fixture.h"
#include "timeline/timeline_analysis.h"

namespace gpuslack {
namespace timeline {
namespace {

using namespace testing;  // NOLINT: the fixture's helpers

struct Expected {
  std::array<uint64_t, kBusyCount> busy{};
  std::array<uint64_t, kIdleCount> idle{};
  uint64_t short_busy = 0;
  std::vector<uint64_t> step_idle;  // per step between marks
};

bool outranks(const ledger::HostInterval& a, const ledger::HostInterval& b) {
  if (a.call->category != b.call->category) return a.call->category < b.call->category;
  if (a.start_ticks != b.start_ticks) return a.start_ticks < b.start_ticks;
  return a.tid < b.tid;
}

// Every tick of [start, end): what covers it, and each idle run's cause.
Expected reference(const std::vector<GpuActivity>& gpus, const std::vector<ledger::HostInterval>& hosts,
                   const std::vector<uint64_t>& marks, uint64_t start, uint64_t end, uint64_t launch_gap,
                   uint64_t short_ticks) {
  Expected x;
  const size_t n = end - start;
  std::vector<int> kind(n, -1);
  std::vector<bool> short_cover(n, false);
  for (const GpuActivity& g : gpus) {
    const bool is_short = DeviceAnalysis::is_kernel(g.kind) && g.end_ticks - g.start_ticks < short_ticks;
    for (uint64_t t = std::max(g.start_ticks, start); t < std::min(g.end_ticks, end); ++t) {
      int& k = kind[t - start];
      if (k < 0 || static_cast<int>(g.kind) < k) k = static_cast<int>(g.kind);
      if (is_short) short_cover[t - start] = true;
    }
  }
  std::vector<int> cause(n, -1);
  for (size_t i = 0; i < n;) {
    if (kind[i] >= 0) {
      ++x.busy[kind[i]];
      if (short_cover[i]) ++x.short_busy;
      ++i;
      continue;
    }
    size_t j = i;
    while (j < n && kind[j] < 0) ++j;
    for (size_t t = i; t < j; ++t) {
      const ledger::HostInterval* best = nullptr;
      for (const auto& h : hosts) {
        if (h.start_ticks <= start + t && start + t < h.end_ticks && (best == nullptr || outranks(h, *best))) best = &h;
      }
      Idle c = best ? idle_cause_of(best->call->category) : (j - i <= launch_gap ? Idle::kLaunchBound : Idle::kHostBound);
      ++x.idle[static_cast<int>(c)];
      cause[t] = 1;
    }
    i = j;
  }
  for (size_t m = 0; m + 1 < marks.size(); ++m) {
    uint64_t idle = 0;
    for (uint64_t t = marks[m]; t < marks[m + 1]; ++t) idle += cause[t - start] > 0 ? 1 : 0;
    x.step_idle.push_back(idle);
  }
  return x;
}

void run_one(uint32_t seed, bool as_streams) {
  SCOPED_TRACE(seed);
  std::mt19937 rng(seed);
  auto uniform = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
  const uint64_t start = 50, end = 3000 + uniform(0, 1000);
  AnalysisOptions o = small_options(start);
  o.launch_bound_gap_ticks = uniform(0, 40);
  o.worst_steps = 1000;  // every step, to compare them all

  std::vector<GpuActivity> gpus;
  uint64_t t = 0;
  while (t < end) {  // a few streams' worth of work with gaps
    const uint64_t s = t + uniform(0, 60);
    const uint64_t len = uniform(1, 80);
    gpus.push_back(gpu(s, s + len, static_cast<Busy>(uniform(0, kBusyCount - 1))));
    if (uniform(0, 3) == 0) gpus.push_back(gpu(s + uniform(0, len), s + len + uniform(0, 50),
                                               static_cast<Busy>(uniform(0, kBusyCount - 1))));
    t = s + (uniform(0, 2) == 0 ? len : uniform(0, len));
  }
  const ApiCall* calls[] = {&kFree, &kMemcpy, &kAllReduce, &kSync, &kQuery, &kMalloc};
  std::vector<ledger::HostInterval> hosts;
  for (int tid = 1; tid <= 3; ++tid) {
    uint64_t h = uniform(0, 200);
    while (h < end) {
      const uint64_t len = uniform(1, 150);
      hosts.push_back(host(h, h + len, *calls[uniform(0, 5)], tid, uniform(0, 3)));
      h += len + uniform(0, 300);
    }
  }
  std::vector<uint64_t> marks;
  for (uint64_t m = start + uniform(0, 100); m < end; m += uniform(0, 400)) marks.push_back(m);

  // Watermarks: random, increasing; before each, every record starting
  // before it is added, in shuffled order.
  std::vector<uint64_t> watermarks;
  for (uint64_t w = start + uniform(0, 300); w < end; w += uniform(1, 500)) watermarks.push_back(w);
  std::vector<GpuActivity> order = gpus;
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.start_ticks < b.start_ticks; });

  TimelineAnalysis a(o);
  a.ensure_device(0);
  for (const auto& h : hosts) a.add(h);
  for (uint64_t m : marks) a.add_step(m);
  size_t next = 0;
  for (uint64_t w : watermarks) {
    size_t last = next;
    while (last < order.size() && order[last].start_ticks < w) ++last;
    const auto first = order.begin() + static_cast<std::ptrdiff_t>(next);
    const auto end_of_block = order.begin() + static_cast<std::ptrdiff_t>(last);
    if (as_streams) {
      // Like CUPTI's buffers: a few "streams", each delivered in order, one
      // after another (sorted runs that overlap in time).
      std::stable_partition(first, end_of_block, [&](const GpuActivity& g) { return g.end_ticks % 3 == 0; });
      std::stable_partition(first, end_of_block, [&](const GpuActivity& g) { return g.end_ticks % 3 != 2; });
    } else {
      std::shuffle(first, end_of_block, rng);
    }
    for (; next < last; ++next) a.add(order[next]);
    a.commit(w);
    if (uniform(0, 2) == 0) fill(a, end);  // provisional: must not disturb
  }
  for (; next < order.size(); ++next) a.add(order[next]);
  std::vector<uint64_t> in_window;
  for (uint64_t m : marks) in_window.push_back(m);
  const Expected x = reference(gpus, hosts, in_window, start, end, o.launch_bound_gap_ticks, o.short_kernel_ticks);

  const DeviceTimeline provisional = fill(a, end)[0];
  a.commit(end, true);
  const DeviceTimeline d = fill(a, end)[0];
  for (const DeviceTimeline* p : {&provisional, &d}) {
    EXPECT_DOUBLE_EQ(static_cast<double>(end - start), ticks(p->wall_s));
    for (int k = 0; k < kBusyCount; ++k) EXPECT_NEAR(x.busy[k], ticks(p->busy_by[k]), 1e-6) << "busy " << k;
    for (int k = 0; k < kIdleCount; ++k) EXPECT_NEAR(x.idle[k], ticks(p->idle_by[k]), 1e-6) << "idle " << k;
    EXPECT_NEAR(x.short_busy, ticks(p->short_kernel_busy_s), 1e-6);
    EXPECT_TRUE(p->steps.from_marks);
    EXPECT_EQ(x.step_idle.size(), p->steps.count);
    for (const StepRow& row : p->steps.worst) {
      ASSERT_LT(row.index, x.step_idle.size());
      EXPECT_NEAR(x.step_idle[row.index], ticks(row.idle_s), 1e-6) << "step " << row.index;
      EXPECT_NEAR(marks[row.index + 1] - marks[row.index], ticks(row.wall_s), 1e-6);
    }
  }
  // Late: only the records that began before the window (clipped to it).
  size_t before_window = 0;
  for (const GpuActivity& g : gpus) before_window += g.start_ticks < start ? 1 : 0;
  EXPECT_EQ(before_window, a.late_records());
  // Site totals add up to the blocked causes.
  double sites = 0;
  for (const IdleSite& s : d.idle_sites) sites += s.idle_s;
  double blocked = 0;
  for (Idle i : {Idle::kAllocation, Idle::kCopies, Idle::kCollectives, Idle::kSync, Idle::kOther})
    blocked += d.idle_by[static_cast<int>(i)];
  EXPECT_NEAR(blocked, sites, 1e-12);
}

TEST(TimelineAnalysisReference, RandomTimelinesInAnyOrderAndCommits) {
  for (uint32_t seed = 1; seed <= 200; ++seed) run_one(seed, /*as_streams=*/false);
}

TEST(TimelineAnalysisReference, RandomTimelinesDeliveredAsSortedRuns) {
  for (uint32_t seed = 1; seed <= 200; ++seed) run_one(seed, /*as_streams=*/true);
}

}  // namespace
}  // namespace timeline
}  // namespace gpuslack

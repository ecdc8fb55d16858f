// Host activity (ledger/host_activity.h): the threshold, per-thread rings
// drained while their writers write (nothing torn, nothing lost unseen: every
// interval is either drained or counted as dropped), overflow, rings of
// exited threads drained once more and reused, steps, launch counts, and
// call-site keys. The TSan build runs these too.
#include "ledger/host_activity.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include "ledger/ledger.h"

namespace gpuslack {
namespace ledger {
namespace {

// Ids far from the ones other tests in this binary use.
const ApiCall kBlocked{104, "testBlocked", Category::kAllocation};
const ApiCall kOther{105, "testOther", Category::kSync};

constexpr uint64_t kNever = UINT64_MAX;
constexpr uint64_t kRing = 4096;  // host_activity.cc's kRingSlots

int my_tid() { return static_cast<int>(syscall(SYS_gettid)); }

// Every test starts with nothing pending and the threshold at "never".
class HostActivity : public ::testing::Test {
 protected:
  void SetUp() override {
    set_interval_threshold(kNever);
    std::vector<HostInterval> drop;
    drain_intervals(&drop);
    std::vector<uint64_t> steps;
    drain_steps(&steps);
  }
  void TearDown() override { set_interval_threshold(kNever); }
};

TEST_F(HostActivity, NothingIsWrittenWhileTheThresholdIsNever) {
  for (uint64_t i = 0; i < 10000; ++i) record_blocked(kBlocked, i, i + 1000000000, 7);
  std::vector<HostInterval> out;
  EXPECT_EQ(0u, drain_intervals(&out));
  EXPECT_TRUE(out.empty());
}

TEST_F(HostActivity, ThresholdZeroWritesEveryCallWithItsFields) {
  set_interval_threshold(0);
  record_blocked(kBlocked, 100, 100, 0);  // even an empty one
  record_blocked(kOther, 200, 250, 42);
  std::vector<HostInterval> out;
  EXPECT_EQ(0u, drain_intervals(&out));
  ASSERT_EQ(2u, out.size());
  EXPECT_EQ(100u, out[0].start_ticks);
  EXPECT_EQ(100u, out[0].end_ticks);
  EXPECT_EQ(&kBlocked, out[0].call);
  EXPECT_EQ(0u, out[0].site_key);
  EXPECT_EQ(my_tid(), out[0].tid);
  EXPECT_EQ(200u, out[1].start_ticks);
  EXPECT_EQ(250u, out[1].end_ticks);
  EXPECT_EQ(&kOther, out[1].call);
  EXPECT_EQ(42u, out[1].site_key);
  // A drain takes what was written since the previous one only.
  out.clear();
  EXPECT_EQ(0u, drain_intervals(&out));
  EXPECT_TRUE(out.empty());
}

TEST_F(HostActivity, OnlyCallsThatReachTheThresholdAreWritten) {
  set_interval_threshold(100);
  record_blocked(kBlocked, 0, 99, 0);
  record_blocked(kBlocked, 1000, 1100, 0);
  record_blocked(kBlocked, 2000, 2500, 0);
  std::vector<HostInterval> out;
  drain_intervals(&out);
  ASSERT_EQ(2u, out.size());
  EXPECT_EQ(1000u, out[0].start_ticks);
  EXPECT_EQ(2000u, out[1].start_ticks);
}

TEST_F(HostActivity, AFullRingDropsItsOldestAndCountsThem) {
  set_interval_threshold(0);
  const uint64_t n = kRing + 100;
  for (uint64_t i = 0; i < n; ++i) record_blocked(kBlocked, i, i + 1, 0);
  std::vector<HostInterval> out;
  EXPECT_EQ(100u, drain_intervals(&out));
  ASSERT_EQ(kRing, out.size());
  for (uint64_t i = 0; i < kRing; ++i) ASSERT_EQ(100 + i, out[i].start_ticks);
}

// Writers never wait for the consumer: 4 threads write while a fifth
// drains. Every interval is drained whole, in its thread's order, or
// counted as dropped; none is invented or torn.
TEST_F(HostActivity, ConcurrentWritersAndADrainingConsumerAccountForEveryInterval) {
  set_interval_threshold(0);
  constexpr int kThreads = 4;
  constexpr uint64_t kEach = 30000;
  std::atomic<int> done{0};
  std::atomic<bool> draining{false};
  std::vector<HostInterval> got;
  uint64_t lost = 0;
  std::thread consumer([&] {
    while (done.load() < kThreads) {
      draining = true;
      lost += drain_intervals(&got);
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t)
    writers.emplace_back([&, t] {
      while (!draining.load()) std::this_thread::yield();
      for (uint64_t i = 0; i < kEach; ++i) {
        // Threads 0 and 1 let the consumer in (2 cores here): drained as
        // they go; 2 and 3 burst past it: overwritten while it reads.
        if (t < 2 && i % 512 == 0) std::this_thread::yield();
        uint64_t start = (static_cast<uint64_t>(t) << 32) | i;
        record_blocked(t % 2 ? kBlocked : kOther, start, start + i % 7, start * 3 + 1);
      }
      done.fetch_add(1);
    });
  for (std::thread& w : writers) w.join();
  consumer.join();
  lost += drain_intervals(&got);  // what the exited threads left
  EXPECT_EQ(kThreads * kEach, got.size() + lost) << "drained " << got.size() << ", dropped " << lost;
  EXPECT_GT(got.size(), 0u);
  std::printf("drained %zu, dropped %llu\n", got.size(), static_cast<unsigned long long>(lost));
  std::map<int, uint64_t> last;  // tid -> last start seen + 1
  for (const HostInterval& v : got) {
    const uint64_t t = v.start_ticks >> 32, i = v.start_ticks & 0xffffffffu;
    ASSERT_LT(t, static_cast<uint64_t>(kThreads));
    ASSERT_EQ(v.start_ticks + i % 7, v.end_ticks);
    ASSERT_EQ(v.start_ticks * 3 + 1, v.site_key);
    ASSERT_EQ(t % 2 ? &kBlocked : &kOther, v.call);
    ASSERT_NE(0, v.tid);
    uint64_t& l = last[v.tid];
    ASSERT_LE(l, v.start_ticks) << "out of order for tid " << v.tid;
    l = v.start_ticks + 1;
  }
  EXPECT_LE(last.size(), static_cast<size_t>(kThreads));
}

// Note [Exited threads], for rings: a thread's intervals survive its exit
// (drained once more), and its ring goes to the next thread.
TEST_F(HostActivity, RingsOfExitedThreadsAreDrainedOnceMoreAndReused) {
  set_interval_threshold(0);
  std::thread([] { record_blocked(kBlocked, 1, 2, 0); }).join();  // at least one ring made
  std::vector<HostInterval> out;
  drain_intervals(&out);
  out.clear();
  const size_t rings = interval_ring_count();
  std::vector<int> tids;
  for (int t = 0; t < 50; ++t) {
    std::thread([&, t] {
      tids.push_back(my_tid());
      for (int i = 0; i < 5; ++i) record_blocked(kBlocked, t * 100 + i, t * 100 + i + 1, 0);
    }).join();
  }
  EXPECT_EQ(0u, drain_intervals(&out));
  ASSERT_EQ(250u, out.size());
  for (int t = 0; t < 50; ++t)
    for (int i = 0; i < 5; ++i) {
      const HostInterval& v = out[t * 5 + i];
      EXPECT_EQ(static_cast<uint64_t>(t * 100 + i), v.start_ticks);
      EXPECT_EQ(tids[t], v.tid);
    }
  // One thread at a time: the same ring each time (the main thread's, made
  // by the earlier tests, is not freed meanwhile).
  EXPECT_LE(interval_ring_count(), rings + 1);
}

TEST_F(HostActivity, StepsAreDrainedInOrderAndAFullRingCountsWhatItDropped) {
  mark_step();
  mark_step();
  mark_step();
  std::vector<uint64_t> steps;
  EXPECT_EQ(0u, drain_steps(&steps));
  ASSERT_EQ(3u, steps.size());
  EXPECT_LE(steps[0], steps[1]);
  EXPECT_LE(steps[1], steps[2]);
  steps.clear();
  EXPECT_EQ(0u, drain_steps(&steps));
  EXPECT_TRUE(steps.empty());
  for (int i = 0; i < 4096 + 10; ++i) mark_step();
  EXPECT_EQ(10u, drain_steps(&steps));
  EXPECT_EQ(4096u, steps.size());
  EXPECT_TRUE(std::is_sorted(steps.begin(), steps.end()));
}

TEST_F(HostActivity, StepsFromManyThreadsAreAllKept) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([] {
      for (int i = 0; i < 100; ++i) mark_step();
    });
  std::vector<uint64_t> steps;
  uint64_t lost = 0;
  for (int i = 0; i < 20; ++i) lost += drain_steps(&steps);
  for (std::thread& t : threads) t.join();
  lost += drain_steps(&steps);
  EXPECT_EQ(0u, lost);
  EXPECT_EQ(400u, steps.size());
}

// Launches: per-thread counters, read while threads count, kept when the
// threads exit.
TEST_F(HostActivity, LaunchesOfEveryThreadAreCountedExitedOnesIncluded) {
  const uint64_t before = launches();
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    uint64_t last = 0;
    while (!stop.load()) {
      uint64_t now = launches();
      EXPECT_GE(now, last);  // never goes back, even as threads exit
      last = now;
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([] {
      for (int i = 0; i < 10000; ++i) count_launch();
    });
  for (std::thread& t : threads) t.join();
  stop = true;
  reader.join();
  EXPECT_EQ(before + 80000, launches());
  count_launch();
  EXPECT_EQ(before + 80001, launches());
}

// Note [Call site keys] (ledger.cc).
TEST_F(HostActivity, CallSiteKeysNameTheirFramesForEveryThread) {
  reset();
  void* here[3] = {reinterpret_cast<void*>(0x1000), reinterpret_cast<void*>(0x2000), reinterpret_cast<void*>(0x3000)};
  void* there[1] = {reinterpret_cast<void*>(0x4000)};
  const uint64_t a = record_call_site(kBlocked, 10, here, 3);
  const uint64_t b = record_call_site(kBlocked, 10, there, 1);
  uint64_t a_elsewhere = 0;
  std::thread([&] { a_elsewhere = record_call_site(kBlocked, 20, here, 3); }).join();
  EXPECT_NE(0u, a);
  EXPECT_NE(0u, b);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, a_elsewhere);
  EXPECT_NE(a, record_call_site(kOther, 10, here, 3));  // another call, another site
  EXPECT_EQ(0u, record_call_site(kBlocked, 10, here, 0));  // nothing recorded
  std::vector<void*> frames;
  ASSERT_TRUE(call_site_frames(a, &frames));
  EXPECT_EQ(std::vector<void*>(here, here + 3), frames);
  ASSERT_TRUE(call_site_frames(b, &frames));
  EXPECT_EQ(std::vector<void*>(there, there + 1), frames);
  EXPECT_FALSE(call_site_frames(0, &frames));
  EXPECT_FALSE(call_site_frames(a ^ 1, &frames));
  reset();
  EXPECT_FALSE(call_site_frames(a, &frames));
}

TEST_F(HostActivity, CallSiteKeysAreBounded) {
  reset();
  uint64_t last = 0;
  for (uintptr_t i = 0; i < kMaxSiteKeys; ++i) {
    void* f[1] = {reinterpret_cast<void*>(0x10000 + i * 16)};
    last = record_call_site(kBlocked, 1, f, 1);
    ASSERT_NE(0u, last) << i;
  }
  void* more[1] = {reinterpret_cast<void*>(0x900000)};
  EXPECT_EQ(0u, record_call_site(kBlocked, 1, more, 1));  // no key rather than a wrong one
  void* known[1] = {reinterpret_cast<void*>(0x10000)};
  EXPECT_NE(0u, record_call_site(kBlocked, 1, known, 1));  // a known site keeps its key
  std::vector<void*> frames;
  EXPECT_TRUE(call_site_frames(last, &frames));
  reset();
}

}  // namespace
}  // namespace ledger
}  // namespace gpuslack

// build_summary from hand-made ledger figures: two threads, known ticks at
// 1 ns per tick, so every expected figure is exact arithmetic.
#include "report/summary.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>

namespace gpuslack {
namespace report {
namespace {

const ApiCall kMalloc{0, "cudaMalloc", Category::kAllocation};
const ApiCall kFree{1, "cudaFree", Category::kAllocation};
const ApiCall kMemcpy{2, "cudaMemcpy", Category::kCopy};
const ApiCall kSynchronize{3, "cudaDeviceSynchronize", Category::kSync};

constexpr double kTick = 1e-9;
constexpr uint64_t kSecond = 1000000000ull;

void* frame(uintptr_t v) { return reinterpret_cast<void*>(v); }

ledger::CallFigures call(const ApiCall& api, uint64_t count, uint64_t each_ticks) {
  ledger::CallFigures c;
  c.call = &api;
  c.count = count;
  c.ticks = count * each_ticks;
  c.max_ticks = each_ticks;
  for (uint64_t i = 0; i < count; ++i) c.histogram.add(each_ticks);
  return c;
}

// Thread 100 "main": allocation 2 s, copies 1 s, sync 3 s, other 0.5 s.
// Thread 200 "worker": allocation 1 s, copies 3 s, collectives 0.5 s.
std::vector<ledger::ThreadFigures> two_threads() {
  ledger::ThreadFigures a;
  a.tid = 100;
  a.name = "main";
  a.ticks[0] = 2 * kSecond;
  a.ticks[1] = 1 * kSecond;
  a.ticks[3] = 3 * kSecond;
  a.ticks[4] = kSecond / 2;
  a.calls = {call(kMalloc, 10, 200000000), call(kFree, 98, 1000), call(kSynchronize, 2, kSecond)};
  a.calls[0].bytes = 1000;
  a.copies = {ledger::CopyFigures{CopyKind::kHostToDevice, HostMemory::kPageable, false, 2, 2 * kSecond, kSecond}};
  a.call_sites = {ledger::CallSiteFigures{&kMalloc, {frame(0x10), frame(0x20)}, 3, kSecond},
                  ledger::CallSiteFigures{&kMalloc, {frame(0x30), frame(0x40)}, 1, 2 * kSecond},
                  ledger::CallSiteFigures{&kMemcpy, {frame(0x60)}, 2, kSecond},
                  ledger::CallSiteFigures{&kSynchronize, {frame(0x70)}, 3, 3 * kSecond}};

  ledger::ThreadFigures b;
  b.tid = 200;
  b.name = "worker";
  b.ticks[0] = 1 * kSecond;
  b.ticks[1] = 3 * kSecond;
  b.ticks[2] = kSecond / 2;
  b.calls = {call(kMalloc, 5, 200000000), call(kFree, 2, 1000000)};
  b.calls[0].bytes = 500;
  b.copies = {ledger::CopyFigures{CopyKind::kHostToDevice, HostMemory::kPageable, false, 1, kSecond, kSecond / 2},
              ledger::CopyFigures{CopyKind::kDeviceToHost, HostMemory::kPinned, false, 1, 4 * kSecond, kSecond / 4}};
  b.call_sites = {ledger::CallSiteFigures{&kMalloc, {frame(0x10), frame(0x20)}, 2, kSecond / 2},
                  ledger::CallSiteFigures{&kFree, {frame(0x50)}, 1, kSecond / 10}};
  return {a, b};
}

RunInfo run_info(int top_call_sites = 2) {
  RunInfo run;
  run.reason = "exit";
  run.wall_s = 10;
  run.started_utc = "2025-01-02T03:04:05Z";
  run.tick_seconds = kTick;
  run.top_call_sites = top_call_sites;
  return run;
}

TEST(BuildSummary, ExitedThreadsAreListedOrSummedAndTheirCallsCounted) {
  std::vector<ledger::ThreadFigures> threads = two_threads();
  // Thread 200 has exited and is listed (time only); two more exited and are
  // summed, carrying the calls of every exited thread.
  threads[1].kind = ledger::ThreadKind::kExited;
  std::vector<ledger::CallFigures> exited_calls = threads[1].calls;
  threads[1].calls.clear();
  ledger::ThreadFigures others;
  others.kind = ledger::ThreadKind::kOtherExited;
  others.threads = 2;
  others.ticks[0] = kSecond;
  others.ticks[3] = kSecond;
  others.calls = exited_calls;
  others.calls.push_back(call(kMalloc, 1, 1000));
  threads.push_back(others);
  Summary s = build_summary(threads, run_info());
  ASSERT_EQ(2u, s.threads.size());
  EXPECT_EQ(200, s.threads[0].tid);
  EXPECT_TRUE(s.threads[0].exited);
  EXPECT_FALSE(s.threads[1].exited);
  EXPECT_EQ(2u, s.other_threads.threads);
  EXPECT_DOUBLE_EQ(1, s.other_threads.lost_s);
  EXPECT_DOUBLE_EQ(0.1, s.other_threads.lost_share);
  EXPECT_DOUBLE_EQ(1, s.other_threads.categories[3].seconds);
  // Everything counts once: categories and calls over all rows.
  EXPECT_DOUBLE_EQ(4, s.categories[0].seconds);
  EXPECT_DOUBLE_EQ(4, s.categories[3].seconds);
  uint64_t mallocs = 0;
  for (const CallRow& c : s.calls)
    if (c.name == "cudaMalloc") mallocs = c.count;
  EXPECT_EQ(16u, mallocs);
}

TEST(BuildSummary, NoOtherThreadsWhileNoneExited) {
  Summary s = build_summary(two_threads(), run_info());
  EXPECT_EQ(0u, s.other_threads.threads);
  EXPECT_FALSE(s.threads[0].exited);
}

TEST(BuildSummary, CategoriesAreSummedOverThreadsInEnumOrder) {
  Summary s = build_summary(two_threads(), run_info());
  ASSERT_EQ(kCategoryCount, static_cast<int>(s.categories.size()));
  const double expected[kCategoryCount] = {3, 4, 0.5, 3, 0.5};
  for (int c = 0; c < kCategoryCount; ++c) {
    EXPECT_EQ(static_cast<Category>(c), s.categories[c].category);
    EXPECT_DOUBLE_EQ(expected[c], s.categories[c].seconds) << c;
    EXPECT_DOUBLE_EQ(expected[c] / 10, s.categories[c].share) << c;
  }
  EXPECT_DOUBLE_EQ(7.5, s.lost_s);  // sync and other are not lost
  EXPECT_DOUBLE_EQ(0.75, s.lost_share);
  EXPECT_DOUBLE_EQ(10, s.wall_s);
  EXPECT_EQ("exit", s.reason);
  EXPECT_EQ("2025-01-02T03:04:05Z", s.started_utc);
  EXPECT_EQ(kSchemaVersion, s.schema_version);
}

TEST(BuildSummary, ThreadsAreSortedByLostAndTheWorstIsNamed) {
  Summary s = build_summary(two_threads(), run_info());
  ASSERT_EQ(2u, s.threads.size());
  EXPECT_EQ(200, s.threads[0].tid);
  EXPECT_EQ("worker", s.threads[0].name);
  EXPECT_DOUBLE_EQ(4.5, s.threads[0].lost_s);
  EXPECT_DOUBLE_EQ(0.45, s.threads[0].lost_share);
  EXPECT_EQ(100, s.threads[1].tid);
  EXPECT_DOUBLE_EQ(3, s.threads[1].lost_s);
  ASSERT_EQ(kCategoryCount, static_cast<int>(s.threads[1].categories.size()));
  EXPECT_DOUBLE_EQ(3, s.threads[1].categories[3].seconds);
  EXPECT_DOUBLE_EQ(0.3, s.threads[1].categories[3].share);
  EXPECT_EQ(200, s.worst_thread.tid);
  EXPECT_DOUBLE_EQ(4.5, s.worst_thread.lost_s);
}

TEST(BuildSummary, CallsAreMergedAcrossThreadsById) {
  Summary s = build_summary(two_threads(), run_info());
  std::map<std::string, CallRow> by_name;
  for (const CallRow& c : s.calls) by_name[c.name] = c;
  ASSERT_EQ(3u, s.calls.size());
  EXPECT_EQ("cudaMalloc", s.calls[0].name);  // 3 s, the most time
  const CallRow& m = by_name["cudaMalloc"];
  EXPECT_EQ(Category::kAllocation, m.category);
  EXPECT_EQ(15u, m.count);
  EXPECT_DOUBLE_EQ(3, m.total_s);
  EXPECT_DOUBLE_EQ(0.2, m.max_s);
  EXPECT_EQ(1500u, m.bytes);

  // 98 calls of 1 us on one thread, 2 of 1 ms on the other: the merged
  // histogram puts p50 in the 1 us bucket and p99 in the 1 ms bucket.
  const CallRow& f = by_name["cudaFree"];
  EXPECT_EQ(100u, f.count);
  EXPECT_DOUBLE_EQ(1e-3, f.max_s);
  ledger::Histogram merged;
  for (int i = 0; i < 98; ++i) merged.add(1000);
  for (int i = 0; i < 2; ++i) merged.add(1000000);
  EXPECT_DOUBLE_EQ(merged.percentile(0.5) * kTick, f.p50_s);
  EXPECT_DOUBLE_EQ(merged.percentile(0.99) * kTick, f.p99_s);
  EXPECT_GT(f.p50_s, 0.5e-6);
  EXPECT_LT(f.p50_s, 2e-6);
  EXPECT_GT(f.p99_s, 0.5e-3);
  EXPECT_LE(f.p99_s, f.max_s);
}

TEST(BuildSummary, PercentilesNeverExceedTheMaximum) {
  ledger::ThreadFigures t;
  t.calls = {call(kMalloc, 1, 600)};  // bucket [512, 1024), middle ~724
  Summary s = build_summary({t}, run_info());
  ASSERT_EQ(1u, s.calls.size());
  EXPECT_DOUBLE_EQ(600e-9, s.calls[0].max_s);
  EXPECT_DOUBLE_EQ(600e-9, s.calls[0].p50_s);
  EXPECT_DOUBLE_EQ(600e-9, s.calls[0].p99_s);
}

TEST(BuildSummary, CopiesAreMergedByKindAndHostMemory) {
  Summary s = build_summary(two_threads(), run_info());
  ASSERT_EQ(2u, s.copies.size());
  const CopyRow& h2d = s.copies[0];  // 1.5 s, the most time
  EXPECT_EQ(CopyKind::kHostToDevice, h2d.copy);
  EXPECT_EQ(HostMemory::kPageable, h2d.host);
  EXPECT_EQ(3u, h2d.count);
  EXPECT_EQ(3 * kSecond, h2d.bytes);
  EXPECT_DOUBLE_EQ(1.5, h2d.total_s);
  EXPECT_DOUBLE_EQ(2, h2d.host_time_gbps);
  const CopyRow& d2h = s.copies[1];
  EXPECT_EQ(CopyKind::kDeviceToHost, d2h.copy);
  EXPECT_EQ(HostMemory::kPinned, d2h.host);
  EXPECT_DOUBLE_EQ(16, d2h.host_time_gbps);
}

TEST(BuildSummary, CallSitesAreMergedThenTopNPerCategory) {
  Summary s = build_summary(two_threads(), run_info(/*top_call_sites=*/2));
  // allocation: {0x30,0x40} 2 s; {0x10,0x20} 1 s + 0.5 s merged; the
  // cudaFree site (0.1 s) is third and dropped. copies: one; sync: one.
  ASSERT_EQ(4u, s.call_sites.size());
  EXPECT_EQ(Category::kAllocation, s.call_sites[0].category);
  EXPECT_EQ("cudaMalloc", s.call_sites[0].api);
  EXPECT_DOUBLE_EQ(2, s.call_sites[0].blocked_s);
  EXPECT_EQ(1u, s.call_sites[0].count);
  EXPECT_EQ(Category::kAllocation, s.call_sites[1].category);
  EXPECT_DOUBLE_EQ(1.5, s.call_sites[1].blocked_s);
  EXPECT_EQ(5u, s.call_sites[1].count);
  EXPECT_EQ(Category::kCopy, s.call_sites[2].category);
  EXPECT_EQ("cudaMemcpy", s.call_sites[2].api);
  EXPECT_EQ(Category::kSync, s.call_sites[3].category);
  EXPECT_DOUBLE_EQ(3, s.call_sites[3].blocked_s);
  // Addresses in no loaded object symbolize as "??", one per frame.
  EXPECT_EQ((std::vector<std::string>{"??", "??"}), s.call_sites[1].frames);

  Summary one = build_summary(two_threads(), run_info(/*top_call_sites=*/1));
  ASSERT_EQ(3u, one.call_sites.size());
  EXPECT_DOUBLE_EQ(2, one.call_sites[0].blocked_s);
  EXPECT_TRUE(build_summary(two_threads(), run_info(0)).call_sites.empty());
}

TEST(BuildSummary, CallSitesWhoseLongestCallIsUnderTheThresholdAreLeftOut) {
  // Recorded before the clock was calibrated: 0.5 ms at most each.
  std::vector<ledger::ThreadFigures> threads = two_threads();
  for (auto& t : threads)
    for (auto& site : t.call_sites) site.max_ticks = kSecond / 2000;
  threads[0].call_sites[3].max_ticks = 2 * kSecond;  // the sync site: 2 s
  RunInfo run = run_info(5);
  run.call_site_threshold_s = 0.001;
  Summary s = build_summary(threads, run);
  ASSERT_EQ(1u, s.call_sites.size());
  EXPECT_EQ("cudaDeviceSynchronize", s.call_sites[0].api);
}

TEST(BuildSummary, ProcessFacts) {
  Summary s = build_summary({}, run_info());
  char host[256] = {};
  ASSERT_EQ(0, gethostname(host, sizeof(host) - 1));
  EXPECT_EQ(host, s.host);
  EXPECT_EQ(getpid(), s.pid);
  EXPECT_EQ(GPUSLACK_VERSION_STRING, s.gpuslack_version);
  EXPECT_EQ(0u, s.build_info.rfind("gpuslack ", 0)) << s.build_info;
}

TEST(BuildSummary, NoThreadsAndNoWallTimeGiveZeroesNotNaN) {
  RunInfo run = run_info();
  run.wall_s = 0;
  Summary s = build_summary({}, run);
  EXPECT_TRUE(s.threads.empty());
  EXPECT_EQ(kCategoryCount, static_cast<int>(s.categories.size()));
  EXPECT_EQ(kCategoryCount, static_cast<int>(s.worst_thread.categories.size()));
  EXPECT_EQ(0, s.lost_s);
  EXPECT_EQ(0, s.lost_share);

  std::vector<ledger::ThreadFigures> threads = two_threads();
  Summary no_wall = build_summary(threads, run);
  EXPECT_EQ(0, no_wall.lost_share);
  EXPECT_EQ(0, no_wall.categories[0].share);
  EXPECT_DOUBLE_EQ(3, no_wall.categories[0].seconds);
}

class RankFromEnvironment : public ::testing::Test {
 protected:
  static constexpr const char* kNames[] = {"RANK",       "SLURM_PROCID",  "OMPI_COMM_WORLD_RANK",       "PMI_RANK",
                                           "LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"};
  void SetUp() override {
    for (const char* name : kNames) {
      if (const char* v = std::getenv(name)) saved_[name] = v;
      unsetenv(name);
    }
  }
  void TearDown() override {
    for (const char* name : kNames) unsetenv(name);
    for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
  }
  static Summary summary() { return build_summary({}, run_info()); }

 private:
  std::map<std::string, std::string> saved_;
};

TEST_F(RankFromEnvironment, AbsentIsMinusOne) {
  EXPECT_EQ(-1, summary().rank);
  EXPECT_EQ(-1, summary().local_rank);
}

TEST_F(RankFromEnvironment, EachVariableInTurn) {
  setenv("PMI_RANK", "7", 1);
  EXPECT_EQ(7, summary().rank);
  setenv("OMPI_COMM_WORLD_RANK", "6", 1);
  EXPECT_EQ(6, summary().rank);
  setenv("SLURM_PROCID", "5", 1);
  EXPECT_EQ(5, summary().rank);
  setenv("RANK", "4", 1);
  EXPECT_EQ(4, summary().rank);

  setenv("MPI_LOCALRANKID", "3", 1);
  EXPECT_EQ(3, summary().local_rank);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "2", 1);
  EXPECT_EQ(2, summary().local_rank);
  setenv("SLURM_LOCALID", "1", 1);
  EXPECT_EQ(1, summary().local_rank);
  setenv("LOCAL_RANK", "0", 1);
  EXPECT_EQ(0, summary().local_rank);
}

TEST_F(RankFromEnvironment, NotANumberIsSkipped) {
  for (const char* bad : {"", "abc", "12x", "-1", " 3", "99999999999"}) {
    setenv("RANK", bad, 1);
    EXPECT_EQ(-1, summary().rank) << '"' << bad << '"';
  }
  setenv("SLURM_PROCID", "9", 1);
  EXPECT_EQ(9, summary().rank);
}

}  // namespace
}  // namespace report
}  // namespace gpuslack

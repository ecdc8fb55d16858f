// Note [Exited threads] (lib/ledger/ledger.h): an exited thread's figures
// are folded in and its shard reused, so the ledgers' memory and the summary
// stay bounded however many threads come and go; no figure is lost, and the
// exited threads that lost most keep their names.
#include "ledger/exited_threads.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "nccl/collectives.h"
#include "ledger/ledger.h"
#include "report/json.h"
#include "report/summary.h"

namespace gpuslack {
namespace ledger {
namespace {

// Ids far from the ones other tests in this binary use.
const ApiCall kAlloc{120, "exitAlloc", Category::kAllocation};
const ApiCall kSync{121, "exitSync", Category::kSync};

// A sanitizer makes each thread dearer (TSan: ~5 ms a thread here, 50 s
// for 10,000); the bound asserted is the same.
#if defined(__SANITIZE_THREAD__)
constexpr int kManyThreads = 2000;
#elif defined(__SANITIZE_ADDRESS__)
constexpr int kManyThreads = 10000;
#else
constexpr int kManyThreads = 50000;
#endif
constexpr int kAtOnce = 8;

// Runs `body(i)` on `n` threads, kAtOnce alive at a time.
template <typename F>
void run_threads(int n, F body) {
  for (int done = 0; done < n;) {
    std::vector<std::thread> batch;
    for (int k = 0; k < kAtOnce && done < n; ++k, ++done) batch.emplace_back(body, done);
    for (auto& t : batch) t.join();
  }
}

ThreadFigures exited_thread(int tid, uint64_t lost, uint64_t sync) {
  ThreadFigures t;
  t.tid = tid;
  t.name = "t" + std::to_string(tid);
  t.ticks[static_cast<int>(Category::kAllocation)] = lost;
  t.ticks[static_cast<int>(Category::kSync)] = sync;
  CallFigures c;
  c.call = &kAlloc;
  c.count = 1;
  c.ticks = lost;
  c.max_ticks = lost;
  t.calls.push_back(c);
  return t;
}

TEST(ExitedThreads, KeepsTheThreadsThatLostMostAndSumsTheOthers) {
  ExitedThreads exited;
  // Lost time 1..20 in a shuffled order; sync time is not lost.
  const int order[] = {5, 17, 2, 20, 11, 1, 14, 8, 19, 3, 16, 7, 12, 4, 18, 10, 6, 15, 9, 13};
  for (int lost : order) exited.add(exited_thread(1000 + lost, lost, 100));
  exited.add(ThreadFigures{});  // made no call: not counted
  std::vector<ThreadFigures> rows;
  exited.append_to(&rows);
  ASSERT_EQ(size_t{kListedExitedThreads} + 1, rows.size());
  for (int i = 0; i < kListedExitedThreads; ++i) {
    EXPECT_EQ(ThreadKind::kExited, rows[i].kind);
    EXPECT_EQ(1020 - i, rows[i].tid);  // 20, 19, ... 13: most lost first
    EXPECT_EQ("t" + std::to_string(1020 - i), rows[i].name);
    EXPECT_TRUE(rows[i].calls.empty());  // time only
  }
  const ThreadFigures& others = rows.back();
  EXPECT_EQ(ThreadKind::kOtherExited, others.kind);
  EXPECT_EQ(12u, others.threads);
  EXPECT_EQ(uint64_t{12 * 13 / 2}, others.ticks[static_cast<int>(Category::kAllocation)]);  // 1..12
  EXPECT_EQ(1200u, others.ticks[static_cast<int>(Category::kSync)]);
  // The calls of all twenty.
  ASSERT_EQ(1u, others.calls.size());
  EXPECT_EQ(20u, others.calls[0].count);
  EXPECT_EQ(uint64_t{20 * 21 / 2}, others.calls[0].ticks);
  EXPECT_EQ(20u, others.calls[0].max_ticks);
  EXPECT_EQ(20u, exited.threads());
}

TEST(ExitedThreads, NothingBeforeAThreadExits) {
  ExitedThreads exited;
  std::vector<ThreadFigures> rows;
  exited.append_to(&rows);
  EXPECT_TRUE(rows.empty());
}

TEST(Ledger, ManyShortLivedThreadsReuseShardsAndLoseNoFigure) {
  register_call(&kAlloc);
  register_call(&kSync);
  reset();
  // Threads of earlier tests may have left free shards: count from here.
  const size_t shards_before = shard_count();
  void* frames[2] = {reinterpret_cast<void*>(0x4000), reinterpret_cast<void*>(0x5000)};
  run_threads(kManyThreads, [&](int i) {
    // Thread i loses i + 1 ticks; the last ones lost most.
    record(kAlloc, static_cast<uint64_t>(i) + 1, CallInfo{8, CopyKind::kNone, HostMemory::kNone, true});
    record(kSync, 2, CallInfo{});
    if (i % 100 == 0) record_call_site(kAlloc, static_cast<uint64_t>(i) + 1, frames, 2);
  });
  // Memory: the most threads alive at once, not every thread that ran.
  EXPECT_LE(shard_count() - shards_before, size_t{kAtOnce});

  std::vector<ThreadFigures> snap = snapshot();
  ASSERT_EQ(size_t{kListedExitedThreads} + 1, snap.size());  // this thread made no call
  uint64_t count = 0, ticks = 0, max = 0, lost = 0, sites = 0;
  for (const ThreadFigures& t : snap) {
    for (const CallFigures& c : t.calls)
      if (c.call == &kAlloc) {
        count += c.count;
        ticks += c.ticks;
        max = std::max(max, c.max_ticks);
      }
    for (const CallSiteFigures& s : t.call_sites) sites += s.count;
    lost += t.ticks[static_cast<int>(Category::kAllocation)];
  }
  const uint64_t n = kManyThreads;
  EXPECT_EQ(n, count);
  EXPECT_EQ(n * (n + 1) / 2, ticks);
  EXPECT_EQ(ticks, lost);
  EXPECT_EQ(n, max);
  EXPECT_EQ(n / 100, sites);
  for (int i = 0; i < kListedExitedThreads; ++i) {
    EXPECT_EQ(ThreadKind::kExited, snap[i].kind);
    EXPECT_EQ(n - i, snap[i].ticks[static_cast<int>(Category::kAllocation)]);
  }
  EXPECT_EQ(n - kListedExitedThreads, snap.back().threads);

  // The summary: the listed threads and one row for the rest, a few KiB.
  report::RunInfo run;
  run.reason = "exit";
  run.wall_s = 10;
  run.tick_seconds = 1e-9;
  report::Summary s = report::build_summary(snap, run);
  EXPECT_EQ(size_t{kListedExitedThreads}, s.threads.size());
  EXPECT_TRUE(s.threads.front().exited);
  EXPECT_EQ(n - kListedExitedThreads, s.other_threads.threads);
  EXPECT_LT(report::format_json(s).size(), 16u * 1024);
  reset();
}

TEST(Ledger, AThreadRecordingAfterItsShardWasFoldedIsFoldedAgain) {
  register_call(&kAlloc);
  reset();
  record(kAlloc, 1, CallInfo{});  // the ledger's key exists: ours, made now, comes after it
  // A key destructor of the program's that runs after the ledger's and makes
  // a hooked call: the thread takes a shard again, and glibc runs the
  // ledger's destructor again.
  pthread_key_t key;
  ASSERT_EQ(0, pthread_key_create(&key, [](void*) { record(kAlloc, 3, CallInfo{}); }));
  std::thread([key] {
    pthread_setspecific(key, reinterpret_cast<void*>(1));
    record(kAlloc, 4, CallInfo{});
  }).join();
  pthread_key_delete(key);
  uint64_t count = 0, ticks = 0;
  size_t live = 0;
  for (const ThreadFigures& t : snapshot()) {
    live += t.kind == ThreadKind::kLive ? 1 : 0;
    for (const CallFigures& c : t.calls)
      if (c.call == &kAlloc) {
        count += c.count;
        ticks += c.ticks;
      }
  }
  EXPECT_EQ(1u, live);  // this thread; the other's shard went back both times
  EXPECT_EQ(3u, count);
  EXPECT_EQ(8u, ticks);
  reset();
}

TEST(Collectives, ManyShortLivedThreadsReuseShardsAndLoseNoCall) {
  nccl::reset_collectives();
  const size_t shards_before = nccl::collective_shard_count();
  run_threads(kManyThreads, [](int) {
    nccl::Collective c;
    c.op = nccl::CollectiveOp::kAllReduce;
    c.count = 256;
    c.datatype = 7;  // float32
    c.stream = reinterpret_cast<cudaStream_t>(0x10);  // no runtime here: never timed
    nccl::CollectiveTrack t = nccl::collective_begin(c);
    nccl::collective_end(t, /*issued=*/true, 5);
  });
  EXPECT_LE(nccl::collective_shard_count() - shards_before, size_t{kAtOnce});
  nccl::CollectiveSnapshot snap = nccl::collectives_snapshot();
  ASSERT_EQ(1u, snap.rows.size());
  EXPECT_EQ(uint64_t{kManyThreads}, snap.rows[0].count);
  EXPECT_EQ(uint64_t{kManyThreads} * 5, snap.rows[0].host_ticks);
  EXPECT_EQ(uint64_t{kManyThreads} * 1024, snap.rows[0].bytes);
  nccl::reset_collectives();
}

}  // namespace
}  // namespace ledger
}  // namespace gpuslack

// Note [Fork] (lib/session/session.cc): a forked child never waits for a
// lock that another thread of its parent held at the fork.
//
// Each test runs in a process of its own (forked from the test binary, so
// the session it starts stays there). In it, another thread takes every lock
// of gpuslack's that a child could need -- the ledger's, the collectives
// ledger's and its event pool's, the session's -- and holds them while the
// main thread forks. The child then does everything a child may do with
// gpuslack: the atfork handler runs, it records calls and call sites, reads
// both ledgers, starts a session of its own and formats its summary. It must
// finish within kChildSeconds; a child that hangs is killed and fails the
// test.
//
// The child of a multi-threaded process starts threads here (its session's
// reporter), which TSan refuses by default: the test runs with
// TSAN_OPTIONS=die_after_fork=0 (tests/lib/CMakeLists.txt).
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "child_process.h"
#include "nccl/collectives.h"
#include "ledger/host_activity.h"
#include "ledger/ledger.h"
#include "session/session.h"

namespace gpuslack {
namespace {

constexpr double kChildSeconds = 30;

// Ids far from the ones other tests use.
const ApiCall kCall{110, "forkTestCall", Category::kAllocation};
const ApiCall* const kCalls[] = {&kCall};

// Calls f() from a plain function pointer taking void*.
void call(void* f) { (*static_cast<std::function<void()>*>(f))(); }

// What a child may do with gpuslack; each step takes a lock the holder held.
int child_uses_everything() {
  ledger::record(kCall, 11, CallInfo{});
  void* frames[2] = {reinterpret_cast<void*>(0x1234), reinterpret_cast<void*>(0x5678)};
  ledger::record_call_site(kCall, 11, frames, 2);
  std::vector<ledger::ThreadFigures> snap = ledger::snapshot();
  // The parent's figures are gone; the child's own are there.
  if (snap.size() != 1 || snap[0].calls.size() != 1 || snap[0].calls[0].ticks != 11) return 3;
  nccl::collectives_snapshot();
  session::start(kCalls, 1);
  if (session::summary_json().empty()) return 4;
  return 0;
}

// The same for the host activity (ledger/host_activity.h): the parent's
// intervals, launches and steps are gone, the threshold is "never" again,
// and the child's own are kept.
int child_uses_host_activity() {
  std::vector<ledger::HostInterval> intervals;
  std::vector<uint64_t> steps;
  if (ledger::launches() != 0) return 5;
  ledger::record_blocked(kCall, 1, 1000000, 0);  // the threshold is "never" again
  if (ledger::drain_intervals(&intervals) != 0 || !intervals.empty()) return 6;
  if (ledger::drain_steps(&steps) != 0 || !steps.empty()) return 7;
  ledger::set_interval_threshold(0);
  ledger::record_blocked(kCall, 2, 3, 0);
  ledger::count_launch();
  ledger::mark_step();
  if (ledger::drain_intervals(&intervals) != 0 || intervals.size() != 1 || intervals[0].start_ticks != 2) return 8;
  if (ledger::drain_steps(&steps) != 0 || steps.size() != 1) return 9;
  if (ledger::launches() != 1) return 12;
  return child_uses_everything();
}

// Starts a session, has a second thread hold every lock `hold` takes while
// this thread forks, and gives the child kChildSeconds to run
// child_uses_everything(). 0 when the child finished in time and passed.
int fork_while_another_thread_holds(const std::function<void(const std::function<void()>&)>& hold,
                                    int (*in_child)() = child_uses_everything) {
  session::start(kCalls, 1);  // registers the atfork handler
  ledger::record(kCall, 5, CallInfo{});
  // Host activity the child must forget: intervals, launches, steps.
  ledger::set_interval_threshold(0);
  ledger::record_blocked(kCall, 5, 6, 0);
  ledger::count_launch();
  ledger::mark_step();
  std::atomic<int> stage{0};
  std::thread holder([&] {
    ledger::record(kCall, 7, CallInfo{});  // its own shard, whose lock it takes too
    ledger::record_blocked(kCall, 7, 8, 0);  // its own ring and launch counter
    ledger::count_launch();
    hold([&] {
      stage = 1;
      while (stage.load() != 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
  });
  while (stage.load() != 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const int code = test::fork_and_wait(in_child, kChildSeconds, false);
  stage = 2;
  holder.join();
  return code == -1 || code == test::kHungOnASanitizerLock ? 10 : code == -2 ? 11 : code;  // 10: hung
}

TEST(Fork, TheChildNeverWaitsForTheLedgersLocks) {
  EXPECT_EQ(0, test::in_own_process(
                   [] {
                     return fork_while_another_thread_holds([](const std::function<void()>& during) {
                       std::function<void()> f = during;
                       ledger::testing::while_holding_locks(call, &f);
                     });
                   },
                   2 * kChildSeconds + 30));
}

TEST(Fork, TheChildNeverWaitsForTheCollectivesLocks) {
  EXPECT_EQ(0, test::in_own_process(
                   [] {
                     return fork_while_another_thread_holds([](const std::function<void()>& during) {
                       std::function<void()> f = during;
                       nccl::testing::while_holding_collective_locks(call, &f);
                     });
                   },
                   2 * kChildSeconds + 30));
}

TEST(Fork, TheChildNeverWaitsForTheHostActivitysLocksAndForgetsItsParents) {
  EXPECT_EQ(0, test::in_own_process(
                   [] {
                     return fork_while_another_thread_holds(
                         [](const std::function<void()>& during) {
                           std::function<void()> f = during;
                           ledger::testing::while_holding_host_activity_locks(call, &f);
                         },
                         child_uses_host_activity);
                   },
                   2 * kChildSeconds + 30));
}

TEST(Fork, TheChildNeverWaitsForTheSessionsLocks) {
  EXPECT_EQ(0, test::in_own_process(
                   [] {
                     return fork_while_another_thread_holds([](const std::function<void()>& during) {
                       std::function<void()> f = during;
                       session::testing::while_holding_locks(call, &f);
                     });
                   },
                   2 * kChildSeconds + 30));
}

}  // namespace
}  // namespace gpuslack

// sync/event_pool on the simulated runtime (two devices): events are reused
// instead of made anew, one free list per device and kind, from many
// threads at once; a fork's child and process exit.
#include "sync/event_pool.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <utility>
#include <vector>

namespace gpuslack {
namespace sync {
namespace {

constexpr EventKind kKinds[] = {EventKind::kNoTiming, EventKind::kTiming};

int current_device() {
  int d = -1;
  EXPECT_EQ(cudaSuccess, cudaGetDevice(&d));
  return d;
}

// Whether cudaEventElapsedTime works on `e`: the simulated runtime, as the
// real one, refuses it for events made with cudaEventDisableTiming.
bool times(cudaEvent_t e) {
  cudaStream_t s;
  EXPECT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  EXPECT_EQ(cudaSuccess, cudaEventRecord(e, s));
  EXPECT_EQ(cudaSuccess, cudaStreamSynchronize(s));
  float ms = 0;
  cudaError_t r = cudaEventElapsedTime(&ms, e, e);
  cudaGetLastError();
  EXPECT_EQ(cudaSuccess, cudaStreamDestroy(s));
  return r == cudaSuccess;
}

TEST(EventPool, AGivenBackEventIsReused) {
  ASSERT_EQ(cudaSuccess, cudaSetDevice(0));
  for (EventKind kind : kKinds) {
    PooledEvent a = take_event(0, kind);
    ASSERT_TRUE(a);
    EXPECT_EQ(0, a.device);
    EXPECT_EQ(kind, a.kind);
    size_t free_before = testing::free_events(0, kind);
    give_event(a);
    EXPECT_EQ(free_before + 1, testing::free_events(0, kind));
    PooledEvent b = take_event(0, kind);
    EXPECT_EQ(a.event, b.event);
    EXPECT_EQ(free_before, testing::free_events(0, kind));
    give_event(b);
  }
  EXPECT_EQ(cudaSuccess, cudaGetLastError());
}

TEST(EventPool, KindsHaveTheirFlagsAndListsOfTheirOwn) {
  ASSERT_EQ(cudaSuccess, cudaSetDevice(0));
  PooledEvent timing = take_event(0, EventKind::kTiming);
  PooledEvent fence = take_event(0, EventKind::kNoTiming);
  ASSERT_TRUE(timing);
  ASSERT_TRUE(fence);
  EXPECT_TRUE(times(timing.event));
  EXPECT_FALSE(times(fence.event));
  // Each goes back to its own kind's list; the other kind never gets it.
  give_event(fence);
  PooledEvent t2 = take_event(0, EventKind::kTiming);
  EXPECT_NE(fence.event, t2.event);
  EXPECT_TRUE(times(t2.event));
  give_event(t2);
  give_event(timing);
  PooledEvent f2 = take_event(0, EventKind::kNoTiming);
  EXPECT_EQ(fence.event, f2.event);
  give_event(f2);
}

TEST(EventPool, DevicesHaveListsOfTheirOwn) {
  ASSERT_EQ(cudaSuccess, cudaSetDevice(0));
  // Made on device 1 while device 0 is current: the current device is
  // switched for the call and back.
  PooledEvent on1 = take_event(1, EventKind::kNoTiming);
  ASSERT_TRUE(on1);
  EXPECT_EQ(1, on1.device);
  EXPECT_EQ(0, current_device());
  give_event(on1);
  PooledEvent on0 = take_event(0, EventKind::kNoTiming);
  EXPECT_NE(on1.event, on0.event);  // device 0 never gets device 1's event
  PooledEvent again1 = take_event(1, EventKind::kNoTiming);
  EXPECT_EQ(on1.event, again1.event);
  EXPECT_EQ(0, current_device());
  // It records on a stream of its device.
  ASSERT_EQ(cudaSuccess, cudaSetDevice(1));
  cudaStream_t s;
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  EXPECT_EQ(cudaSuccess, cudaEventRecord(again1.event, s));
  EXPECT_EQ(cudaSuccess, cudaStreamSynchronize(s));
  EXPECT_EQ(cudaSuccess, cudaEventQuery(again1.event));
  EXPECT_EQ(cudaSuccess, cudaStreamDestroy(s));
  ASSERT_EQ(cudaSuccess, cudaSetDevice(0));
  give_event(again1);
  give_event(on0);
}

TEST(EventPool, ADeviceWithoutEventsGetsNoneAndLeavesNoError) {
  ASSERT_EQ(cudaSuccess, cudaSetDevice(0));
  EXPECT_FALSE(take_event(-1, EventKind::kTiming));
  EXPECT_FALSE(take_event(kMaxEventDevices, EventKind::kTiming));
  give_event({reinterpret_cast<cudaEvent_t>(0x10), kMaxEventDevices, EventKind::kTiming});  // ignored
  EXPECT_EQ(0u, testing::free_events(kMaxEventDevices, EventKind::kTiming));
  // Device 5 is in the table's range but not on this machine.
  EXPECT_FALSE(take_event(5, EventKind::kNoTiming));
  EXPECT_EQ(0, current_device());
  EXPECT_EQ(cudaSuccess, cudaGetLastError());
  // An error pending before stays the application's to read.
  EXPECT_EQ(cudaErrorInvalidDevice, cudaSetDevice(99));
  EXPECT_FALSE(take_event(5, EventKind::kNoTiming));
  EXPECT_NE(cudaSuccess, cudaGetLastError());
  EXPECT_EQ(cudaSuccess, cudaGetLastError());
}

TEST(EventPool, ManyThreadsNeverShareAnEventAndReuseTheirs) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 3000;
  constexpr int kHeld = 3;  // the most events one thread holds at once
  using Key = std::pair<int, EventKind>;
  std::map<Key, size_t> free_before;
  for (int d = 0; d < 2; ++d)
    for (EventKind k : kKinds) free_before[{d, k}] = testing::free_events(d, k);
  std::mutex mu;
  std::set<cudaEvent_t> held;        // taken and not given back, by any thread
  std::map<Key, std::set<cudaEvent_t>> seen;
  bool shared = false, mislabeled = false;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      EXPECT_EQ(cudaSuccess, cudaSetDevice(t % 2));
      for (int r = 0; r < kRounds; ++r) {
        std::vector<PooledEvent> mine;
        int n = 1 + static_cast<int>(rng() % kHeld);
        for (int i = 0; i < n; ++i) {
          PooledEvent e = take_event(static_cast<int>(rng() % 2), kKinds[rng() % 2]);
          if (!e) continue;
          std::lock_guard<std::mutex> lock(mu);
          if (!held.insert(e.event).second) shared = true;
          seen[{e.device, e.kind}].insert(e.event);
          mine.push_back(e);
        }
        for (const PooledEvent& e : mine) {
          {
            std::lock_guard<std::mutex> lock(mu);
            held.erase(e.event);
          }
          give_event(e);
        }
      }
      if (current_device() != t % 2) mislabeled = true;  // a creation left the device switched
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_FALSE(shared);
  EXPECT_FALSE(mislabeled);
  std::set<cudaEvent_t> all;
  for (auto& [key, events] : seen) {
    // Reused: no more events than were ever in use at once, plus those the
    // list held before.
    EXPECT_LE(events.size(), free_before[key] + kThreads * kHeld);
    // Every one came back to its own list, and no handle is in two lists.
    EXPECT_GE(testing::free_events(key.first, key.second), events.size());
    for (cudaEvent_t e : events) EXPECT_TRUE(all.insert(e).second);
  }
  EXPECT_EQ(cudaSuccess, cudaGetLastError());
}

// Note [Fork] (lib/session/session.cc): the child of a fork taken while the
// pool's lock was held (here by the forking thread itself) forgets the
// parent's events and never waits for that lock.
TEST(EventPool, AForkedChildStartsEmptyAndNeverWaitsForTheLock) {
  ASSERT_EQ(cudaSuccess, cudaSetDevice(0));
  give_event(take_event(0, EventKind::kNoTiming));
  ASSERT_GE(testing::free_events(0, EventKind::kNoTiming), 1u);
  pid_t child = -1;
  testing::while_holding_event_pool_lock(
      [](void* out) {
        pid_t pid = fork();
        if (pid == 0) {
          events_after_fork_child();
          if (testing::free_events(0, EventKind::kNoTiming) != 0) _exit(3);
          // No runtime call: the list answers.
          const cudaEvent_t fake = reinterpret_cast<cudaEvent_t>(0x1234);
          give_event({fake, 0, EventKind::kNoTiming});
          if (take_event(0, EventKind::kNoTiming).event != fake) _exit(4);
          _exit(0);
        }
        *static_cast<pid_t*>(out) = pid;
      },
      &child);
  ASSERT_GT(child, 0);
  int status = 0;
  for (int i = 0; i < 3000 && waitpid(child, &status, WNOHANG) == 0; ++i) usleep(10 * 1000);
  if (waitpid(child, &status, WNOHANG) == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    FAIL() << "the child hung";
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(0, WEXITSTATUS(status));
  // The parent's list is as it was.
  EXPECT_GE(testing::free_events(0, EventKind::kNoTiming), 1u);
}

// At exit the pool still serves: an atexit handler takes and gives back.
TEST(EventPool, ServesDuringExit) {
  EXPECT_EXIT(
      {
        PooledEvent e = take_event(0, EventKind::kTiming);
        give_event(e);
        static cudaEvent_t s_expected = e.event;
        std::atexit([] {
          PooledEvent again = take_event(0, EventKind::kTiming);
          give_event(again);
          std::_Exit(again.event == s_expected ? 0 : 5);
        });
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace sync
}  // namespace gpuslack

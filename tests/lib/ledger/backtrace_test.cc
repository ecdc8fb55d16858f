#include "ledger/backtrace.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>  // program_invocation_short_name
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "ledger/ledger.h"  // kMaxFrames
#include "report/symbolize.h"

// A chain of calls for the stack to show. Exported (default visibility, and
// the test is linked with -rdynamic) so that dladdr can name them; noinline,
// and an empty asm after each call so that no call becomes a tail call.
#define GPUSLACK_TEST_FRAME __attribute__((noinline, visibility("default")))

namespace gpuslack_test_backtrace {

GPUSLACK_TEST_FRAME int chain_three(void** frames, int max_frames) {
  int n = gpuslack::ledger::capture_backtrace(frames, max_frames);
  asm volatile("" ::: "memory");
  return n;
}

GPUSLACK_TEST_FRAME int chain_two(void** frames, int max_frames) {
  int n = chain_three(frames, max_frames);
  asm volatile("" ::: "memory");
  return n;
}

GPUSLACK_TEST_FRAME int chain_one(void** frames, int max_frames) {
  int n = chain_two(frames, max_frames);
  asm volatile("" ::: "memory");
  return n;
}

// `depth` more frames, then the capture: for timing a full 8-frame capture.
GPUSLACK_TEST_FRAME int deep(int depth, void** frames, int max_frames) {
  int n = depth == 0 ? gpuslack::ledger::capture_backtrace(frames, max_frames)
                     : deep(depth - 1, frames, max_frames);
  asm volatile("" ::: "memory");
  return n;
}

}  // namespace gpuslack_test_backtrace

namespace gpuslack {
namespace ledger {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
namespace chain = ::gpuslack_test_backtrace;

std::vector<std::string> capture_chain(int max_frames) {
  std::vector<void*> frames(max_frames);
  int n = chain::chain_one(frames.data(), max_frames);
  frames.resize(n);
  return report::symbolize(frames, nullptr);
}

TEST(Backtrace, ShowsTheCallersInnermostFirst) {
  std::vector<std::string> names = capture_chain(kMaxFrames);
  ASSERT_GE(names.size(), 4u);
  EXPECT_THAT(names[0], StartsWith("gpuslack_test_backtrace::chain_three(void**, int)+0x"));
  EXPECT_THAT(names[1], StartsWith("gpuslack_test_backtrace::chain_two(void**, int)+0x"));
  EXPECT_THAT(names[2], StartsWith("gpuslack_test_backtrace::chain_one(void**, int)+0x"));
  EXPECT_THAT(names[0], HasSubstr(std::string(" (") + program_invocation_short_name + ")"));
  // capture_backtrace's own frame is left out: frame 0 is its caller.
  for (const std::string& name : names) EXPECT_THAT(name, ::testing::Not(HasSubstr("capture_backtrace")));
}

TEST(Backtrace, WorksOnAnyThread) {
  std::vector<std::string> names;
  std::thread([&] { names = capture_chain(kMaxFrames); }).join();
  ASSERT_GE(names.size(), 3u);
  EXPECT_THAT(names[0], HasSubstr("chain_three"));
  EXPECT_THAT(names[1], HasSubstr("chain_two"));
  EXPECT_THAT(names[2], HasSubstr("chain_one"));
}

TEST(Backtrace, HonoursMaxFrames) {
  void* sentinel = reinterpret_cast<void*>(0x5a5a);
  void* frames[kMaxFrames];
  for (void*& f : frames) f = sentinel;

  EXPECT_EQ(0, chain::chain_one(frames, 0));
  EXPECT_EQ(0, chain::chain_one(frames, -1));
  EXPECT_EQ(0, capture_backtrace(nullptr, kMaxFrames));
  EXPECT_EQ(sentinel, frames[0]);

  ASSERT_EQ(2, chain::chain_one(frames, 2));
  EXPECT_NE(sentinel, frames[0]);
  EXPECT_NE(sentinel, frames[1]);
  for (int i = 2; i < kMaxFrames; ++i) EXPECT_EQ(sentinel, frames[i]) << i;
  std::vector<std::string> names = report::symbolize({frames[0], frames[1]}, nullptr);
  EXPECT_THAT(names[0], HasSubstr("chain_three"));
  EXPECT_THAT(names[1], HasSubstr("chain_two"));

  // A deep stack fills exactly max_frames.
  EXPECT_EQ(kMaxFrames, chain::deep(2 * kMaxFrames, frames, kMaxFrames));
}

TEST(Backtrace, CostOfEightFrames) {
  constexpr int kIterations = 20000;
  void* frames[kMaxFrames];
  // Warm up: the unwinder's one-time setup and caches.
  for (int i = 0; i < 100; ++i) ASSERT_EQ(kMaxFrames, chain::deep(kMaxFrames, frames, kMaxFrames));
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kIterations; ++i) chain::deep(kMaxFrames, frames, kMaxFrames);
  auto elapsed = std::chrono::steady_clock::now() - start;
  double ns = std::chrono::duration<double, std::nano>(elapsed).count() / kIterations;
  std::printf("[ capture ] %d frames: %.0f ns per capture_backtrace (%d runs, incl. %d calls of recursion)\n",
              kMaxFrames, ns, kIterations, kMaxFrames + 1);
  RecordProperty("capture_ns", static_cast<int>(ns));
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "timing not asserted under sanitizers (" << ns << " ns)";
#else
  // Used only after a call blocked >= 100 us; a wide margin against noise.
  EXPECT_LT(ns, 20000.0);
#endif
}

}  // namespace
}  // namespace ledger
}  // namespace gpuslack

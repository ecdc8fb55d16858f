// HeldFences on the simulated runtime: a fence is one event on its stream,
// handed back once when the GPU has passed it; at most one per stream;
// nothing is recorded on a capturing stream; the unfenced bytes call for a
// fence at the threshold; the allocation path's fence budget; the poll of
// other streams' fences and its sparing; every event goes back to the pool.
#include "alloc/held_fences.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "gpusim.h"
#include "sim_driver.h"
#include "sync/event_pool.h"

namespace gpuslack {
namespace alloc {
namespace {

using test_support::kMiB;
using test_support::non_blocking;

constexpr uint64_t kEvery = 32 * kMiB;

// `s` busy for `us` microseconds of GPU time.
void keep_busy(cudaStream_t s, unsigned us) {
  static void* buf = [] {
    void* p = nullptr;
    EXPECT_EQ(cudaSuccess, cudaMalloc(&p, 4096));
    return p;
  }();
  ASSERT_EQ(cudaSuccess, gpusim_busy_kernel(s, buf, 4096, us, 3, nullptr));
}

std::vector<cudaStream_t> completed(HeldFences& f) {
  std::vector<cudaStream_t> out;
  f.poll_all([&](cudaStream_t s) { out.push_back(s); });
  return out;
}

TEST(HeldFences, AFenceCompletesOnceTheGpuHasPassedItAndIsHandedBackOnce) {
  HeldFences f(0, kEvery);
  cudaStream_t s = non_blocking(), idle = non_blocking();
  keep_busy(s, 200000);
  ASSERT_TRUE(f.record(s));
  EXPECT_TRUE(f.pending(s));
  EXPECT_FALSE(f.pending(idle));
  EXPECT_TRUE(completed(f).empty());  // the kernel runs
  ASSERT_TRUE(f.record(idle));
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(idle));
  EXPECT_EQ(std::vector<cudaStream_t>{idle}, completed(f));  // the other one only
  EXPECT_EQ(1u, f.size());
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
  EXPECT_EQ(std::vector<cudaStream_t>{s}, completed(f));
  EXPECT_TRUE(completed(f).empty());  // once
  EXPECT_FALSE(f.pending(s));
  EXPECT_EQ(0u, f.size());
  cudaStreamDestroy(s);
  cudaStreamDestroy(idle);
}

TEST(HeldFences, PollAnswersForOneStreamAndDropForgetsItsFenceUnread) {
  HeldFences f(0, kEvery);
  cudaStream_t s = non_blocking(), t = non_blocking();
  int handed = 0;
  auto count = [&](cudaStream_t) { ++handed; };
  EXPECT_FALSE(f.poll(s, count));  // no fence
  keep_busy(s, 200000);
  ASSERT_TRUE(f.record(s));
  ASSERT_TRUE(f.record(t));
  EXPECT_TRUE(f.poll(s, count));  // pending
  EXPECT_TRUE(f.drop(s));
  EXPECT_FALSE(f.drop(s));  // gone
  EXPECT_FALSE(f.pending(s));
  EXPECT_TRUE(f.pending(t));
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  EXPECT_FALSE(f.poll(s, count));  // dropped: never handed back
  EXPECT_EQ(0, handed);
  EXPECT_FALSE(f.poll(t, count));  // completed: handed back, gone
  EXPECT_EQ(1, handed);
  EXPECT_FALSE(f.pending(t));
  cudaStreamDestroy(s);
  cudaStreamDestroy(t);
}

TEST(HeldFences, NothingIsRecordedOnACapturingStream) {
  HeldFences f(0, kEvery);
  cudaStream_t s = non_blocking();
  const long records = gpusim_calls("cudaEventRecord");
  ASSERT_EQ(cudaSuccess, cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  EXPECT_FALSE(f.record(s));
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaSuccess, cudaStreamEndCapture(s, &graph));  // the capture was not invalidated
  EXPECT_EQ(records, gpusim_calls("cudaEventRecord"));
  EXPECT_FALSE(f.pending(s));
  EXPECT_EQ(cudaSuccess, cudaGetLastError());
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
}

TEST(HeldFences, TheUnfencedBytesCallForAFenceAtTheThresholdUntilOneIsRecorded) {
  HeldFences f(0, kEvery);
  cudaStream_t s = non_blocking(), t = non_blocking();
  EXPECT_FALSE(f.add_unfenced(s, 16 * kMiB));
  EXPECT_FALSE(f.add_unfenced(t, 24 * kMiB));  // each stream its own count
  EXPECT_TRUE(f.add_unfenced(s, 16 * kMiB));
  EXPECT_TRUE(f.add_unfenced(s, 1));  // still due
  ASSERT_TRUE(f.record(s));           // restarts the count
  EXPECT_FALSE(f.add_unfenced(s, 16 * kMiB));
  EXPECT_TRUE(f.add_unfenced(t, 8 * kMiB));
  f.forget_unfenced(t);
  EXPECT_FALSE(f.add_unfenced(t, kEvery - 1));
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  cudaStreamDestroy(s);
  cudaStreamDestroy(t);
}

TEST(HeldFences, DueSaysWhatTheCountSaysWithoutCounting) {
  HeldFences f(0, kEvery);
  cudaStream_t s = non_blocking();
  EXPECT_FALSE(f.due(s));
  EXPECT_FALSE(f.add_unfenced(s, kEvery - 1));
  EXPECT_FALSE(f.due(s));
  EXPECT_FALSE(f.due(s));  // asking adds nothing
  EXPECT_TRUE(f.add_unfenced(s, 1));
  EXPECT_TRUE(f.due(s));
  ASSERT_TRUE(f.record(s));
  EXPECT_FALSE(f.due(s));
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  cudaStreamDestroy(s);
}

// See Note [Fences off the allocation path].
TEST(HeldFences, TheAllocationPathFencesABurstThenOncePerItsShareOfAllocations) {
  HeldFences f(0, kEvery);
  const uint64_t per = HeldFences::kAllocationsPerFence, burst = HeldFences::kFenceBurst;
  // Full at first: a burst, then nothing.
  for (uint64_t i = 0; i < burst; ++i) EXPECT_TRUE(f.allocation_may_fence()) << i;
  EXPECT_FALSE(f.allocation_may_fence());
  // One more per `per` allocations, not before.
  for (uint64_t i = 0; i + 1 < per; ++i) f.allocation_passed();
  EXPECT_FALSE(f.allocation_may_fence());
  f.allocation_passed();
  EXPECT_TRUE(f.allocation_may_fence());
  EXPECT_FALSE(f.allocation_may_fence());
  // Idle allocations fill it up to a burst, no further.
  for (uint64_t i = 0; i < 10 * burst * per; ++i) f.allocation_passed();
  uint64_t granted = 0;
  while (f.allocation_may_fence()) ++granted;
  EXPECT_EQ(burst, granted);
}

// See Note [Others' fenced ranges before new space]: the asking stream's
// own fence is never handed back; with no stream, every fence is; and the
// sparing poll asks a fence it found pending again only once
// kAllocationsPerPoll allocations have passed.
TEST(HeldFences, PollOthersSkipsTheAskingStreamAndSparesAPendingFence) {
  HeldFences f(0, kEvery);
  cudaStream_t mine = non_blocking(), busy = non_blocking();
  std::vector<cudaStream_t> handed;
  auto take = [&](cudaStream_t s) { handed.push_back(s); };
  ASSERT_TRUE(f.record(mine));
  keep_busy(busy, 200000);
  ASSERT_TRUE(f.record(busy));
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(mine));
  f.poll_others(mine, true, take);  // busy's: asked, pending; mine's: never asked
  EXPECT_TRUE(handed.empty());
  EXPECT_TRUE(f.pending(mine));
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(busy));
  for (uint64_t i = 0; i + 1 < HeldFences::kAllocationsPerPoll; ++i) {
    f.allocation_passed();
    f.poll_others(mine, true, take);  // spared: not asked again yet
  }
  EXPECT_TRUE(handed.empty());
  f.poll_others(mine, false, take);  // not sparing: asked at once
  EXPECT_EQ(std::vector<cudaStream_t>{busy}, handed);
  keep_busy(busy, 200000);
  ASSERT_TRUE(f.record(busy));
  f.poll_others(mine, true, take);  // a new fence is asked at once: pending
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(busy));
  f.allocation_passed();
  f.poll_others(mine, true, take);
  EXPECT_EQ(1u, handed.size());
  for (uint64_t i = 1; i < HeldFences::kAllocationsPerPoll; ++i) f.allocation_passed();
  f.poll_others(mine, true, take);  // its turn has come
  EXPECT_EQ(2u, handed.size());
  f.poll_others(std::nullopt, true, take);  // no asking stream: mine's too
  EXPECT_EQ((std::vector<cudaStream_t>{busy, busy, mine}), handed);
  EXPECT_EQ(0u, f.size());
  cudaStreamDestroy(mine);
  cudaStreamDestroy(busy);
}

TEST(HeldFences, EveryEventGoesBackToThePool) {
  cudaStream_t s = non_blocking(), t = non_blocking();
  auto free_events = [] { return sync::testing::free_events(0, sync::EventKind::kNoTiming); };
  size_t taken = 0;
  {
    HeldFences f(0, kEvery);
    keep_busy(s, 100000);
    ASSERT_TRUE(f.record(s));
    ASSERT_TRUE(f.record(t));
    taken = free_events();
    ASSERT_TRUE(f.drop(t));  // back at once
    EXPECT_EQ(taken + 1, free_events());
  }  // s's, still pending, at destruction
  EXPECT_EQ(taken + 2, free_events());
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  cudaStreamDestroy(s);
  cudaStreamDestroy(t);
}

}  // namespace
}  // namespace alloc
}  // namespace gpuslack

// stage/host_work on the simulated runtime: entries of finished work do not
// pile up as streams come and go (per-thread streams come and go with their
// threads: Note [Exited threads] in lib/ledger/ledger.h), while unfinished
// work stays known.
#include "stage/host_work.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace gpuslack {
namespace stage {
namespace {

TEST(HostWork, FinishedEntriesOfStreamsGoneDoNotPileUp) {
  reset_host_work();
  for (int i = 0; i < 1000; ++i) {
    cudaStream_t s;
    ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    host_work_enqueued(stream_ref(s, false), /*may_call_runtime=*/true);  // a D2H copy's hook
    ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
    host_work_stream_destroyed(s);
    ASSERT_EQ(cudaSuccess, cudaStreamDestroy(s));
  }
  EXPECT_LE(host_work_entries(), 64u);
  EXPECT_EQ(cudaSuccess, cudaGetLastError());
  reset_host_work();
}

TEST(HostWork, PerThreadStreamsOfExitedThreadsDoNotPileUp) {
  reset_host_work();
  for (int i = 0; i < 200; ++i) {
    std::thread([] {
      StreamRef s = stream_ref(cudaStreamPerThread, false);
      host_work_enqueued(s, true);
      cudaStreamSynchronize(cudaStreamPerThread);
    }).join();
  }
  EXPECT_LE(host_work_entries(), 64u);
  reset_host_work();
}

TEST(HostWork, UnfinishedWorkIsKept) {
  reset_host_work();
  // A host function holds the slow stream until the test lets it go.
  std::atomic<bool> go{false};
  cudaStream_t slow;
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&slow, cudaStreamNonBlocking));
  ASSERT_EQ(cudaSuccess, cudaLaunchHostFunc(
                             slow,
                             [](void* flag) {
                               while (!static_cast<std::atomic<bool>*>(flag)->load()) std::this_thread::yield();
                             },
                             &go));
  host_work_enqueued(stream_ref(slow, false), true);
  for (int i = 0; i < 200; ++i) {
    cudaStream_t s;
    ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    host_work_enqueued(stream_ref(s, false), true);
    ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
    host_work_stream_destroyed(s);
    ASSERT_EQ(cudaSuccess, cudaStreamDestroy(s));
  }
  EXPECT_LE(host_work_entries(), 64u);
  // The slow stream's work is still pending: a staged copy on it waits.
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    go = true;
  });
  HostWorkWait w = wait_for_host_work(stream_ref(slow, false));
  release.join();
  EXPECT_EQ(1, w.streams);
  ASSERT_EQ(cudaSuccess, cudaStreamDestroy(slow));
  reset_host_work();
}

}  // namespace
}  // namespace stage
}  // namespace gpuslack

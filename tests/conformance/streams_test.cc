// Streams, events and host functions: CUDA Runtime API, "Stream
// synchronization behavior" and the "Stream Management" / "Event
// Management" references; tests/simcuda/README.md, "Runtime semantics".
#include <atomic>
#include <thread>

#include "conformance.h"

using namespace conformance;

namespace {

// "Stream synchronization behavior" > "Legacy default stream": the legacy
// default stream waits for all work in blocking streams of the context.
TEST(Streams, LegacyDefaultStreamWaitsForBlockingStreams) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  cudaEvent_t e;
  CUDA_OK(cudaEventCreate(&e));
  auto t = Clock::now();
  CUDA_OK(busy(s, kBusyMs));
  CUDA_OK(cudaEventRecord(e, 0));
  CUDA_OK(cudaEventSynchronize(e));
  EXPECT_GE(ms_since(t), kWaitedMs);
  CUDA_OK(cudaEventDestroy(e));
  CUDA_OK(cudaStreamDestroy(s));
}

// Same section: "non-blocking streams ... do not synchronize with the
// legacy default stream" (cudaStreamNonBlocking, cudaStreamCreateWithFlags).
TEST(Streams, NonBlockingStreamDoesNotWaitForTheLegacyStream) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e;
  CUDA_OK(cudaEventCreate(&e));
  CUDA_OK(busy(0, kBusyMs));
  auto t = Clock::now();
  CUDA_OK(cudaEventRecord(e, s));
  CUDA_OK(cudaEventSynchronize(e));
  EXPECT_LT(ms_since(t), kAtOnceMs);
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaEventDestroy(e));
  CUDA_OK(cudaStreamDestroy(s));
}

// cudaStreamDestroy: "In case the device is still doing work in the stream
// when cudaStreamDestroy() is called, the function will return immediately
// and the resources ... will be released automatically once the device has
// completed all work in stream."
TEST(Streams, DestroyReturnsAtOnceAndQueuedWorkStillCompletes) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e;
  CUDA_OK(cudaEventCreate(&e));
  auto t = Clock::now();
  CUDA_OK(busy(s, kBusyMs));
  CUDA_OK(cudaEventRecord(e, s));
  CUDA_OK(cudaStreamDestroy(s));
  EXPECT_LT(ms_since(t), kAtOnceMs);
  CUDA_OK(cudaEventSynchronize(e));
  EXPECT_GE(ms_since(t), kWaitedMs);
  CUDA_OK(cudaEventDestroy(e));
}

// cudaEventQuery: "If cudaEventRecord() has not been called on this event,
// the function returns cudaSuccess."
TEST(Events, AnEventNeverRecordedIsComplete) {
  cudaEvent_t e;
  CUDA_OK(cudaEventCreate(&e));
  EXPECT_EQ(cudaSuccess, cudaEventQuery(e));
  CUDA_OK(cudaEventSynchronize(e));
  CUDA_OK(cudaEventDestroy(e));
}

// cudaEventQuery: cudaErrorNotReady "if all captured work has not yet been
// completed"; cudaEventElapsedTime: the time between two completed events.
TEST(Events, QueryIsNotReadyUntilTheWorkAheadIsDoneAndElapsedTimeCoversIt) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t a, b;
  CUDA_OK(cudaEventCreate(&a));
  CUDA_OK(cudaEventCreate(&b));
  CUDA_OK(cudaEventRecord(a, s));
  CUDA_OK(busy(s, kBusyMs));
  CUDA_OK(cudaEventRecord(b, s));
  EXPECT_EQ(cudaErrorNotReady, cudaEventQuery(b));
  EXPECT_EQ(cudaSuccess, cudaGetLastError());  // not ready is not an error
  CUDA_OK(cudaEventSynchronize(b));
  EXPECT_EQ(cudaSuccess, cudaEventQuery(b));
  float ms = 0;
  CUDA_OK(cudaEventElapsedTime(&ms, a, b));
  EXPECT_GE(ms, kWaitedMs);
  CUDA_OK(cudaEventDestroy(a));
  CUDA_OK(cudaEventDestroy(b));
  CUDA_OK(cudaStreamDestroy(s));
}

// cudaStreamWaitEvent: "Makes all future work submitted to stream wait for
// all work captured in event."
TEST(Events, StreamWaitEventOrdersWorkAcrossStreams) {
  cudaStream_t a, b;
  CUDA_OK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  cudaEvent_t done, after;
  CUDA_OK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  CUDA_OK(cudaEventCreate(&after));
  auto t = Clock::now();
  CUDA_OK(busy(a, kBusyMs));
  CUDA_OK(cudaEventRecord(done, a));
  CUDA_OK(cudaStreamWaitEvent(b, done, 0));
  CUDA_OK(cudaEventRecord(after, b));
  CUDA_OK(cudaEventSynchronize(after));
  EXPECT_GE(ms_since(t), kWaitedMs);
  CUDA_OK(cudaEventDestroy(done));
  CUDA_OK(cudaEventDestroy(after));
  CUDA_OK(cudaStreamDestroy(a));
  CUDA_OK(cudaStreamDestroy(b));
}

// cudaLaunchHostFunc: "The host function will be called after currently
// enqueued work" and blocks later work in the stream until it returns.
TEST(Events, HostFunctionRunsAfterTheWorkAheadOfIt) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  struct Seen {
    Clock::time_point start;
    std::atomic<double> at_ms{-1};
  } seen;
  seen.start = Clock::now();
  CUDA_OK(busy(s, kBusyMs));
  CUDA_OK(cudaLaunchHostFunc(
      s, [](void* p) { static_cast<Seen*>(p)->at_ms = ms_since(static_cast<Seen*>(p)->start); }, &seen));
  EXPECT_LT(ms_since(seen.start), kAtOnceMs);
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_GE(seen.at_ms.load(), kWaitedMs);
  CUDA_OK(cudaStreamDestroy(s));
}

// "Error Handling" > cudaGetLastError: "Returns the last error that has
// been produced by any of the runtime calls in the same instance of the CUDA
// Runtime library in the host thread and resets it to cudaSuccess."
TEST(Errors, LastErrorIsPerThreadAndResetWhenRead) {
  EXPECT_EQ(cudaSuccess, cudaGetLastError());
  EXPECT_EQ(cudaErrorInvalidValue, cudaMalloc(nullptr, 16));
  cudaError_t other = cudaErrorUnknown;
  std::thread([&] { other = cudaGetLastError(); }).join();
  EXPECT_EQ(cudaSuccess, other);
  EXPECT_EQ(cudaErrorInvalidValue, cudaPeekAtLastError());
  EXPECT_EQ(cudaErrorInvalidValue, cudaGetLastError());
  EXPECT_EQ(cudaSuccess, cudaGetLastError());
}

}  // namespace

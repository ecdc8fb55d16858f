// The simulated runtime (libcudart.so.13) against the CUDA Runtime API's
// documented behaviour: stream ordering, implicit synchronization, events,
// capture, devices and the busy kernel. Copies and allocation:
// runtime_memory_test.cc. Timing margins: runtime_test_util.h.
#include <atomic>
#include <cstring>
#include <thread>

#include "runtime_test_util.h"

using namespace runtimetest;

namespace {

// ---- streams ----

TEST(Streams, OpsOnOneStreamRunInOrder) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  DevBuf d(1 << 20);
  auto a = random_bytes(1 << 20, 1), b = random_bytes(1 << 20, 2);
  void *pa, *pb;
  CUDA_OK(cudaMallocHost(&pa, a.size()));
  CUDA_OK(cudaMallocHost(&pb, b.size()));
  std::memcpy(pa, a.data(), a.size());
  std::vector<unsigned char> out(a.size());
  void* pout;
  CUDA_OK(cudaMallocHost(&pout, out.size()));
  // Write a, overwrite with b, read back: order decides the result.
  CUDA_OK(cudaMemcpyAsync(d.p, pa, a.size(), cudaMemcpyHostToDevice, s));
  std::memcpy(pb, b.data(), b.size());
  CUDA_OK(cudaMemcpyAsync(d.p, pb, b.size(), cudaMemcpyHostToDevice, s));
  CUDA_OK(cudaMemcpyAsync(pout, d.p, out.size(), cudaMemcpyDeviceToHost, s));
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(0, std::memcmp(pout, b.data(), b.size()));
  cudaFreeHost(pa);
  cudaFreeHost(pb);
  cudaFreeHost(pout);
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(Streams, QueryAndSynchronizeReflectQueuedWork) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  DevBuf d(4096);
  auto t0 = Clock::now();  // the kernel cannot end before t0 + kBusyUs
  CUDA_OK(gpusim_busy_kernel(s, d.p, 4096, kBusyUs, 7, nullptr));
  EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(s));
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_GE(ms_since(t0), kBlockedMs);
  EXPECT_EQ(cudaSuccess, cudaStreamQuery(s));
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(Streams, LegacyDefaultStreamWaitsForBlockingStreams) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  DevBuf d(4096);
  auto t0 = Clock::now();  // the kernel cannot end before t0 + kBusyUs
  CUDA_OK(gpusim_busy_kernel(s, d.p, 4096, kBusyUs, 7, nullptr));
  // Work on the legacy stream waits for the busy kernel...
  auto t = Clock::now();
  CUDA_OK(cudaMemsetAsync(d.p, 0, 4096, nullptr));
  EXPECT_LT(ms_since(t), kFreeMs);  // ...but the host does not
  CUDA_OK(cudaStreamSynchronize(nullptr));
  EXPECT_GE(ms_since(t0), kBlockedMs);
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(Streams, BlockingStreamWaitsForLegacyStream) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  DevBuf d(4096), e(4096);
  auto t0 = Clock::now();  // the kernel cannot end before t0 + kBusyUs
  CUDA_OK(gpusim_busy_kernel(nullptr, d.p, 4096, kBusyUs, 7, nullptr));
  CUDA_OK(cudaMemsetAsync(e.p, 0, 4096, s));
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_GE(ms_since(t0), kBlockedMs);
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(Streams, NonBlockingStreamIgnoresLegacyStream) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  DevBuf d(4096), e(4096);
  CUDA_OK(gpusim_busy_kernel(nullptr, d.p, 4096, kBusyUs, 7, nullptr));
  CUDA_OK(cudaMemsetAsync(e.p, 0, 4096, s));
  auto t = Clock::now();
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_LT(ms_since(t), kFreeMs);
  // And the legacy stream does not wait for it.
  CUDA_OK(cudaStreamSynchronize(nullptr));
  CUDA_OK(gpusim_busy_kernel(s, e.p, 4096, kBusyUs, 7, nullptr));
  t = Clock::now();
  CUDA_OK(cudaMemsetAsync(d.p, 1, 16, nullptr));
  CUDA_OK(cudaStreamSynchronize(nullptr));
  EXPECT_LT(ms_since(t), kBlockedMs);
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(Streams, PerThreadDefaultStreamIsPerThreadAndBlocking) {
  // Both allocations first: a cudaMalloc between the two threads' work
  // would order them (Programming Guide, "Implicit Synchronization").
  DevBuf d(4096), e(4096);
  // Two threads' per-thread streams do not wait for each other.
  std::thread other([&] {
    EXPECT_EQ(cudaSuccess, gpusim_busy_kernel(cudaStreamPerThread, d.p, 4096, kBusyUs, 1, nullptr));
  });
  other.join();
  auto t = Clock::now();
  CUDA_OK(cudaMemsetAsync(e.p, 0, 4096, cudaStreamPerThread));
  CUDA_OK(cudaStreamSynchronize(cudaStreamPerThread));
  EXPECT_LT(ms_since(t), kFreeMs);
  // The _ptsz entry points read NULL as the per-thread stream.
  auto t0 = Clock::now();
  CUDA_OK(gpusim_busy_kernel(cudaStreamPerThread, e.p, 4096, kBusyUs, 1, nullptr));
  EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery_ptsz(nullptr));
  // The per-thread stream is blocking: legacy work waits for it.
  CUDA_OK(cudaMemsetAsync(e.p, 0, 16, cudaStreamLegacy));
  CUDA_OK(cudaStreamSynchronize(cudaStreamLegacy));
  EXPECT_GE(ms_since(t0), kBlockedMs);
}

TEST(Streams, DeviceSynchronizeWaitsForAllStreams) {
  cudaStream_t a, b;
  CUDA_OK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreate(&b));
  DevBuf d(4096), e(4096);
  auto t0 = Clock::now();  // the kernel cannot end before t0 + kBusyUs
  CUDA_OK(gpusim_busy_kernel(a, d.p, 4096, kBusyUs, 1, nullptr));
  CUDA_OK(gpusim_busy_kernel(b, e.p, 4096, kBusyUs / 2, 1, nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_GE(ms_since(t0), kBlockedMs);
  EXPECT_EQ(cudaSuccess, cudaStreamQuery(a));
  EXPECT_EQ(cudaSuccess, cudaStreamQuery(b));
}

void CUDART_CB set_flag(void* p) { static_cast<std::atomic<int>*>(p)->store(1); }

TEST(Streams, HostFunctionRunsInStreamOrder) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  DevBuf d(4096);
  std::atomic<int> flag{0};
  CUDA_OK(gpusim_busy_kernel(s, d.p, 4096, kBusyUs / 2, 1, nullptr));
  CUDA_OK(cudaLaunchHostFunc(s, set_flag, &flag));
  EXPECT_EQ(0, flag.load());
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(1, flag.load());
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(Streams, DestroyedStreamStillFinishesItsWork) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  DevBuf d(4096);
  volatile int status = 0;
  CUDA_OK(gpusim_busy_kernel(s, d.p, 4096, 10000, 1, &status));
  CUDA_OK(cudaStreamDestroy(s));
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(1, status);
  EXPECT_EQ(cudaErrorInvalidResourceHandle, cudaStreamQuery(s));
}

// ---- events ----

// An idle GPU completes an event at once, not when a host thread gets a
// core; behind queued work (here the legacy stream's, which a blocking
// stream waits for) it does not.
TEST(Events, AnEventOnAnIdleStreamIsCompleteAtOnce) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  cudaEvent_t e;
  CUDA_OK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaEventRecord(e, s));
  EXPECT_EQ(cudaSuccess, cudaEventQuery(e));
  DevBuf d(4096);
  CUDA_OK(gpusim_busy_kernel(nullptr, d.p, 4096, kBusyUs, 1, nullptr));
  CUDA_OK(cudaEventRecord(e, s));  // idle itself, but after the legacy stream's kernel
  EXPECT_EQ(cudaErrorNotReady, cudaEventQuery(e));
  CUDA_OK(cudaEventSynchronize(e));
  CUDA_OK(cudaEventDestroy(e));
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(Events, RecordQuerySynchronizeElapsed) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  cudaEvent_t start, stop;
  CUDA_OK(cudaEventCreate(&start));
  CUDA_OK(cudaEventCreate(&stop));
  EXPECT_EQ(cudaSuccess, cudaEventQuery(stop));  // never recorded: complete
  DevBuf d(4096);
  CUDA_OK(cudaEventRecord(start, s));
  CUDA_OK(gpusim_busy_kernel(s, d.p, 4096, kBusyUs, 1, nullptr));
  CUDA_OK(cudaEventRecord(stop, s));
  EXPECT_EQ(cudaErrorNotReady, cudaEventQuery(stop));
  float ms = 0;
  EXPECT_EQ(cudaErrorNotReady, cudaEventElapsedTime(&ms, start, stop));
  CUDA_OK(cudaEventSynchronize(stop));
  EXPECT_EQ(cudaSuccess, cudaEventQuery(stop));
  CUDA_OK(cudaEventElapsedTime(&ms, start, stop));
  EXPECT_GE(ms, kBlockedMs);
  EXPECT_LT(ms, 500.0);
  cudaEvent_t untimed;
  CUDA_OK(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming));
  CUDA_OK(cudaEventRecord(untimed, s));
  CUDA_OK(cudaEventSynchronize(untimed));
  EXPECT_NE(cudaSuccess, cudaEventElapsedTime(&ms, start, untimed));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaEventDestroy(untimed);
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(Events, StreamWaitEventOrdersAcrossStreams) {
  cudaStream_t a, b;
  CUDA_OK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  cudaEvent_t e;
  CUDA_OK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  DevBuf d(4096), f(4096);
  auto t0 = Clock::now();  // the kernel cannot end before t0 + kBusyUs
  CUDA_OK(gpusim_busy_kernel(a, d.p, 4096, kBusyUs, 1, nullptr));
  CUDA_OK(cudaEventRecord(e, a));
  CUDA_OK(cudaStreamWaitEvent(b, e, 0));
  CUDA_OK(cudaMemsetAsync(f.p, 0, 4096, b));
  CUDA_OK(cudaStreamSynchronize(b));
  EXPECT_GE(ms_since(t0), kBlockedMs);
  cudaEventDestroy(e);
}

// ---- the busy kernel ----

TEST(BusyKernel, CatchesAWriteToMemoryItStillUses) {
#ifdef __SANITIZE_THREAD__
  GTEST_SKIP() << "the write under the kernel is a deliberate data race";
#endif
  cudaStream_t a, b;
  CUDA_OK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  DevBuf d(1 << 16);
  volatile int status = 0;
  long before = gpusim_busy_kernel_violations();
  // Long enough that the memset below meets it even on a loaded machine.
  CUDA_OK(gpusim_busy_kernel(a, d.p, 1 << 16, 6 * kBusyUs, 0x12345678, &status));
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  // Another stream writes the same memory while the kernel runs.
  CUDA_OK(cudaMemsetAsync(d.p, 0, 1 << 16, b));
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(-1, status);
  EXPECT_EQ(before + 1, gpusim_busy_kernel_violations());
  // Ordered after it, the same write is fine.
  status = 0;
  CUDA_OK(gpusim_busy_kernel(a, d.p, 1 << 16, 10000, 1, &status));
  CUDA_OK(cudaMemsetAsync(d.p, 0, 1 << 16, a));
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(1, status);
}

// ---- capture ----

TEST(Capture, CapturedCopiesAndMemsetsReplayOnLaunch) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  DevBuf a(4096), b(4096);
  Pinned h(4096);
  cudaStreamCaptureStatus st;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CUDA_OK(cudaStreamIsCapturing(s, &st));
  EXPECT_EQ(cudaStreamCaptureStatusActive, st);
  CUDA_OK(cudaMemsetAsync(a.p, 0x11, 4096, s));
  CUDA_OK(cudaMemcpyAsync(b.p, a.p, 4096, cudaMemcpyDeviceToDevice, s));
  CUDA_OK(cudaMemcpyAsync(h.p, b.p, 4096, cudaMemcpyDeviceToHost, s));
  CUDA_OK(cudaStreamSynchronize(s) == cudaErrorStreamCaptureUnsupported ? cudaSuccess : cudaErrorUnknown);
  cudaGraph_t g;
  // The synchronize above was refused and invalidated the capture.
  EXPECT_EQ(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s, &g));

  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CUDA_OK(cudaMemsetAsync(a.p, 0x11, 4096, s));
  CUDA_OK(cudaMemcpyAsync(b.p, a.p, 4096, cudaMemcpyDeviceToDevice, s));
  CUDA_OK(cudaMemcpyAsync(h.p, b.p, 4096, cudaMemcpyDeviceToHost, s));
  EXPECT_EQ(0, static_cast<unsigned char*>(h.p)[0]);  // nothing ran yet
  CUDA_OK(cudaStreamEndCapture(s, &g));
  CUDA_OK(cudaStreamIsCapturing(s, &st));
  EXPECT_EQ(cudaStreamCaptureStatusNone, st);
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(0, static_cast<unsigned char*>(h.p)[0]);
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
  CUDA_OK(cudaGraphLaunch(exec, s));
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(0x11, static_cast<unsigned char*>(h.p)[4095]);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
}

TEST(Capture, UnsafeCallsAreRefusedDuringGlobalCapture) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  void* p = nullptr;
  EXPECT_EQ(cudaErrorStreamCaptureUnsupported, cudaMalloc(&p, 4096));
  cudaGraph_t g;
  EXPECT_EQ(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s, &g));
  // Pageable copies cannot be captured; the legacy stream cannot be used
  // while a blocking stream captures.
  std::vector<char> pageable(64);
  DevBuf d(64);
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  EXPECT_EQ(cudaErrorStreamCaptureUnsupported,
            cudaMemcpyAsync(d.p, pageable.data(), 64, cudaMemcpyHostToDevice, s));
  EXPECT_EQ(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s, &g));
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  EXPECT_EQ(cudaErrorStreamCaptureImplicit, cudaMemsetAsync(d.p, 0, 64, nullptr));
  EXPECT_EQ(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s, &g));
  // A thread that swapped itself to relaxed mode may cudaMalloc during a
  // global capture (PyTorch's allocator does, to grow a graph's pool).
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  CUDA_OK(cudaThreadExchangeStreamCaptureMode(&mode));
  EXPECT_EQ(cudaStreamCaptureModeGlobal, mode);
  CUDA_OK(cudaMalloc(&p, 4096));
  CUDA_OK(cudaThreadExchangeStreamCaptureMode(&mode));
  CUDA_OK(cudaStreamEndCapture(s, &g));
  cudaGraphDestroy(g);
  cudaFree(p);
  // Relaxed mode allows cudaMalloc.
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  CUDA_OK(cudaMalloc(&p, 4096));
  CUDA_OK(cudaStreamEndCapture(s, &g));
  cudaGraphDestroy(g);
  cudaFree(p);
}

// ---- devices ----

TEST(Devices, ShapeAndErrors) {
  int n = -1;
  CUDA_OK(cudaGetDeviceCount(&n));
  EXPECT_EQ(1, n);
  EXPECT_EQ(cudaErrorInvalidDevice, cudaSetDevice(1));
  cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  EXPECT_EQ(size_t{8} << 30, prop.totalGlobalMem);
  // Launch limits are set: PyTorch divides by them to size its grids.
  EXPECT_EQ(2048, prop.maxThreadsPerMultiProcessor);
  EXPECT_EQ(1024, prop.maxThreadsPerBlock);
  int per_sm = 0;
  CUDA_OK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, 0));
  EXPECT_EQ(prop.maxThreadsPerMultiProcessor, per_sm);
  int v = 0;
  CUDA_OK(cudaRuntimeGetVersion(&v));
  EXPECT_EQ(CUDART_VERSION, v);
  EXPECT_EQ(cudaErrorInvalidResourceHandle,
            cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(0x1234)));
}

}  // namespace

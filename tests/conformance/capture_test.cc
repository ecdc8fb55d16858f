// Stream capture: CUDA Programming Guide, "CUDA Graphs" > "Stream Capture"
// ("Prohibited and Unhandled Operations", "Invalidation"), and the Runtime
// API's cudaStreamBeginCapture / cudaThreadExchangeStreamCaptureMode;
// tests/simcuda/README.md, "Capture". gpuslack relies on these rules to
// stay out of captures (docs/design.md).
#include <cstring>

#include "conformance.h"

using namespace conformance;

namespace {

// cudaStreamIsCapturing reports the capture.
TEST(Capture, IsCapturingReportsTheCapture) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaStreamCaptureStatus st;
  CUDA_OK(cudaStreamIsCapturing(s, &st));
  EXPECT_EQ(cudaStreamCaptureStatusNone, st);
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CUDA_OK(cudaStreamIsCapturing(s, &st));
  EXPECT_EQ(cudaStreamCaptureStatusActive, st);
  cudaGraph_t g = nullptr;
  CUDA_OK(cudaStreamEndCapture(s, &g));
  CUDA_OK(cudaGraphDestroy(g));
  CUDA_OK(cudaStreamDestroy(s));
}

// cudaThreadExchangeStreamCaptureMode, cudaStreamCaptureModeGlobal: "if the
// local thread has an ongoing capture sequence ... or any other thread has
// a concurrent capture sequence that was not initiated with
// cudaStreamCaptureModeRelaxed, this thread is prohibited from potentially
// unsafe API calls" (cudaMalloc among them); "Invalidation": the capture is
// invalidated and cudaStreamEndCapture fails.
TEST(Capture, MallocDuringAGlobalCaptureIsRefusedAndInvalidatesIt) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  void* p = nullptr;
  EXPECT_EQ(cudaErrorStreamCaptureUnsupported, cudaMalloc(&p, 1 << 20));
  cudaGraph_t g = nullptr;
  EXPECT_EQ(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s, &g));
  EXPECT_EQ(nullptr, g);
  cudaGetLastError();
  CUDA_OK(cudaStreamDestroy(s));
}

// Same reference: a thread in relaxed mode may make those calls.
TEST(Capture, RelaxedModeAllowsMallocDuringACapture) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  CUDA_OK(cudaThreadExchangeStreamCaptureMode(&mode));
  void* p = nullptr;
  EXPECT_EQ(cudaSuccess, cudaMalloc(&p, 1 << 20));
  EXPECT_EQ(cudaSuccess, cudaFree(p));
  CUDA_OK(cudaThreadExchangeStreamCaptureMode(&mode));
  EXPECT_EQ(cudaStreamCaptureModeRelaxed, mode);
  cudaGraph_t g = nullptr;
  CUDA_OK(cudaStreamEndCapture(s, &g));
  CUDA_OK(cudaGraphDestroy(g));
  CUDA_OK(cudaStreamDestroy(s));
}

// "Prohibited and Unhandled Operations": "it is invalid to synchronize or
// query the execution status of a stream which is being captured".
TEST(Capture, SynchronizingTheCapturingStreamIsRefused) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  EXPECT_EQ(cudaErrorStreamCaptureUnsupported, cudaStreamSynchronize(s));
  cudaGraph_t g = nullptr;
  EXPECT_EQ(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s, &g));
  cudaGetLastError();
  CUDA_OK(cudaStreamDestroy(s));
}

// Same section: "When any stream in the same context is being captured, and
// it was not created with cudaStreamNonBlocking, any attempted use of the
// legacy stream is invalid" (cudaErrorStreamCaptureImplicit).
TEST(Capture, UsingTheLegacyStreamWhileABlockingStreamCapturesIsImplicit) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));  // blocking
  void* d = nullptr;
  CUDA_OK(cudaMalloc(&d, 4096));
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  EXPECT_EQ(cudaErrorStreamCaptureImplicit, cudaMemsetAsync(d, 0, 4096, 0));
  cudaGraph_t g = nullptr;
  cudaStreamEndCapture(s, &g);
  if (g) cudaGraphDestroy(g);
  cudaGetLastError();
  CUDA_OK(cudaFree(d));
  CUDA_OK(cudaStreamDestroy(s));
}

// "Stream Capture": captured work is not executed; launching the
// instantiated graph runs it, in order.
TEST(Capture, TheGraphRunsWhatWasCapturedOnlyWhenLaunched) {
  constexpr size_t n = 1 << 16;
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* d = nullptr;
  void* h = nullptr;
  CUDA_OK(cudaMalloc(&d, n));
  CUDA_OK(cudaMallocHost(&h, n));
  std::memset(h, 0x11, n);
  CUDA_OK(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice));
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CUDA_OK(cudaMemsetAsync(d, 0x7e, n, s));
  CUDA_OK(cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost, s));
  cudaGraph_t g = nullptr;
  CUDA_OK(cudaStreamEndCapture(s, &g));
  EXPECT_EQ(0x11, static_cast<unsigned char*>(h)[n - 1]);  // nothing ran
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
  CUDA_OK(cudaGraphLaunch(exec, s));
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(0x7e, static_cast<unsigned char*>(h)[0]);
  EXPECT_EQ(0x7e, static_cast<unsigned char*>(h)[n - 1]);
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(g));
  CUDA_OK(cudaFreeHost(h));
  CUDA_OK(cudaFree(d));
  CUDA_OK(cudaStreamDestroy(s));
}

}  // namespace

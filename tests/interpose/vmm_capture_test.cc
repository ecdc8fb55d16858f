// Every way a graph capture begins, seen by the VMM allocator (issue 28,
// point 6; Note [Every way a capture begins] in interpose/routes_streams.inc):
// a capture begun with cudaStreamBeginCapture, cudaStreamBeginCaptureToGraph,
// cuStreamBeginCapture (CUDA 10.0's ABI), cuStreamBeginCapture_v2 or
// cuStreamBeginCaptureToGraph (and their _ptsz forms, and through
// cuGetProcAddress), ended through either API, leaves the allocator
// querying no event while it runs, so the application's global-mode capture
// is not invalidated. The control: a capture begun through the driver's own
// function, which no hook sees, is invalidated by the same step (the
// simulated runtime invalidates a global capture on cudaEventQuery, as CUDA
// documents for unsafe calls during one), so the test can fail.
//
// The step: a free whose fence is still pending behind a busy kernel, then,
// during the capture, cudaMemGetInfo through gpuslack, which takes back
// completed frees with one event query per fenced batch — none during a
// capture it knows of.
//
// In process, like vmm_free_memory_test.cc: the test links the simulated
// runtime and driver and dlopen()s libgpuslack.so (allocator:vmm).
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "gpuslack/gpuslack.h"
#include "gpusim.h"
#include "in_process.h"

#undef cuStreamBeginCapture

namespace {

constexpr size_t kMiB = 1ull << 20;

void* gpuslack() { return in_process::gpuslack("allocator:vmm,text_summary:off,json_summary:false"); }

template <typename Fn>
Fn hook(const char* name) {
  void* f = dlsym(gpuslack(), name);
  EXPECT_NE(nullptr, f) << name;
  return reinterpret_cast<Fn>(f);
}
template <typename Fn>
Fn driver_own(const char* name) {
  static void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  void* f = h ? dlsym(h, name) : nullptr;
  EXPECT_NE(nullptr, f) << name;
  return reinterpret_cast<Fn>(f);
}

using MallocFn = cudaError_t (*)(void**, size_t);
using FreeFn = cudaError_t (*)(void*);
using MemGetInfoFn = cudaError_t (*)(size_t*, size_t*);
using RtBeginFn = cudaError_t (*)(cudaStream_t, cudaStreamCaptureMode);
using RtBeginToGraphFn = cudaError_t (*)(cudaStream_t, cudaGraph_t, const cudaGraphNode_t*, const cudaGraphEdgeData*,
                                         size_t, cudaStreamCaptureMode);
using RtEndFn = cudaError_t (*)(cudaStream_t, cudaGraph_t*);
using CuBeginV1Fn = CUresult (*)(CUstream);
using CuBeginFn = CUresult (*)(CUstream, CUstreamCaptureMode);
using CuBeginToGraphFn = CUresult (*)(CUstream, CUgraph, const CUgraphNode*, const CUgraphEdgeData*, size_t,
                                      CUstreamCaptureMode);
using CuEndFn = CUresult (*)(CUstream, CUgraph*);
using GetProcFn = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

// One way in and out: begin(stream, graph to capture into) and end, each
// returning 0 on success (the API's own success code).
struct Way {
  std::string name;
  std::function<int(cudaStream_t, cudaGraph_t)> begin;
  std::function<int(cudaStream_t, cudaGraph_t*)> end;
};

Way runtime_end(std::string name, std::function<int(cudaStream_t, cudaGraph_t)> begin) {
  auto end = hook<RtEndFn>("cudaStreamEndCapture");
  return {std::move(name), std::move(begin), [end](cudaStream_t s, cudaGraph_t* g) { return int(end(s, g)); }};
}
Way driver_end(std::string name, std::function<int(cudaStream_t, cudaGraph_t)> begin, const char* end_name) {
  auto end = hook<CuEndFn>(end_name);
  return {std::move(name), std::move(begin), [end](cudaStream_t s, cudaGraph_t* g) { return int(end(s, g)); }};
}

// What a capture begun `way` leaves: the end's result (0: the graph came
// back; else the capture was invalidated or failed).
int capture_survives(const Way& way, bool into_graph) {
  auto malloc = hook<MallocFn>("cudaMalloc");
  auto free = hook<FreeFn>("cudaFree");
  auto mem_get_info = hook<MemGetInfoFn>("cudaMemGetInfo");
  cudaStream_t s = nullptr;
  EXPECT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // A free whose fence stays pending: a kernel on the legacy stream runs
  // for 300 ms; the next allocation (a miss, a new size) fences the free
  // behind it.
  void *a = nullptr, *b = nullptr, *busy = nullptr;
  EXPECT_EQ(cudaSuccess, malloc(&busy, kMiB));
  EXPECT_EQ(cudaSuccess, gpusim_busy_kernel(nullptr, busy, 4096, 300000, 5, nullptr));
  EXPECT_EQ(cudaSuccess, malloc(&a, 2 * kMiB));
  EXPECT_EQ(cudaSuccess, free(a));
  EXPECT_EQ(cudaSuccess, malloc(&b, 24 * kMiB));
  // The step below has something to query: a fenced free, still pending.
  auto stats = hook<int (*)(int, gpuslack_device_stats*)>("gpuslack_device_stats_get");
  gpuslack_device_stats st{};
  EXPECT_EQ(0, stats(0, &st));
  EXPECT_GE(st.pending_free, 1u) << way.name;
  cudaGraph_t into = nullptr;
  if (into_graph) EXPECT_EQ(cudaSuccess, cudaGraphCreate(&into, 0));
  EXPECT_EQ(0, way.begin(s, into)) << way.name;
  EXPECT_EQ(cudaSuccess, cudaMemsetAsync(b, 1, 4096, s));  // captured
  size_t free_bytes = 0, total = 0;
  EXPECT_EQ(cudaSuccess, mem_get_info(&free_bytes, &total));
  cudaGraph_t graph = nullptr;
  int ended = way.end(s, &graph);
  if (ended == 0) {
    EXPECT_NE(nullptr, graph) << way.name;
    if (into_graph) EXPECT_EQ(into, graph) << way.name;
  }
  if (graph) EXPECT_EQ(cudaSuccess, cudaGraphDestroy(graph));
  else if (into) EXPECT_EQ(cudaSuccess, cudaGraphDestroy(into));
  EXPECT_EQ(cudaSuccess, free(b));
  EXPECT_EQ(cudaSuccess, free(busy));
  EXPECT_EQ(cudaSuccess, cudaDeviceSynchronize());
  EXPECT_EQ(cudaSuccess, cudaStreamDestroy(s));
  // Nothing cached: the next way's allocations miss again.
  hook<unsigned long long (*)(int)>("gpuslack_trim")(-1);
  cudaGetLastError();
  return ended;
}

TEST(VmmCapture, EveryWayInIsSeenAndTheCaptureSurvives) {
  ASSERT_NE(nullptr, gpuslack()) << dlerror();
  auto rt_begin = hook<RtBeginFn>("cudaStreamBeginCapture");
  auto rt_to_graph = hook<RtBeginToGraphFn>("cudaStreamBeginCaptureToGraph");
  auto rt_to_graph_ptsz = hook<RtBeginToGraphFn>("cudaStreamBeginCaptureToGraph_ptsz");
  auto cu_v1 = hook<CuBeginV1Fn>("cuStreamBeginCapture");
  auto cu_v1_ptsz = hook<CuBeginV1Fn>("cuStreamBeginCapture_ptsz");
  auto cu_v2 = hook<CuBeginFn>("cuStreamBeginCapture_v2");
  auto cu_v2_ptsz = hook<CuBeginFn>("cuStreamBeginCapture_v2_ptsz");
  auto cu_to_graph = hook<CuBeginToGraphFn>("cuStreamBeginCaptureToGraph");
  auto cu_to_graph_ptsz = hook<CuBeginToGraphFn>("cuStreamBeginCaptureToGraph_ptsz");
  auto get_proc = hook<GetProcFn>("cuGetProcAddress_v2");
  // The version-selected entry point, as a library that finds the driver
  // through cuGetProcAddress gets it.
  void* looked_up = nullptr;
  ASSERT_EQ(CUDA_SUCCESS, get_proc("cuStreamBeginCapture", &looked_up, 12000, 0, nullptr));
  EXPECT_EQ(reinterpret_cast<void*>(cu_v2), looked_up);
  auto cu_looked_up = reinterpret_cast<CuBeginFn>(looked_up);
  const auto global = CU_STREAM_CAPTURE_MODE_GLOBAL;
  const Way plain[] = {
      runtime_end("cudaStreamBeginCapture",
                  [=](cudaStream_t s, cudaGraph_t) { return int(rt_begin(s, cudaStreamCaptureModeGlobal)); }),
      driver_end("cuStreamBeginCapture", [=](cudaStream_t s, cudaGraph_t) { return int(cu_v1(s)); },
                 "cuStreamEndCapture"),
      driver_end("cuStreamBeginCapture_ptsz", [=](cudaStream_t s, cudaGraph_t) { return int(cu_v1_ptsz(s)); },
                 "cuStreamEndCapture_ptsz"),
      driver_end("cuStreamBeginCapture_v2", [=](cudaStream_t s, cudaGraph_t) { return int(cu_v2(s, global)); },
                 "cuStreamEndCapture"),
      runtime_end("cuStreamBeginCapture_v2_ptsz, ended by cudaStreamEndCapture",
                  [=](cudaStream_t s, cudaGraph_t) { return int(cu_v2_ptsz(s, global)); }),
      driver_end("cuStreamBeginCapture through cuGetProcAddress",
                 [=](cudaStream_t s, cudaGraph_t) { return int(cu_looked_up(s, global)); }, "cuStreamEndCapture"),
  };
  for (const Way& w : plain) EXPECT_EQ(0, capture_survives(w, false)) << w.name;
  const Way into_graph[] = {
      runtime_end("cudaStreamBeginCaptureToGraph",
                  [=](cudaStream_t s, cudaGraph_t g) {
                    return int(rt_to_graph(s, g, nullptr, nullptr, 0, cudaStreamCaptureModeGlobal));
                  }),
      driver_end("cudaStreamBeginCaptureToGraph_ptsz, ended by cuStreamEndCapture",
                 [=](cudaStream_t s, cudaGraph_t g) {
                   return int(rt_to_graph_ptsz(s, g, nullptr, nullptr, 0, cudaStreamCaptureModeGlobal));
                 },
                 "cuStreamEndCapture"),
      driver_end("cuStreamBeginCaptureToGraph",
                 [=](cudaStream_t s, cudaGraph_t g) { return int(cu_to_graph(s, g, nullptr, nullptr, 0, global)); },
                 "cuStreamEndCapture"),
      driver_end("cuStreamBeginCaptureToGraph_ptsz",
                 [=](cudaStream_t s, cudaGraph_t g) {
                   return int(cu_to_graph_ptsz(s, g, nullptr, nullptr, 0, global));
                 },
                 "cuStreamEndCapture_ptsz"),
  };
  for (const Way& w : into_graph) EXPECT_EQ(0, capture_survives(w, true)) << w.name;
}

// The control: the same step during a capture no hook saw begin (the
// driver's own cuStreamBeginCapture_v2) invalidates it. Also shows that no
// capture above stayed registered after it ended.
TEST(VmmCapture, ACaptureNoHookSawIsInvalidatedByTheSameStep) {
  ASSERT_NE(nullptr, gpuslack()) << dlerror();
  auto own_begin = driver_own<CuBeginFn>("cuStreamBeginCapture_v2");
  auto own_end = driver_own<CuEndFn>("cuStreamEndCapture");
  Way unseen{"the driver's own cuStreamBeginCapture_v2",
             [=](cudaStream_t s, cudaGraph_t) { return int(own_begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL)); },
             [=](cudaStream_t s, cudaGraph_t* g) { return int(own_end(s, g)); }};
  EXPECT_EQ(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, capture_survives(unseen, false));
}

// A begin that fails registers nothing: after a hooked begin the driver
// refused (the legacy stream cannot capture), a capture no hook saw is
// still invalidated by the step (nothing left the allocator believing a
// capture runs).
TEST(VmmCapture, AFailedBeginLeavesNoCaptureBehind) {
  ASSERT_NE(nullptr, gpuslack()) << dlerror();
  auto cu_v2 = hook<CuBeginFn>("cuStreamBeginCapture_v2");
  // The legacy stream cannot capture: the begin fails and leaves nothing.
  ASSERT_EQ(cudaSuccess, cudaSetDevice(0));  // a current context, for the legacy stream's handle
  EXPECT_EQ(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cu_v2(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL));
  auto own_begin = driver_own<CuBeginFn>("cuStreamBeginCapture_v2");
  auto own_end = driver_own<CuEndFn>("cuStreamEndCapture");
  Way unseen{"the driver's own cuStreamBeginCapture_v2, after a failed hooked begin",
             [=](cudaStream_t s, cudaGraph_t) { return int(own_begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL)); },
             [=](cudaStream_t s, cudaGraph_t* g) { return int(own_end(s, g)); }};
  EXPECT_EQ(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, capture_survives(unseen, false));
}

}  // namespace

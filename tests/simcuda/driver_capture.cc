// libcuda.so.1 of the simulated device: stream capture through the driver
// API, as cuda.h declares it (CUDA 13), on the same capture state as the
// runtime's cudaStreamBeginCapture (stream.cc), so that a capture begun by
// either API is one capture to both:
//   - cuStreamBeginCapture (CUDA 10.0's one-argument ABI: global mode) and
//     its _ptsz, cuStreamBeginCapture_v2 (10.1, with a mode) and _v2_ptsz;
//   - cuStreamBeginCaptureToGraph (12.3) and _ptsz: capture into the
//     application's graph ("operations pushed into the stream ... will
//     instead be captured into hGraph, which will be returned via
//     cuStreamEndCapture"); with dependencies, CUDA_ERROR_NOT_SUPPORTED (a
//     simulated graph is a sequence, as cudaStreamBeginCaptureToGraph's);
//   - cuStreamEndCapture and _ptsz ("If capture was invalidated, due to a
//     violation of the rules of stream capture, then a NULL graph will be
//     returned": CUDA_ERROR_STREAM_CAPTURE_INVALIDATED), cuStreamIsCapturing
//     and _ptsz.
// The driver's capture errors have the runtime's numbers
// (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = cudaErrorStreamCaptureUnsupported
// = 900, ..._INVALIDATED = 901, CUDA_ERROR_ILLEGAL_STATE = 401), so the
// core's answers pass through as they are.
#include "driver_internal.h"

using namespace gpusim;

namespace {

CUresult as_driver(cudaError_t e) { return static_cast<CUresult>(e); }

CUresult capturing_stream(CUstream h, bool per_thread, CUstream_st** out) {
  READY();
  if (h == nullptr || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
    if (CUresult r = drv::ready_with_context()) return r;
  }
  *out = resolve(h, per_thread);
  return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult begin(CUstream h, CUstreamCaptureMode mode, bool per_thread, CUgraph into) {
  CUstream_st* s = nullptr;
  if (CUresult r = capturing_stream(h, per_thread, &s)) return r;
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  return as_driver(begin_capture(s, static_cast<cudaStreamCaptureMode>(mode), into));
}

CUresult to_graph(CUstream h, CUgraph g, const CUgraphNode* deps, size_t n, CUstreamCaptureMode mode,
                  bool per_thread) {
  if (!g || (n && !deps)) return CUDA_ERROR_INVALID_VALUE;
  if (n) return CUDA_ERROR_NOT_SUPPORTED;  // a simulated graph is a sequence
  return begin(h, mode, per_thread, g);
}

CUresult end(CUstream h, CUgraph* graph, bool per_thread) {
  CUstream_st* s = nullptr;
  if (CUresult r = capturing_stream(h, per_thread, &s)) return r;
  if (!graph) return CUDA_ERROR_INVALID_VALUE;
  return as_driver(end_capture(s, graph));
}

CUresult is_capturing(CUstream h, CUstreamCaptureStatus* status, bool per_thread) {
  CUstream_st* s = nullptr;
  if (CUresult r = capturing_stream(h, per_thread, &s)) return r;
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> l(core().mu);
  if (!s->capture_graph) *status = CU_STREAM_CAPTURE_STATUS_NONE;
  else *status = s->capture_invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return CUDA_SUCCESS;
}

}  // namespace

// cuda.h #defines the API names to the versioned ones: the exported names
// of the older ABIs are defined without the macros.
#undef cuStreamBeginCapture
#undef cuStreamBeginCapture_ptsz
GPUSIM_EXPORT CUresult cuStreamBeginCapture(CUstream h) { return begin(h, CU_STREAM_CAPTURE_MODE_GLOBAL, false, nullptr); }
GPUSIM_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream h) {
  return begin(h, CU_STREAM_CAPTURE_MODE_GLOBAL, true, nullptr);
}
GPUSIM_EXPORT CUresult cuStreamBeginCapture_v2(CUstream h, CUstreamCaptureMode mode) {
  return begin(h, mode, false, nullptr);
}
GPUSIM_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream h, CUstreamCaptureMode mode) {
  return begin(h, mode, true, nullptr);
}
GPUSIM_EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream h, CUgraph g, const CUgraphNode* deps,
                                                   const CUgraphEdgeData* edges, size_t n, CUstreamCaptureMode mode) {
  (void)edges;
  return to_graph(h, g, deps, n, mode, false);
}
GPUSIM_EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream h, CUgraph g, const CUgraphNode* deps,
                                                        const CUgraphEdgeData* edges, size_t n,
                                                        CUstreamCaptureMode mode) {
  (void)edges;
  return to_graph(h, g, deps, n, mode, true);
}
GPUSIM_EXPORT CUresult cuStreamEndCapture(CUstream h, CUgraph* graph) { return end(h, graph, false); }
GPUSIM_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream h, CUgraph* graph) { return end(h, graph, true); }
GPUSIM_EXPORT CUresult cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus* status) {
  return is_capturing(h, status, false);
}
GPUSIM_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream h, CUstreamCaptureStatus* status) {
  return is_capturing(h, status, true);
}

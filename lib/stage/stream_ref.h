// StreamRef: one CUDA stream as the staged copies see it: the handle to
// pass to the runtime, and a key that names the same stream whoever asks.
//
// A handle does not name a stream by itself: 0 is the legacy default stream
// of the current device (or, through a _ptsz/_ptds entry point, the calling
// thread's per-thread default stream), and cudaStreamPerThread names a
// different stream in every thread and on every device. The key tells them
// apart (device for the legacy stream; device and thread for per-thread
// ones); the handle is normalized so that gpuslack's own calls, which go
// to the runtime's plain entry points, reach the same stream.
//
// Thread safety: any thread; stream_ref() asks the runtime for the current
// device (cudaGetDevice), nothing else.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace gpuslack {
namespace stage {

struct StreamRef {
  cudaStream_t handle = nullptr;  // cudaStreamLegacy, cudaStreamPerThread, or the application's
  uint64_t key = 0;
  int device = 0;
  bool legacy = false;
  bool per_thread = false;
};

// `s` as the application passed it; `per_thread_default`: it came through a
// _ptsz/_ptds entry point (0 then names the per-thread default stream).
StreamRef stream_ref(cudaStream_t s, bool per_thread_default);

// Whether work on the stream orders with the legacy default stream (a
// blocking stream: created without cudaStreamNonBlocking, or a per-thread
// default stream). The legacy stream itself answers false. A stream whose
// flags cannot be read counts as blocking (the cautious answer for
// host_work.h).
bool is_blocking(const StreamRef& s);

}  // namespace stage
}  // namespace gpuslack

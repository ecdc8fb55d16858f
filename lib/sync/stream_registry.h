// StreamRegistry: the streams a free must be fenced against.
//
// Note [Fence streams]: to free without synchronizing the device, the
// allocator records events that complete only after every piece of GPU work
// enqueued before the free (free_epochs.h). It need not record one on every
// stream: CUDA orders work on the legacy default stream after all earlier
// work of every blocking stream of the device (per-thread default streams
// are blocking streams), so one event on the legacy stream covers them all.
// Only non-blocking streams (cudaStreamNonBlocking) need their own event.
//
// The hooks of cudaStreamCreate*/cudaStreamDestroy keep this registry, and
// those of cuStreamCreate*/cuStreamDestroy_v2 for streams of the device's
// primary context (interpose/routes_streams.inc); a stream of a context a
// library made itself (cuCtxCreate) is not seen. A destroyed non-blocking
// stream may still have work queued; it stays a fence stream until an event
// recorded at its destruction completes.
//
// Thread safety: any thread; a mutex, taken on stream creation and
// destruction and when an epoch closes, never on a hook's fast path.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <vector>

namespace gpuslack {
namespace sync {

void stream_created(cudaStream_t stream, int device, unsigned int flags);
// Before the stream is destroyed (its work may still be queued).
void stream_destroying(cudaStream_t stream);

// An event that owns its cudaEvent_t (destroyed with the last reference).
struct OwnedEvent {
  cudaEvent_t event = nullptr;
  OwnedEvent() = default;
  explicit OwnedEvent(cudaEvent_t e) : event(e) {}
  ~OwnedEvent();
  OwnedEvent(const OwnedEvent&) = delete;
  OwnedEvent& operator=(const OwnedEvent&) = delete;
};

// What a free epoch of `device` must be fenced against: events to record
// now on `streams` (the legacy default stream and every live non-blocking
// stream), and events already recorded on destroyed non-blocking streams
// whose work may still be queued (`drains`; the epoch keeps them alive).
// `held` keeps the registry locked until the Fences is gone: record the
// events first. A stream listed here may belong to another thread, which
// could otherwise destroy it between this answer and the record (an event
// recorded on a dead handle: undefined in CUDA; on the simulated device, a
// stream whose worker had exited, and a device synchronization that never
// returned); stream_destroying() waits instead.
struct Fences {
  std::vector<cudaStream_t> streams;
  std::vector<std::shared_ptr<OwnedEvent>> drains;
  std::unique_lock<std::mutex> held;
};
Fences fences(int device);

// Graph capture (Note [Frees during capture] in device_allocator.h): the
// hooks of cudaStreamBeginCapture/cudaStreamEndCapture report each capture;
// capturing() says whether any stream of the process is capturing now.
// In global capture mode any event query, synchronization or allocation
// from any thread would invalidate the capture, so the allocator asks this
// on every slow-path step. Lock-free read.
// A caller that found its own stream capturing (the C API asks the runtime
// on every call: Note [Capture without hooks] in device_allocator.h) makes
// capturing() true in its thread for the scope of a CaptureScope(true).
void capture_began(cudaStream_t stream);
void capture_ended(cudaStream_t stream);
bool capturing();

class CaptureScope {
 public:
  explicit CaptureScope(bool capturing);
  ~CaptureScope();
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;

 private:
  bool previous_;
};

// Forgets everything (tests).
void reset_streams();

}  // namespace sync
}  // namespace gpuslack

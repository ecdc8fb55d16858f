// DrainProbes: how long the stream drain that a staged copy skipped would
// have blocked the caller — the estimate of "what the native call would
// have blocked" in the summary — measured without waiting for anything.
//
// At a staged copy on a busy stream, start() records a timing event (from
// the event pool, sync/event_pool.h) on the stream before the copy's own
// work: it completes when the stream's earlier work does, which is when the
// driver's drain would have returned. Its GPU timestamp becomes host time
// through a reference event per device, recorded on a private idle stream
// and polled for at most 50 us (re-done every minute, so that
// cudaEventElapsedTime's float milliseconds keep microsecond precision;
// never a long wait on a copy's path: a reference that does not complete in
// time is tried again 10 ms later); poll() resolves completed probes as
// later copies come by. So the figure is an
// estimate (reference error: the 50 us at most, typically microseconds),
// and probes not resolved when the summary is written are not in it (the
// summary says how many). On the simulated device, whose cudaMalloc and
// cudaMallocHost order all later work after all earlier work, a reference
// recorded while the device is busy cannot complete at once, and drains go
// unmeasured there more often than on a GPU.
//
// Thread safety: any thread; one mutex. The caller checks that no runtime
// error is pending and no graph is being captured.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "stage/stream_ref.h"
#include "sync/event_pool.h"

namespace gpuslack {
namespace stage {

struct DrainFigures {
  uint64_t probes = 0;     // drains measured
  uint64_t drained_ns = 0;  // their total length
  uint64_t pending = 0;    // probes not resolved yet
  uint64_t skipped = 0;    // busy streams not probed (too many pending, no event)
};

class DrainProbes {
 public:
  static constexpr size_t kMaxPending = 256;

  DrainProbes() = default;
  // Gives its probes' events back to the event pool (pending ones too) and
  // destroys its references' events and streams.
  ~DrainProbes();
  DrainProbes(const DrainProbes&) = delete;
  DrainProbes& operator=(const DrainProbes&) = delete;

  // `call_ns`: steady-clock ns when the copy was called.
  void start(const StreamRef& s, uint64_t call_ns);
  // Resolves up to a few completed probes.
  void poll();
  DrainFigures figures() const;

  static uint64_t now_ns();

 private:
  struct Probe {
    sync::PooledEvent event;  // of the stream's device
    uint64_t call_ns;
  };
  struct Reference {
    int device;
    cudaStream_t stream = nullptr;
    cudaEvent_t event = nullptr;
    uint64_t host_ns = 0;  // when the GPU reached `event`, in host time
    uint64_t next_try_ns = 0;  // no new calibration before this
  };
  Reference* reference_locked(int device);

  mutable std::mutex mu_;
  std::deque<Probe> pending_;
  std::vector<Reference> refs_;
  DrainFigures figures_;
};

}  // namespace stage
}  // namespace gpuslack

// Events for the staged copies, reused instead of made per copy (making one
// costs microseconds; a training step may stage hundreds of chunks).
//
// Events are created with cudaEventDisableTiming on the calling thread's
// current device and go back to that device's list. Recording one on a
// stream of another device fails: callers check event_record's result and
// fall back (staging_pool.h, host_work.h).
//
// Thread safety: any thread; one mutex, held for a push or a pop.
#pragma once

#include <cuda_runtime_api.h>

namespace gpuslack {
namespace pin {

struct PooledEvent {
  cudaEvent_t event = nullptr;
  int device = 0;
  explicit operator bool() const { return event != nullptr; }
};

// An event of `device` (the current device), or an empty one when the
// runtime cannot make one (its error is cleared: the caller checked that
// none was pending).
PooledEvent take_event(int device);
// Back to the pool. The event may still be pending: a later record
// replaces what it waits for.
void give_event(PooledEvent e);

}  // namespace pin
}  // namespace gpuslack

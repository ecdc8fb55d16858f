// The event pool: every CUDA event gpuslack records for itself comes from
// here and goes back here, reused instead of made anew (making one costs
// microseconds; a training step may stage hundreds of chunks, fence a batch
// of frees, time collectives).
//
// Users: the free epochs (sync/free_epochs.h) and the staged copies
// (stage/staging_pool.h, stage/host_work.h, stage/staged_copy.h) take
// kNoTiming events to fence work; the collectives (nccl/collectives.h)
// take kTiming events to read cudaEventElapsedTime.
//
// One free list per device and kind. An event can be recorded only on a
// stream of the device it was made on, so take_event(device) hands out an
// event of `device` only: one from that device's list, or one made now on
// it (the calling thread's current device is switched for the call and
// back when it is another one; callers whose stream belongs to the current
// device never switch). give_event() puts it back on the list of the device
// and kind it was taken for. A given-back event may still be pending: the
// next record replaces what it waits for, so someone still waiting on it
// after giving it back only waits longer, never for less. Events are never
// destroyed: a list's size is the most events of its kind in use at once on
// that device. Devices outside [0, kMaxEventDevices) get no events.
//
// Errors: a creation that fails returns an empty event and leaves no error
// of its own behind when none was pending before (one that was stays the
// runtime's to report).
//
// Process exit: the lists are leaked on purpose, never torn down, so the
// pool serves calls made during exit (the summary resolves pending
// collectives from an atexit handler).
//
// Fork (Note [Fork] in session/session.cc): events_after_fork_child(), from
// the session's atfork child handler, forgets the parent's events without
// reading the lists or taking the lock (another thread may have held it at
// the fork); the child's events are its own.
//
// Thread safety: any thread; one mutex, held for a push or a pop, never
// across a runtime call.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace gpuslack {
namespace sync {

inline constexpr int kMaxEventDevices = 64;

enum class EventKind : uint8_t {
  kNoTiming,  // cudaEventDisableTiming: fences (record, query, synchronize)
  kTiming,    // cudaEventDefault: also cudaEventElapsedTime
};

struct PooledEvent {
  cudaEvent_t event = nullptr;
  int device = -1;
  EventKind kind = EventKind::kNoTiming;
  explicit operator bool() const { return event != nullptr; }
};

// An event of `device` and `kind`, or an empty one when none can be made.
PooledEvent take_event(int device, EventKind kind);
// Back to its device's list (an empty one is ignored).
void give_event(PooledEvent e);

// In the child of a fork, from its atfork handler: takes no lock, reads
// nothing, allocates nothing.
void events_after_fork_child();

namespace testing {
// Tests of Note [Fork] only: runs during(arg) while holding the pool's lock.
void while_holding_event_pool_lock(void (*during)(void*), void* arg);
// How many events wait on the free list of `device` and `kind`.
size_t free_events(int device, EventKind kind);
}  // namespace testing

}  // namespace sync
}  // namespace gpuslack

// A pool of CUDA events for timing collectives (nccl/collectives.h), one
// free list per device: an event is recorded only on a stream of the device
// it was made on. Events are made with default flags (timing on) the first
// time a device's list runs dry, and come back once the pair they timed has
// been resolved; they are never destroyed (a pool's size is the most timed
// collectives in flight at once, bounded by the pending rings).
//
// Making an event switches the calling thread's current device for the
// call and switches it back.
//
// Thread safety: any thread; one small mutex guards the lists (taken only by
// timed calls, 1 in collective_timing_every, and at report time).
#pragma once

#include <cuda_runtime_api.h>

#include <mutex>

namespace gpuslack {
namespace ledger {

// An event of `device`, or nullptr when none can be made.
cudaEvent_t acquire_event(int device);
void release_event(int device, cudaEvent_t event);

// In the child of a fork (collectives_after_fork_child): the parent's events
// are not the child's; forgets them without reading the lists or taking the
// lock, which another thread may have held at the fork.
void events_after_fork_child();

// Tests of Note [Fork] only: runs `during` while holding the pool's lock.
template <typename F>
void events_while_holding_lock(F&& during);

namespace detail {
std::mutex& events_mutex();
}

template <typename F>
void events_while_holding_lock(F&& during) {
  std::lock_guard<std::mutex> lock(detail::events_mutex());
  during();
}

}  // namespace ledger
}  // namespace gpuslack

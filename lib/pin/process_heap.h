// The process's pinned heap: one PinnedHeap (pinned_heap.h), made on the
// first cudaMallocHost/cudaHostAlloc (or staging request) when
// GPUSLACK_CONF's `pin` is on, with chunks of `pinned_chunk_mb` and at most
// `pinned_cap_mb` pinned (0: a quarter of the host's physical memory).
//
// Pass-through: with pin:false, pinned_heap() is nullptr and the hooks make
// the runtime's own calls; so too in the child of a fork of a process that
// made the heap (See Note [The allocators after a fork]). Pointers the heap
// does not own go to the real cudaFreeHost: existing_pinned_heap()->owns()
// tells.
//
// Thread safety: any thread. pinned_heap() makes the heap once (a
// thread-safe static); existing_pinned_heap() reads a published pointer.
#pragma once

#include <cstdint>

#include "pin/pinned_heap.h"

namespace gpuslack {
namespace pin {

// Whether the configuration serves pinned allocations from the heap.
bool pin_selected();
// The heap, made on first use; nullptr when pin is off.
PinnedHeap* pinned_heap();
// The heap if it was made; nullptr otherwise (never makes one).
PinnedHeap* existing_pinned_heap();

// The cap pinned_cap_mb:0 stands for: a quarter of physical memory.
uint64_t default_pinned_cap();

}  // namespace pin
}  // namespace gpuslack

// PinnedStats: what the pinned host heap reports (PinnedHeap::stats()), read
// by the summary and the C API. Plain data, no dependency.
#pragma once

#include <cstdint>

namespace gpuslack {
namespace pin {

struct PinnedStats {
  uint64_t pinned = 0;          // bytes pinned now: every chunk the heap holds
  uint64_t peak_pinned = 0;
  uint64_t live = 0;            // bytes in live blocks (usable sizes)
  uint64_t peak_live = 0;
  uint64_t cap = 0;             // the most the heap pins (pinned_cap_mb)
  uint64_t chunk_size = 0;      // pinned_chunk_mb, in bytes
  uint64_t chunks = 0;          // held now
  uint64_t chunks_allocated = 0;  // over the heap's life
  uint64_t chunks_released = 0;   // by trims
  uint64_t allocations = 0;     // served from the heap
  uint64_t frees = 0;           // cudaFreeHost calls served without a device sync
  uint64_t pending_free = 0;    // freed blocks (a count) not reusable yet
  uint64_t epochs = 0;          // batches of frees fenced (event sets recorded)
  uint64_t deferred_frees = 0;  // made during a graph capture, fenced after it
  uint64_t cap_hits = 0;        // allocations the cap left to the runtime
  uint64_t fallbacks = 0;       // allocations left to the runtime for any reason (cap hits included)
  uint64_t passthrough = 0;     // flags the heap does not serve (write-combined, unknown)
  uint64_t trimmed = 0;         // bytes given back by trims
  double stall_s = 0;           // waited for pending frees' fences (polling before pinning more, and at the cap)
};

}  // namespace pin
}  // namespace gpuslack

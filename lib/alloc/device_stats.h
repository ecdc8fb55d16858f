// DeviceStats: what one device's VMM allocator reports (DeviceAllocator::
// stats()), read by the summary and the C API. Plain data, no dependency.
#pragma once

#include <cstdint>

namespace gpuslack {
namespace alloc {

// DeviceStats::created_without's bits.
inline constexpr unsigned kCreatedWithoutPosixFd = 1, kCreatedWithoutRdma = 2;

struct DeviceStats {
  uint64_t allocated = 0;       // live blocks (rounded sizes), pending frees excluded
  uint64_t peak_allocated = 0;
  uint64_t reserved = 0;        // physically mapped
  uint64_t peak_reserved = 0;
  uint64_t largest_free = 0;    // largest free virtual range
  uint64_t pending_free = 0;    // freed blocks not reusable yet
  uint64_t allocations = 0;
  uint64_t frees = 0;
  uint64_t granules_mapped = 0;    // over the allocator's life
  uint64_t granules_unmapped = 0;
  uint64_t chunks_mapped = 0;      // physical handles created (one or more granules each)
  uint64_t chunks_unmapped = 0;
  uint64_t reservations = 0;       // virtual ranges reserved (more when the address space ran out)
  uint64_t epochs = 0;             // free epochs closed (event sets recorded)
  uint64_t oom_retries = 0;
  uint64_t failed_allocations = 0;
  double stall_s = 0;              // waiting for pending frees under pressure
  uint64_t fence_waits = 0;        // misses that waited (bounded) for a pending fence instead of mapping
  uint64_t fence_waits_served = 0; // of those, the ones a completed fence then served
  double fence_wait_s = 0;         // time in those bounded waits
  uint64_t stream_reuses = 0;      // served from a block freed on the same stream
  uint64_t deferred_frees = 0;     // made during a graph capture, fenced after it
  uint64_t capture_fallbacks = 0;  // during a capture, left to the runtime
  // Driver calls that may synchronize the device (cuda.h's \note_sync;
  // Note [Calls that may synchronize] in granule_map.h).
  uint64_t unmap_calls = 0;        // cuMemUnmap
  uint64_t set_access_calls = 0;   // cuMemSetAccess
  // What the driver refused at cuMemCreate and chunks are created without
  // (kCreatedWithout* bits; 0: nothing).
  unsigned created_without = 0;
};

}  // namespace alloc
}  // namespace gpuslack

// PinnedChunks: the pinned memory under the pinned heap. Large chunks from
// the runtime's own cudaHostAlloc, carved into the extents jemalloc asks
// its hooks for (pinned_arena.h), given back to the runtime only whole.
//
// Note [Pinned chunks]: a chunk is cudaHostAlloc(pinned_chunk_mb,
// cudaHostAllocPortable | cudaHostAllocMapped), not mmap + cudaHostRegister.
// On the simulated device the two cost the same (bench/README.md, "Pinned
// heap": both are host_alloc_us plus pinning at host_pin_gbps), so the
// choice rests on what the application sees. A block of a cudaHostAlloc'd
// chunk is the memory a native cudaHostAlloc returns: cudaHostGetFlags
// answers for it, its device pointer is its host pointer wherever unified
// addressing holds (for registered memory that needs
// cudaDevAttrCanUseHostPointerForRegisteredMem, which some platforms lack),
// and portable + mapped serve every flag combination the heap takes.
// Registration would only let the heap choose the pages (huge pages): worth
// measuring on a real GPU, where pinning cost is per page.
//
// Growth is bounded by the cap: a chunk that would take the pinned total
// past it is not allocated (a smaller one, just large enough for the
// request, is tried first). A failed cudaHostAlloc (out of pinnable memory,
// an injected fault) leaves nothing behind, not even the runtime's
// last-error state.
//
// Releasing: release_empty() gives back, with cudaFreeHost, every chunk all
// of whose bytes jemalloc has given back (trim, pinned_heap.h). The
// runtime's cudaFreeHost synchronizes the device: only explicit trims and
// an allocation at the cap ever release.
//
// Not thread-safe: the heap serializes every call, the hooks' included
// (they run inside its calls into jemalloc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

#include "base/range_set.h"

namespace gpuslack {
namespace pin {

class PinnedChunks {
 public:
  // The flags of every chunk: a block serves any of Default, Portable, Mapped.
  static const unsigned int kChunkFlags;

  PinnedChunks(uint64_t chunk_size, uint64_t cap) : chunk_size_(chunk_size), cap_(cap) {}
  // Gives every chunk back (the heap destroys its arena first).
  ~PinnedChunks();
  PinnedChunks(const PinnedChunks&) = delete;
  PinnedChunks& operator=(const PinnedChunks&) = delete;

  // An extent of `size` bytes aligned to `alignment` (a power of two) from
  // the free ranges of the chunks held; if none holds it and growing is
  // allowed (set_grow), from a new chunk. Zeroed if `zero`. nullptr when
  // neither (cap_refused() says whether the cap was why).
  void* take(size_t size, size_t alignment, bool zero);
  // Takes back an extent of take() (or a piece of one, or several
  // adjacent ones of one chunk merged: whatever jemalloc hands back).
  void give(void* addr, size_t size);
  // Whether [addr, addr + size) lies inside one chunk.
  bool in_one_chunk(const void* addr, size_t size) const;
  // Whether `a` and `b` lie in the same chunk.
  bool same_chunk(const void* a, const void* b) const;
  bool contains(const void* p) const { return chunk_of(p) != nullptr; }
  // Gives back every chunk no byte of which is taken; the bytes released.
  uint64_t release_empty();

  void set_grow(bool grow) { grow_ = grow; }
  bool cap_refused() const { return cap_refused_; }
  void clear_cap_refused() { cap_refused_ = false; }

  // What pinning the chunk an extent of `size` would take has cost: the
  // seconds per byte of the last chunk pinned, times that chunk's size; 0
  // before any.
  double pin_seconds(size_t size) const;

  uint64_t pinned() const { return pinned_; }
  uint64_t peak_pinned() const { return peak_pinned_; }
  uint64_t chunk_size() const { return chunk_size_; }
  uint64_t cap() const { return cap_; }
  size_t count() const { return chunks_.size(); }
  uint64_t allocated_total() const { return allocated_total_; }
  uint64_t released_total() const { return released_total_; }
  // The lowest and highest address of any chunk held so far (an owns()
  // test without the heap's lock can reject everything outside).
  uintptr_t low() const { return low_; }
  uintptr_t high() const { return high_; }

 private:
  struct Chunk {
    uint64_t size = 0;
    base::RangeSet free;  // offsets in the chunk
  };
  using Map = std::map<uintptr_t, Chunk>;

  const Map::value_type* chunk_of(const void* p) const;
  Map::value_type* chunk_of(const void* p);
  void* take_from(Map::value_type& chunk, size_t size, size_t alignment);
  Map::value_type* grow(size_t size, size_t alignment);  // a new chunk, or nullptr

  uint64_t chunk_size_;
  uint64_t cap_;
  bool grow_ = true;
  bool cap_refused_ = false;
  Map chunks_;  // by base address
  uint64_t pinned_ = 0;
  uint64_t peak_pinned_ = 0;
  uint64_t allocated_total_ = 0;
  uint64_t released_total_ = 0;
  double seconds_per_byte_ = 0;  // of the last cudaHostAlloc of a chunk
  uintptr_t low_ = UINTPTR_MAX;
  uintptr_t high_ = 0;
};

}  // namespace pin
}  // namespace gpuslack

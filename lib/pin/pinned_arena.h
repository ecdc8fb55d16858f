// PinnedArena: a jemalloc arena of gpuslack's private instance
// (private_heap.h) whose extents are pinned memory from PinnedChunks.
//
// jemalloc does what it is good at (size classes, slabs, coalescing free
// extents, little fragmentation) over memory it gets only through this
// arena's extent hooks (pinned_arena.cc), which keep pinned memory where
// the heap wants it:
//   alloc     carves extents from pinned chunks (a new chunk when allowed);
//   dalloc    refuses (jemalloc keeps the extent: pinned memory is never
//             given back implicitly), except inside purge() and the
//             destructor, where it hands the extent back to its chunk;
//   commit    succeeds (pinned memory is always committed); decommit,
//             purge_lazy and purge_forced refuse: pinned pages stay pinned
//             and keep their contents;
//   split     allows splitting within one chunk;
//   merge     refuses extents of different chunks: one cudaHostAlloc
//             region cannot be freed together with another.
// Decay is off for this arena (dirty_decay_ms and muzzy_decay_ms -1):
// jemalloc never purges on its own, so it calls the hooks only inside the
// heap's own calls, under the heap's lock.
//
// jemalloc's metadata for this arena (its base blocks: extent descriptors,
// bin headers) lives in memory from these hooks, that is, in pinned
// chunks. That is fine: pinned host memory is host memory, readable and
// writable by the CPU like any other. Those blocks are never given back,
// so the chunk that holds them is never released by a trim.
//
// Thread safety: none of its own; the heap serializes every call.
#pragma once

#include <cstddef>
#include <string>

struct extent_hooks_s;

namespace gpuslack {
namespace pin {

class PinnedChunks;

class PinnedArena {
 public:
  explicit PinnedArena(PinnedChunks* chunks) : chunks_(chunks) {}
  // Destroys the arena (every block must have been freed), giving all its
  // extents back to the chunks.
  ~PinnedArena();
  PinnedArena(const PinnedArena&) = delete;
  PinnedArena& operator=(const PinnedArena&) = delete;

  // Creates the arena; jemalloc takes its first metadata block from the
  // hooks, so this pins the first chunk. False (with *why) if that failed:
  // create() may be tried again later.
  bool create(std::string* why);
  bool created() const { return hooks_ != nullptr; }

  // A block of at least `bytes`, page-aligned (as the runtime's pinned
  // allocations are: code may do O_DIRECT into them), or nullptr.
  void* allocate(size_t bytes);
  void free(void* p);
  size_t usable_size(const void* p) const;
  // Gives every free extent back to its chunk (arena.<i>.purge with dalloc
  // accepted), so that chunks no block uses can be released.
  void purge();

 private:
  friend struct ArenaHooks;

  PinnedChunks* chunks_;
  extent_hooks_s* hooks_ = nullptr;  // ArenaHooks, in pinned_arena.cc
  unsigned index_ = 0;
  bool accept_dalloc_ = false;
};

}  // namespace pin
}  // namespace gpuslack

// StreamCache: blocks freed in stream order, waiting to be handed out again
// on the stream that freed them.
//
// cudaFreeAsync(p, s) (and the C API's gpuslack_device_free) promise less
// than cudaFree: the memory may be reused by later work on `s` at once,
// because work on one stream runs in order, and by anything else only
// after the work enqueued on `s` before the free has completed. So a block
// freed on `s` waits here, unfenced, and the next allocation of the same
// (rounded) size on `s` takes it back: no event, no driver call, no
// BlockManager operation. That is the allocator's cached path.
//
// Blocks leave for everyone else by flush(): the caller fences them with
// one event on their stream (FreeEpochs::close_on) and they reach
// BlockManager once it completes. The allocator flushes a stream whose
// cache holds too many blocks, and every stream before it maps new memory,
// so cached blocks never make the device map more than it needs.
//
// Note [A stream's small blocks at any size]: a stream's cached blocks come
// back to it at their own rounded size only, and a small request (<= 1 MiB)
// that no page in use and no mapped free range can hold used to fence
// every stream's cache and map a new small-pool page, while the stream
// cached small blocks of other sizes that stream order lets it reuse at
// once. On the recorded training traces that left one to three pages more
// than PyTorch's expandable segments at the peak (cnn-train-bf16 20 MiB of
// small pool against 14, gpt-train-bf16 8 against 6; bench/README.md,
// "Small blocks at any size for their stream"): PyTorch's small pool is per
// stream too, but best-fits any free block of it, splitting it and
// joining free neighbours. So, before such a miss fences anything,
// take_joined() offers the stream's small cached blocks as one pool: a
// run of blocks that lie one after another in one page (each where the
// previous ends; the allocator asks BlockManager whether they share a
// page), fewest bytes to spare first, lowest address among equals, one
// block being a run of one. The allocator joins the run into one block
// in place and splits off what the request does not need, which stays
// cached on the stream at its new size (BlockManager::join_next, split:
// live blocks reshaped within their page, its free space and index
// untouched, so a small block never leaves the small pool: Note [The small
// pool apart] in block_manager.h). Nothing else changes: every piece stays
// freed in the allocator's books until the request takes it (range checks
// see it as freed, a second free of it or of a joined block's interior
// start is refused), no event is recorded or queried and nothing is mapped
// (stream order is the fence, as for the same-size reuse), the fronts'
// blocks of the stream are drained here first (Note [Front caches] in
// device_allocator.h), and, as the cached path, it is never used during a
// capture. Bounded: one pass over the stream's small blocks, at most
// kStreamCacheBlocks and what its fronts cached, sorted by address, only
// on a miss that would otherwise fence and map.
//
// A stream is keyed by its handle; the legacy default stream is 0 (callers
// normalize cudaStreamLegacy). The per-thread default stream must not come
// here: one handle names a different stream in each thread.
//
// Plain data, no CUDA calls, no locking: the allocator serializes.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gpuslack {
namespace alloc {

class StreamCache {
 public:
  // Blocks larger than `large_above` are kept apart (take_larger() visits
  // only them), and their size buckets go when they empty.
  explicit StreamCache(uint64_t large_above) : large_above_(large_above) {}

  // Caches the block at `offset` of (rounded) `size`, freed on `stream`.
  // Returns how many blocks `stream` now holds.
  size_t put(cudaStream_t stream, uint64_t offset, uint64_t size);
  // A cached block of exactly `size` freed on `stream`, or nullopt.
  std::optional<uint64_t> take(cudaStream_t stream, uint64_t size);

  // Note [A stream's small blocks at any size]: the small blocks (of
  // large_above and less) `stream` caches, appended to `out` as (offset,
  // size) by address; and one of them removed (false if not cached).
  using Blocks = std::vector<std::pair<uint64_t, uint64_t>>;
  void small_blocks(cudaStream_t stream, Blocks* out) const;
  bool remove(cudaStream_t stream, uint64_t offset, uint64_t size);

  // Removes every large block of `stream`; appends their offsets to `out`.
  void take_large(cudaStream_t stream, std::vector<uint64_t>* out);
  // Removes every block of `stream`; appends their offsets to `out`.
  void flush(cudaStream_t stream, std::vector<uint64_t>* out);
  // The streams that hold blocks.
  std::vector<cudaStream_t> streams() const;

  uint64_t bytes() const { return bytes_; }
  uint64_t bytes_of(cudaStream_t stream) const {  // what `stream` caches
    auto s = streams_.find(stream);
    return s == streams_.end() ? 0 : s->second.bytes;
  }
  size_t blocks() const { return blocks_; }
  uint64_t small_bytes_of(cudaStream_t stream) const {  // of that, in blocks of large_above and less
    auto s = streams_.find(stream);
    return s == streams_.end() ? 0 : s->second.small_bytes;
  }

 private:
  struct PerStream {
    std::unordered_map<uint64_t, std::vector<uint64_t>> by_size;  // size -> offsets, LIFO
    std::unordered_map<uint64_t, std::vector<uint64_t>> large;    // the same, above large_above_
    size_t blocks = 0;
    uint64_t bytes = 0;
    uint64_t small_bytes = 0;  // in by_size
  };
  uint64_t large_above_;
  std::unordered_map<cudaStream_t, PerStream> streams_;
  uint64_t bytes_ = 0;
  size_t blocks_ = 0;
};

}  // namespace alloc
}  // namespace gpuslack

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
// back to it at their own rounded size only. A small request (<= 1 MiB)
// that no page in use and no mapped free range could hold used to fence
// every stream's cache and map a new small-pool page, while the stream
// itself cached small blocks of other sizes, often beside the free ranges
// of their pages, that stream order lets it reuse at once. On the recorded
// training traces that kept one to three pages more than PyTorch's
// expandable segments at the peak (small pool at the peak reserved:
// cnn-train-bf16 20 MiB against 14, gpt-train-bf16 8 against 6;
// bench/README.md, "Small blocks at any size for their stream"). PyTorch's
// small pool is per stream too, but best-fits any free block of it,
// splitting it, and a freed block joins its free neighbours. So, on such a
// miss, after what the GPU is done with is taken back and before anything
// is fenced, the allocator offers the stream's small cached blocks
// (small_blocks(), its fronts' drained into them first: Note [Front
// caches] in device_allocator.h) to BlockManager::allocate_joined: each
// grown over the free ranges beside it in its page, and merged with the
// next where they meet, they make extents; the block goes at the start of
// the smallest extent that holds it (lowest address among equals). The
// cached blocks it covers leave the cache (remove()); of one it covers in
// part the rest stays a block of its own, cached on the stream at its new
// size. Everything happens within one page, so a small block never leaves
// the small pool (Note [The small pool apart] in block_manager.h). The
// guarantees stay: a cached block is freed in the allocator's books until
// a request takes it (range checks see it freed, a second free of it is
// refused, and the start of a block joined into another is no block's);
// the free ranges it takes were free for anyone, and what it leaves of the
// stream's blocks is still the stream's alone; no event is recorded or
// queried and nothing is mapped (stream order is the fence, as for the
// same-size reuse); never during a capture (the miss path returns before).
// Bounded: one pass over the stream's small blocks in address order (at
// most kStreamCacheBlocks and what its fronts cached; StreamCache keeps
// them by address too, so nothing is sorted), at most two free-range
// lookups each and none in a page whose free bytes and the stream's
// blocks there cannot hold the request, only on a miss that would
// otherwise fence and map; the cached pair is untouched. Measured, it
// costs such a miss a few microseconds, which shows in the allocation p99
// of a trace with many (bench/README.md, same section).
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

#include "base/absl_containers.h"

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

  // The small blocks (of large_above and less) `stream` caches, appended
  // to `out` as (offset, size) by address; and one of them removed (false
  // if not cached). See Note [A stream's small blocks at any size].
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
    // by_size's blocks again, by address: offset -> size (Note [A stream's
    // small blocks at any size]: read in address order, never sorted).
    absl::btree_map<uint64_t, uint64_t> small_by_address;
  };
  using Buckets = std::unordered_map<uint64_t, std::vector<uint64_t>>;
  // What take() and remove() share once `offset` (of `size`) left its
  // bucket: the bucket goes if large and empty, and the counts drop.
  void forget(PerStream* s, Buckets* buckets, Buckets::iterator bucket, uint64_t offset, uint64_t size);

  uint64_t large_above_;
  std::unordered_map<cudaStream_t, PerStream> streams_;
  uint64_t bytes_ = 0;
  size_t blocks_ = 0;
};

}  // namespace alloc
}  // namespace gpuslack

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

 private:
  struct PerStream {
    std::unordered_map<uint64_t, std::vector<uint64_t>> by_size;  // size -> offsets, LIFO
    std::unordered_map<uint64_t, std::vector<uint64_t>> large;    // the same, above large_above_
    size_t blocks = 0;
    uint64_t bytes = 0;
  };
  uint64_t large_above_;
  std::unordered_map<cudaStream_t, PerStream> streams_;
  uint64_t bytes_ = 0;
  size_t blocks_ = 0;
};

}  // namespace alloc
}  // namespace gpuslack

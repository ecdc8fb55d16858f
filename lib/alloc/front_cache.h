// FrontCache: one thread's blocks freed in stream order, handed back to it
// without the allocator's lock (DeviceAllocator's Note [Front caches]).
//
// Every block here has a record, from the moment the allocator lets the
// block in (adopt(), under its lock) until it takes the block out again
// (drain(), detach()): a record is either cached (freed on a stream, in
// that stream's list for its size) or live (handed out again by take()).
// Whoever holds the record decides a free: put() of a live record caches
// it, put() of a cached one is a double free (refused), put() of an
// address with no record here says so and the allocator decides. The
// allocator, meanwhile, counts every block with a record as allocated in
// its own books (BlockManager); the bytes cached here are what it
// subtracts from "allocated" (cached_bytes()) and what its range checks
// see as freed (find()).
//
// take() and put() are the cached pair: a lookup of the (stream, size)
// list (the last one used is remembered) and of the block's record, a
// vector push or pop, two counters. Bounded: at most Limits::blocks cached
// blocks and Limits::bytes cached bytes (over() says when to give some
// back), and Limits::records records, live or cached (adopt() refuses
// beyond).
//
// Plain data, no CUDA calls, no locking: its owner serializes (the
// allocator's per-thread front lock). The child of a fork never reads the
// parent's again, nor takes their locks (See Note [The allocators after a
// fork]): a thread of the parent may have been in the middle of one.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "base/absl_containers.h"

namespace gpuslack {
namespace alloc {

class FrontCache {
 public:
  struct Limits {
    size_t blocks = 64;            // cached blocks at most
    uint64_t bytes = 64ull << 20;  // cached bytes at most
    size_t records = 1024;         // records (live and cached) at most
    // Records of blocks above this size are counted apart, so that
    // draining only those finds at once when there are none (none counted
    // by default).
    uint64_t large_above = UINT64_MAX;
  };
  explicit FrontCache(Limits limits) : limits_(limits) {}
  FrontCache() : FrontCache(Limits{}) {}

  // A block the allocator took as freed on `stream` joins, cached. False
  // (nothing changes) when that would pass a limit. `addr` must have no
  // record here.
  bool adopt(cudaStream_t stream, uint64_t addr, uint64_t size);
  // The block of `size` freed last on `stream`, live again with
  // `requested` bytes (for the range checks), or nullopt.
  std::optional<uint64_t> take(cudaStream_t stream, uint64_t size, uint64_t requested);
  enum class Put { kCached, kNoRecord, kFreedAlready };
  // Frees the block at `addr` on `stream`: cached if its record is live.
  Put put(uint64_t addr, cudaStream_t stream);
  // Past a limit: the owner should give cached blocks back (drain()).
  bool over() const { return cached_blocks_ > limits_.blocks || cached_bytes_ > limits_.bytes; }

  struct Record {
    uint64_t addr = 0, size = 0;
    uint64_t requested = 0;  // live: the bytes asked for
    bool cached = false;
  };
  std::optional<Record> find(uint64_t addr) const;
  // The live record of `addr` leaves (the block stays live, the
  // allocator's alone): true and *out set; false (nothing changes) for a
  // cached record or none.
  bool detach(uint64_t addr, Record* out);

  struct Drained {
    cudaStream_t stream;
    uint64_t addr, size;
  };
  // Cached blocks leave, oldest first in each list: every one, or those
  // freed on `stream`, or of those only the ones larger than `larger_than`
  // (at once when that is Limits::large_above and no such block has a
  // record).
  void drain(std::vector<Drained>* out);
  void drain(cudaStream_t stream, std::optional<uint64_t> larger_than, std::vector<Drained>* out);
  // Everything leaves: the cached blocks (as drain()) and the live records
  // (appended to `live`). The cache is empty after.
  void detach_all(std::vector<Drained>* cached, std::vector<Record>* live);

  uint64_t cached_bytes() const { return cached_bytes_; }
  size_t cached_blocks() const { return cached_blocks_; }
  size_t records() const { return index_.size(); }
  // The fewest cached bytes since the last call (the most allocated, seen
  // from here), then restarts from now: how the allocator keeps its peak.
  uint64_t take_low_water() {
    uint64_t low = low_water_;
    low_water_ = cached_bytes_;
    return low;
  }
  // Counted here since the last call, then zero: take()s and put()s.
  struct Counts {
    uint64_t allocations = 0, frees = 0;
  };
  Counts take_counts() { return std::exchange(counts_, Counts{}); }

 private:
  using Key = std::pair<cudaStream_t, uint64_t>;  // stream, size
  using List = std::vector<uint32_t>;              // record slots, oldest first
  List* list(cudaStream_t stream, uint64_t size, bool make);
  void forget(uint32_t slot);  // the record's slot is free
  void drain_list(cudaStream_t stream, List* list, std::vector<Drained>* out);

  Limits limits_;
  std::vector<Record> slots_;
  std::vector<uint32_t> free_slots_;
  absl::flat_hash_map<uint64_t, uint32_t> index_;  // addr -> slot
  // Records (live or cached) above limits_.large_above: counted where
  // records come and go, so that the cached pair (take, put) pays nothing.
  size_t large_records_ = 0;
  absl::flat_hash_map<Key, List> lists_;
  // The list used last (lists_ moves its values when it grows or shrinks:
  // cleared then).
  Key last_key_{};
  List* last_ = nullptr;
  uint64_t cached_bytes_ = 0, low_water_ = 0;
  size_t cached_blocks_ = 0;
  Counts counts_;
};

}  // namespace alloc
}  // namespace gpuslack

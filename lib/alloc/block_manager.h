// BlockManager: which bytes of one address range are handed out, as
// blocks, and which are free.
//
// The allocator reserves virtual address space and maps physical memory
// under it; BlockManager decides, in offsets within that space, where each
// block goes. It knows nothing of CUDA, streams or mapping.
//   - Every size is rounded up to 512 bytes, every offset a multiple of 512.
//   - Small requests (<= 1 MiB) are packed into 2 MiB small-pool pages, so
//     small short-lived blocks never split the space large blocks need.
//   - Large requests take the best fit (smallest free range that holds
//     them, lowest address among equals) of the address-ordered free
//     ranges, and a freed block merges with its free neighbours at once:
//     two free ranges are never adjacent (RangeSet).
//   - A small-pool page goes back to the large space when its last block
//     is freed.
//
// Plain data, no locking: the caller serializes. check() verifies every
// invariant (blocks never overlap, free and used bytes partition the space,
// everything freed has coalesced) for tests and debug builds.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "alloc/range_set.h"

namespace gpuslack {
namespace alloc {

class BlockManager {
 public:
  static constexpr uint64_t kAlignment = 512;
  static constexpr uint64_t kSmallLimit = 1ull << 20;
  static constexpr uint64_t kPageSize = 2ull << 20;

  // Manages [0, capacity), capacity rounded down to kAlignment.
  explicit BlockManager(uint64_t capacity);

  // The offset of a new block of at least `bytes` (0 bytes: a 512-byte
  // block), or nullopt if no free range holds it.
  std::optional<uint64_t> allocate(uint64_t bytes);
  // Frees the block that starts at `offset`; returns its (rounded) size, or
  // 0 if no live block starts there (nothing changes).
  uint64_t release(uint64_t offset);
  // The (rounded) size of the live block at `offset`, 0 if none.
  uint64_t size_of(uint64_t offset) const;
  // The live block holding `offset` (anywhere inside it): {start, size}.
  std::optional<std::pair<uint64_t, uint64_t>> block_containing(uint64_t offset) const;

  uint64_t capacity() const { return capacity_; }
  uint64_t allocated() const { return allocated_; }  // live blocks, rounded sizes
  uint64_t largest_free() const { return large_free_.largest(); }
  size_t small_pages() const { return pages_.size(); }
  // The large space's free ranges (where a new large block or page can go).
  const RangeSet& large_free() const { return large_free_; }

  std::string check() const;

  static uint64_t round_up(uint64_t bytes) {
    return bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
  }

 private:
  struct Page {
    RangeSet free;
    uint64_t used = 0;
  };
  std::optional<uint64_t> allocate_small(uint64_t size);
  uint64_t release_small(std::map<uint64_t, uint64_t>::iterator block);

  uint64_t capacity_;
  uint64_t allocated_ = 0;
  RangeSet large_free_;
  std::map<uint64_t, uint64_t> large_live_;  // offset -> size: large blocks and pages
  std::map<uint64_t, Page> pages_;           // page offset -> its small blocks' free space
  std::map<uint64_t, uint64_t> small_live_;  // offset -> size
};

}  // namespace alloc
}  // namespace gpuslack

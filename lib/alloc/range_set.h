// RangeSet: the free ranges of one address range, always coalesced, with
// best-fit lookup.
//
// The allocator's large blocks are carved from reserved virtual address
// space; RangeSet is the free list of such a space, in offsets. Two indexes
// over the same ranges: by address (to merge a freed range with its
// neighbours at once, so two free ranges are never adjacent) and by
// (size, address) (to find the smallest range that fits, lowest address
// among equals, in O(log n)).
//
// Plain data, no CUDA, no locking: the caller serializes. check() verifies
// every invariant, for tests and debug builds.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace gpuslack {
namespace alloc {

class RangeSet {
 public:
  // Adds [offset, offset + size) as free, merging it with free neighbours.
  // The range must not overlap a free range (returns false and changes
  // nothing if it does, or if size is 0).
  bool insert(uint64_t offset, uint64_t size);

  // Takes `size` bytes from the smallest free range that holds them (lowest
  // address among equals), from its start; the rest stays free. nullopt if
  // no range is large enough.
  std::optional<uint64_t> take_best_fit(uint64_t size);

  // Takes exactly [offset, offset + size), which must lie inside one free
  // range (what is left on either side stays free). False otherwise.
  bool take(uint64_t offset, uint64_t size);

  // The free range containing `offset`, if any: {start, size}.
  std::optional<std::pair<uint64_t, uint64_t>> containing(uint64_t offset) const;

  uint64_t total() const { return total_; }
  uint64_t largest() const { return by_size_.empty() ? 0 : by_size_.rbegin()->first; }
  size_t count() const { return by_address_.size(); }
  const std::map<uint64_t, uint64_t>& ranges() const { return by_address_; }

  // "" when every invariant holds, else the first violation: the indexes
  // agree, ranges are non-empty, disjoint, never adjacent, and total() is
  // their sum.
  std::string check() const;

 private:
  void add(uint64_t offset, uint64_t size);
  void remove(std::map<uint64_t, uint64_t>::iterator it);

  std::map<uint64_t, uint64_t> by_address_;          // offset -> size
  std::set<std::pair<uint64_t, uint64_t>> by_size_;  // (size, offset)
  uint64_t total_ = 0;
};

}  // namespace alloc
}  // namespace gpuslack

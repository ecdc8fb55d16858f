// RangeSet: the free ranges of one address range, always coalesced, with
// best-fit lookup.
//
// The allocator's large blocks are carved from reserved virtual address
// space; RangeSet is the free list of such a space, in offsets. Two indexes
// over the same ranges: by address (to merge a freed range with its
// neighbours at once, so two free ranges are never adjacent) and by
// (size, address) (to find the smallest range that fits, lowest address
// among equals, in O(log n) amortized).
//
// Built for the allocator's cached path (BlockManager keeps one RangeSet for
// the large space and one per small-pool page, and every allocation and
// free changes one). The indexes are B-trees (absl::btree_map/btree_set):
// a search reads a few nodes of contiguous keys, not one heap node per key.
// What costs is changing an index, so the layout is chosen for the common
// changes to make as few as they can:
//   - The address index is keyed by each range's END (end -> start): taking
//     from a range's start, and freeing a block that merges with the range
//     after it, keep that end, so they update a value in place instead of
//     erasing and inserting a key. Taking from the start is all that
//     take_best_fit does, and an allocation freed back is that merge.
//   - The size index drops stale keys lazily (Note [Stale size keys]): a
//     range that shrinks or merges leaves its old (size, offset) key behind
//     instead of erasing it, and a lookup that meets such a key drops it
//     then. An allocation freed back finds its range's old key still
//     there, so an alloc+free pair often changes neither index's shape
//     (bench/alloc_latency_bench.cc: 8 MiB pairs ~95 -> ~70 ns).
//   - The size index holds a sentinel (0, 0) that no lookup matches, so it
//     is never emptied: an empty B-tree frees its root node, which the next
//     insert would allocate again.
//
// Note [Stale size keys]: by_size_ holds the key (size, start) of every
// free range, the sentinel, and stale keys (of no range). A key is stale
// unless by_end_ has a range at that start of that size: one lookup, which
// a best-fit search makes anyway for the range it found. Stale keys are
// dropped when a best-fit search meets them; when the largest key is one
// (the largest range shrank), at once, so that largest() stays exact and
// O(1); and all of them when they outnumber the ranges (plus a slack),
// which bounds the index at twice the ranges and keeps every operation
// O(log n) amortized.
//
// Plain data, no CUDA, no locking: the caller serializes. check() verifies
// every invariant, for tests and debug builds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "base/absl_containers.h"

namespace gpuslack {
namespace base {

// Orders (size, offset)-like pairs, and asks absl's B-tree to scan a node's
// keys in order rather than bisect them (as it does by itself for integer
// keys): over a node's dozen or so keys, a predictable scan beats a binary
// search's mispredicted branches (alloc_latency_bench: ~20% of a pair).
struct PairLess {
  using absl_btree_prefer_linear_node_search = std::true_type;
  bool operator()(const std::pair<uint64_t, uint64_t>& a, const std::pair<uint64_t, uint64_t>& b) const {
    return a < b;
  }
};

class RangeSet {
  using ByEnd = absl::btree_map<uint64_t, uint64_t>;  // end -> start

 public:
  // The free ranges in address order, each an (offset, size) pair: a view of
  // the address index, to iterate, not to keep across a change of the set.
  class Ranges {
   public:
    class iterator {
     public:
      using iterator_category = std::input_iterator_tag;
      using value_type = std::pair<uint64_t, uint64_t>;
      using difference_type = std::ptrdiff_t;
      using reference = value_type;  // made on the fly: (start, end - start)
      struct pointer {
        value_type range;
        const value_type* operator->() const { return &range; }
      };

      value_type operator*() const { return {it_->second, it_->first - it_->second}; }
      pointer operator->() const { return {**this}; }
      iterator& operator++() {
        ++it_;
        return *this;
      }
      iterator operator++(int) {
        iterator old = *this;
        ++it_;
        return old;
      }
      bool operator==(const iterator& o) const { return it_ == o.it_; }
      bool operator!=(const iterator& o) const { return it_ != o.it_; }

     private:
      friend class Ranges;
      explicit iterator(ByEnd::const_iterator it) : it_(it) {}
      ByEnd::const_iterator it_;
    };

    iterator begin() const { return iterator(by_end_->begin()); }
    iterator end() const { return iterator(by_end_->end()); }
    size_t size() const { return by_end_->size(); }
    bool empty() const { return by_end_->empty(); }

   private:
    friend class RangeSet;
    explicit Ranges(const ByEnd* by_end) : by_end_(by_end) {}
    const ByEnd* by_end_;
  };

  RangeSet() { by_size_.emplace(0, 0); }

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
  // Takes whatever parts of [offset, offset + size) are in the set (none,
  // one range's or several); returns the bytes taken. O(log n) per range
  // touched.
  uint64_t take_overlap(uint64_t offset, uint64_t size);

  // Calls f(start, size) for the free ranges that hold `size` bytes, in
  // best-fit order (smallest first, lowest address among equals), at most
  // `limit` of them, while f returns true. f must not change the set. The
  // ranges stay as they are; stale size keys met on the way are dropped
  // (Note [Stale size keys]), so a search never walks them twice.
  template <class F>
  void for_each_fit(uint64_t size, size_t limit, F&& f) {
    if (size == 0) return;
    for (auto it = by_size_.lower_bound({size, 0}); it != by_size_.end() && limit > 0;) {
      if (!current(*it)) {
        it = by_size_.erase(it);
        continue;
      }
      --limit;
      if (!f(it->second, it->first)) return;
      ++it;
    }
  }

  // The free range containing `offset`, if any: {start, size}.
  std::optional<std::pair<uint64_t, uint64_t>> containing(uint64_t offset) const;

  uint64_t total() const { return total_; }
  // O(1): a B-tree keeps its rightmost leaf at hand (0 is the sentinel's).
  uint64_t largest() const { return by_size_.rbegin()->first; }
  size_t count() const { return by_end_.size(); }
  Ranges ranges() const { return Ranges(&by_end_); }

  // "" when every invariant holds, else the first violation: the indexes
  // agree (up to the stale keys allowed), ranges are non-empty, disjoint,
  // never adjacent, and total() is their sum.
  std::string check() const;

 private:
  // Takes [offset, offset + size) from the range at `range`, which holds it.
  void carve(ByEnd::iterator range, uint64_t offset, uint64_t size);
  // Whether a size-index key is a free range's (or the sentinel).
  bool current(const std::pair<uint64_t, uint64_t>& key) const;
  // Drops every stale size key if they outnumber the ranges (plus a slack):
  // Note [Stale size keys].
  void drop_stale_if_many();

  ByEnd by_end_;
  // (size, start) of every range, the sentinel (0, 0), and stale keys.
  absl::btree_set<std::pair<uint64_t, uint64_t>, PairLess> by_size_;
  uint64_t total_ = 0;
};

}  // namespace base
}  // namespace gpuslack

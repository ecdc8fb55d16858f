#include "alloc/range_set.h"

namespace gpuslack {
namespace alloc {

// by_end_ maps each range's end to its start; a change that keeps a range's
// end writes its start in place. by_size_'s key always changes with a
// range's size: its entry is erased and inserted again.

bool RangeSet::insert(uint64_t offset, uint64_t size) {
  if (size == 0 || offset + size < offset) return false;
  uint64_t end = offset + size;
  // The first range ending after `offset`: every range before it ends at or
  // before `offset`; it overlaps the new one if it starts before `end`.
  auto next = by_end_.upper_bound(offset);
  if (next != by_end_.end() && next->second < end) return false;
  bool merge_next = next != by_end_.end() && next->second == end;
  bool merge_prev = next != by_end_.begin() && std::prev(next)->first == offset;
  uint64_t start = offset;
  if (merge_prev) {
    auto prev = std::prev(next);
    start = prev->second;
    by_size_.erase({offset - start, start});
  }
  if (merge_next) {  // the merged range ends where `next` does: `next` grows down in place
    by_size_.erase({next->first - next->second, next->second});
    next->second = start;
    by_size_.emplace(next->first - start, start);
    if (merge_prev) by_end_.erase(std::prev(next));
  } else if (merge_prev) {  // `prev` grows up: its end, the key, changes
    auto after = by_end_.erase(std::prev(next));
    by_end_.emplace_hint(after, end, start);
    by_size_.emplace(end - start, start);
  } else {
    by_end_.emplace_hint(next, end, start);
    by_size_.emplace(size, start);
  }
  total_ += size;
  return true;
}

std::optional<uint64_t> RangeSet::take_best_fit(uint64_t size) {
  if (size == 0) return std::nullopt;
  auto fit = by_size_.lower_bound({size, 0});
  if (fit == by_size_.end()) return std::nullopt;
  auto [len, start] = *fit;
  by_size_.erase(fit);
  carve(by_end_.find(start + len), start, size);
  return start;
}

bool RangeSet::take(uint64_t offset, uint64_t size) {
  if (size == 0 || offset + size < offset) return false;
  auto range = by_end_.upper_bound(offset);
  if (range == by_end_.end() || range->second > offset || offset + size > range->first) return false;
  by_size_.erase({range->first - range->second, range->second});
  carve(range, offset, size);
  return true;
}

void RangeSet::carve(ByEnd::iterator range, uint64_t offset, uint64_t size) {
  uint64_t start = range->second, range_end = range->first, end = offset + size;
  total_ -= size;
  if (end < range_end) {  // a tail stays, with the range's end: its start moves up in place
    range->second = end;
    by_size_.emplace(range_end - end, end);
    if (offset > start) {  // and a head, just before it
      by_end_.emplace_hint(range, offset, start);
      by_size_.emplace(offset - start, start);
    }
  } else if (offset > start) {  // only a head stays: the end, the key, changes
    auto after = by_end_.erase(range);
    by_end_.emplace_hint(after, offset, start);
    by_size_.emplace(offset - start, start);
  } else {
    by_end_.erase(range);
  }
}

std::optional<std::pair<uint64_t, uint64_t>> RangeSet::containing(uint64_t offset) const {
  auto it = by_end_.upper_bound(offset);
  if (it == by_end_.end() || it->second > offset) return std::nullopt;
  return std::make_pair(it->second, it->first - it->second);
}

std::string RangeSet::check() const {
  if (by_size_.empty() || *by_size_.begin() != std::make_pair(uint64_t{0}, uint64_t{0}))
    return "the size index lost its sentinel";
  if (by_end_.size() + 1 != by_size_.size()) return "the two indexes differ in size";
  uint64_t sum = 0, prev_end = 0;
  bool first = true;
  for (const auto& [end, start] : by_end_) {
    if (end <= start) return "an empty or inverted range at " + std::to_string(start);
    if (!by_size_.contains({end - start, start})) return "range at " + std::to_string(start) + " not indexed by size";
    if (!first) {
      if (prev_end > start) return "ranges overlap at " + std::to_string(start);
      if (prev_end == start) return "adjacent free ranges not coalesced at " + std::to_string(start);
    }
    sum += end - start;
    prev_end = end;
    first = false;
  }
  if (sum != total_) return "total() disagrees with the ranges";
  return "";
}

}  // namespace alloc
}  // namespace gpuslack

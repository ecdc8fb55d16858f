#include "base/range_set.h"

#include <algorithm>

namespace gpuslack {
namespace base {

namespace {
// Stale size keys allowed beyond one per range before drop_stale_if_many()
// drops them all (Note [Stale size keys]): enough that a set of a few
// ranges (a small-pool page's) does not rebuild its index every few ops.
constexpr size_t kStaleSlack = 16;
}  // namespace

// by_end_ maps each range's end to its start; a change that keeps a range's
// end writes its start in place. by_size_ gains the key of each new or
// changed range (often still there, stale, from before) and keeps the old
// one, stale (Note [Stale size keys]).

bool RangeSet::insert(uint64_t offset, uint64_t size) {
  if (size == 0 || offset + size < offset) return false;
  uint64_t end = offset + size;
  // The first range ending after `offset`: every range before it ends at or
  // before `offset`; it overlaps the new one if it starts before `end`.
  auto next = by_end_.upper_bound(offset);
  if (next != by_end_.end() && next->second < end) return false;
  bool merge_next = next != by_end_.end() && next->second == end;
  bool merge_prev = next != by_end_.begin() && std::prev(next)->first == offset;
  uint64_t start = merge_prev ? std::prev(next)->second : offset;
  if (merge_next) {  // the merged range ends where `next` does: `next` grows down in place
    end = next->first;
    next->second = start;
    if (merge_prev) by_end_.erase(std::prev(next));
  } else if (merge_prev) {  // `prev` grows up: its end, the key, changes
    auto after = by_end_.erase(std::prev(next));
    by_end_.emplace_hint(after, end, start);
  } else {
    by_end_.emplace_hint(next, end, start);
  }
  // Larger than the keys it leaves stale: the largest key stays current.
  by_size_.emplace(end - start, start);
  total_ += size;
  drop_stale_if_many();
  return true;
}

std::optional<uint64_t> RangeSet::take_best_fit(uint64_t size) {
  if (size == 0) return std::nullopt;
  for (auto fit = by_size_.lower_bound({size, 0}); fit != by_size_.end();) {
    uint64_t start = fit->second;
    auto range = by_end_.find(start + fit->first);
    if (range != by_end_.end() && range->second == start) {
      carve(range, start, size);
      return start;
    }
    fit = by_size_.erase(fit);  // stale: dropped where met
  }
  return std::nullopt;
}

bool RangeSet::take(uint64_t offset, uint64_t size) {
  if (size == 0 || offset + size < offset) return false;
  auto range = by_end_.upper_bound(offset);
  if (range == by_end_.end() || range->second > offset || offset + size > range->first) return false;
  carve(range, offset, size);
  return true;
}

uint64_t RangeSet::take_overlap(uint64_t offset, uint64_t size) {
  const uint64_t end = offset + size;
  uint64_t taken = 0;
  // The common case, one range holding it all: no second lookup.
  if (auto range = by_end_.upper_bound(offset); range == by_end_.end() || range->second >= end) {
    return 0;
  } else if (range->second <= offset && end <= range->first) {
    carve(range, offset, size);
    return size;
  }
  // The first range ending past `offset` is the first that may overlap;
  // after a carve, look it up again (the iterators may have moved).
  for (auto range = by_end_.upper_bound(offset); range != by_end_.end() && range->second < end;
       range = by_end_.upper_bound(offset)) {
    uint64_t from = std::max(offset, range->second), to = std::min(end, range->first);
    carve(range, from, to - from);
    taken += to - from;
  }
  return taken;
}

void RangeSet::carve(ByEnd::iterator range, uint64_t offset, uint64_t size) {
  using Key = std::pair<uint64_t, uint64_t>;
  uint64_t start = range->second, range_end = range->first, end = offset + size;
  Key old_key{range_end - start, start}, head{0, 0}, tail{0, 0};  // (0, 0): no such piece
  bool was_largest = *by_size_.rbegin() == old_key;
  total_ -= size;
  if (end < range_end) {  // a tail stays, with the range's end: its start moves up in place
    range->second = end;
    tail = {range_end - end, end};
    by_size_.insert(tail);
    if (offset > start) {  // and a head, just before it
      by_end_.emplace_hint(range, offset, start);
      head = {offset - start, start};
      by_size_.insert(head);
    }
  } else if (offset > start) {  // only a head stays: the end, the key, changes
    auto after = by_end_.erase(range);
    by_end_.emplace_hint(after, offset, start);
    head = {offset - start, start};
    by_size_.insert(head);
  } else {
    by_end_.erase(range);
  }
  if (was_largest) {
    // The old key, stale now, is still the largest (the pieces are smaller):
    // it goes, and so do the stale keys under it, down to a current one. A
    // piece just indexed is current without a lookup.
    by_size_.erase(std::prev(by_size_.end()));
    for (auto top = std::prev(by_size_.end()); *top != head && *top != tail && !current(*top);
         top = std::prev(by_size_.end())) {
      by_size_.erase(top);
    }
  }
  drop_stale_if_many();
}

bool RangeSet::current(const std::pair<uint64_t, uint64_t>& key) const {
  if (key.first == 0) return key.second == 0;  // the sentinel
  auto range = by_end_.find(key.second + key.first);
  return range != by_end_.end() && range->second == key.second;
}

void RangeSet::drop_stale_if_many() {
  if (by_size_.size() - 1 - by_end_.size() <= by_end_.size() + kStaleSlack) return;
  for (auto it = by_size_.begin(); it != by_size_.end();) it = current(*it) ? std::next(it) : by_size_.erase(it);
}

std::optional<std::pair<uint64_t, uint64_t>> RangeSet::containing(uint64_t offset) const {
  auto it = by_end_.upper_bound(offset);
  if (it == by_end_.end() || it->second > offset) return std::nullopt;
  return std::make_pair(it->second, it->first - it->second);
}

std::string RangeSet::check() const {
  if (by_size_.empty() || *by_size_.begin() != std::make_pair(uint64_t{0}, uint64_t{0}))
    return "the size index lost its sentinel";
  if (!current(*by_size_.rbegin())) return "the largest size key is stale";
  if (by_size_.size() - 1 < by_end_.size()) return "the size index misses ranges";
  if (by_size_.size() - 1 - by_end_.size() > by_end_.size() + kStaleSlack) return "too many stale size keys";
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

}  // namespace base
}  // namespace gpuslack

#include "alloc/range_set.h"

#include <iterator>

namespace gpuslack {
namespace alloc {

void RangeSet::add(uint64_t offset, uint64_t size) {
  by_address_.emplace(offset, size);
  by_size_.emplace(size, offset);
  total_ += size;
}

void RangeSet::remove(std::map<uint64_t, uint64_t>::iterator it) {
  by_size_.erase({it->second, it->first});
  total_ -= it->second;
  by_address_.erase(it);
}

bool RangeSet::insert(uint64_t offset, uint64_t size) {
  if (size == 0 || offset + size < offset) return false;
  auto next = by_address_.lower_bound(offset);
  if (next != by_address_.end() && next->first < offset + size) return false;  // overlaps the next
  if (next != by_address_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second > offset) return false;  // overlaps the previous
  }
  uint64_t start = offset, end = offset + size;
  // Coalesce with the neighbours that touch it.
  if (next != by_address_.end() && next->first == end) {
    end += next->second;
    auto after = std::next(next);
    remove(next);
    next = after;
  }
  if (next != by_address_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      remove(prev);
    }
  }
  add(start, end - start);
  return true;
}

std::optional<uint64_t> RangeSet::take_best_fit(uint64_t size) {
  if (size == 0) return std::nullopt;
  auto fit = by_size_.lower_bound({size, 0});
  if (fit == by_size_.end()) return std::nullopt;
  uint64_t offset = fit->second;
  take(offset, size);
  return offset;
}

bool RangeSet::take(uint64_t offset, uint64_t size) {
  auto r = containing(offset);
  if (!r || size == 0 || offset + size > r->first + r->second) return false;
  auto [start, len] = *r;
  remove(by_address_.find(start));
  if (offset > start) add(start, offset - start);
  uint64_t end = offset + size, range_end = start + len;
  if (range_end > end) add(end, range_end - end);
  return true;
}

std::optional<std::pair<uint64_t, uint64_t>> RangeSet::containing(uint64_t offset) const {
  auto it = by_address_.upper_bound(offset);
  if (it == by_address_.begin()) return std::nullopt;
  --it;
  if (offset >= it->first + it->second) return std::nullopt;
  return std::make_pair(it->first, it->second);
}

std::string RangeSet::check() const {
  if (by_address_.size() != by_size_.size()) return "the two indexes differ in size";
  uint64_t sum = 0;
  const std::pair<const uint64_t, uint64_t>* prev = nullptr;
  for (const auto& r : by_address_) {
    if (r.second == 0) return "an empty range at " + std::to_string(r.first);
    if (!by_size_.count({r.second, r.first})) return "range at " + std::to_string(r.first) + " not indexed by size";
    if (prev) {
      uint64_t prev_end = prev->first + prev->second;
      if (prev_end > r.first) return "ranges overlap at " + std::to_string(r.first);
      if (prev_end == r.first) return "adjacent free ranges not coalesced at " + std::to_string(r.first);
    }
    sum += r.second;
    prev = &r;
  }
  if (sum != total_) return "total() disagrees with the ranges";
  return "";
}

}  // namespace alloc
}  // namespace gpuslack

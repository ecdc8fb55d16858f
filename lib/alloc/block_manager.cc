#include "alloc/block_manager.h"

#include <iterator>

namespace gpuslack {
namespace alloc {

BlockManager::BlockManager(uint64_t capacity) : capacity_(capacity / kAlignment * kAlignment) {
  if (capacity_) large_free_.insert(0, capacity_);
}

std::optional<uint64_t> BlockManager::allocate(uint64_t bytes) {
  if (bytes > capacity_) return std::nullopt;
  uint64_t size = round_up(bytes);
  if (size <= kSmallLimit) return allocate_small(size);
  std::optional<uint64_t> at = large_free_.take_best_fit(size);
  if (!at) return std::nullopt;
  large_live_.emplace(*at, size);
  allocated_ += size;
  return at;
}

std::optional<uint64_t> BlockManager::allocate_small(uint64_t size) {
  // Best fit across the pages that have room; a new page only when none has.
  Page* best = nullptr;
  uint64_t best_fit = ~0ull;
  for (auto& [offset, page] : pages_) {
    uint64_t largest = page.free.largest();
    if (largest >= size && largest < best_fit) {
      best = &page;
      best_fit = largest;
    }
  }
  if (!best) {
    std::optional<uint64_t> page_at = large_free_.take_best_fit(kPageSize);
    if (!page_at) return std::nullopt;
    large_live_.emplace(*page_at, kPageSize);
    best = &pages_[*page_at];
    best->free.insert(*page_at, kPageSize);
  }
  std::optional<uint64_t> at = best->free.take_best_fit(size);
  best->used += size;
  small_live_.emplace(*at, size);
  allocated_ += size;
  return at;
}

uint64_t BlockManager::release(uint64_t offset) {
  auto small = small_live_.find(offset);
  if (small != small_live_.end()) return release_small(small);
  auto large = large_live_.find(offset);
  if (large == large_live_.end() || pages_.count(offset)) return 0;  // a page is not a block
  uint64_t size = large->second;
  large_live_.erase(large);
  large_free_.insert(offset, size);
  allocated_ -= size;
  return size;
}

uint64_t BlockManager::release_small(std::map<uint64_t, uint64_t>::iterator block) {
  uint64_t offset = block->first, size = block->second;
  small_live_.erase(block);
  auto page = std::prev(pages_.upper_bound(offset));
  page->second.free.insert(offset, size);
  page->second.used -= size;
  allocated_ -= size;
  if (page->second.used == 0) {  // the page's last block: back to the large space
    uint64_t page_at = page->first;
    pages_.erase(page);
    large_live_.erase(page_at);
    large_free_.insert(page_at, kPageSize);
  }
  return size;
}

uint64_t BlockManager::size_of(uint64_t offset) const {
  auto small = small_live_.find(offset);
  if (small != small_live_.end()) return small->second;
  auto large = large_live_.find(offset);
  if (large == large_live_.end() || pages_.count(offset)) return 0;
  return large->second;
}

std::optional<std::pair<uint64_t, uint64_t>> BlockManager::block_containing(uint64_t offset) const {
  auto inside = [offset](const std::map<uint64_t, uint64_t>& live) -> std::optional<std::pair<uint64_t, uint64_t>> {
    auto it = live.upper_bound(offset);
    if (it == live.begin()) return std::nullopt;
    --it;
    if (offset - it->first >= it->second) return std::nullopt;
    return *it;
  };
  if (auto small = inside(small_live_)) return small;
  auto large = inside(large_live_);
  if (!large || pages_.count(large->first)) return std::nullopt;  // free space of a page
  return large;
}

std::string BlockManager::check() const {
  if (std::string e = large_free_.check(); !e.empty()) return "large space: " + e;
  // Free ranges and live large blocks (pages included) partition [0, capacity).
  uint64_t cursor = 0;
  auto free_it = large_free_.ranges().begin();
  auto live_it = large_live_.begin();
  uint64_t large_allocated = 0;
  while (free_it != large_free_.ranges().end() || live_it != large_live_.end()) {
    bool take_free = live_it == large_live_.end() ||
                     (free_it != large_free_.ranges().end() && free_it->first < live_it->first);
    uint64_t start = take_free ? free_it->first : live_it->first;
    uint64_t size = take_free ? free_it->second : live_it->second;
    if (start != cursor) return "a gap or overlap in the large space at " + std::to_string(start);
    if (start % kAlignment || size % kAlignment) return "misaligned range at " + std::to_string(start);
    if (!take_free && !pages_.count(start)) large_allocated += size;
    cursor = start + size;
    if (take_free) ++free_it;
    else ++live_it;
  }
  if (cursor != capacity_) return "the large space does not end at capacity";
  // Each page: its free ranges and its small blocks partition it.
  uint64_t small_allocated = 0;
  for (const auto& [page_at, page] : pages_) {
    auto live = large_live_.find(page_at);
    if (live == large_live_.end() || live->second != kPageSize) return "a page that is not a live 2 MiB block";
    if (std::string e = page.free.check(); !e.empty()) return "page: " + e;
    if (page.used == 0) return "an empty page kept at " + std::to_string(page_at);
    uint64_t used = 0, at = page_at;
    auto f = page.free.ranges().begin();
    auto s = small_live_.lower_bound(page_at);
    while (at < page_at + kPageSize) {
      if (f != page.free.ranges().end() && f->first == at) {
        at += f->second;
        ++f;
      } else if (s != small_live_.end() && s->first == at) {
        if (s->second > kSmallLimit) return "a large block in a page";
        used += s->second;
        at += s->second;
        ++s;
      } else {
        return "a gap or overlap in the page at " + std::to_string(page_at);
      }
    }
    if (at != page_at + kPageSize) return "a block runs past its page at " + std::to_string(page_at);
    if (used != page.used) return "a page's used bytes disagree";
    small_allocated += used;
  }
  uint64_t small_total = 0;
  for (const auto& b : small_live_) small_total += b.second;
  if (small_total != small_allocated) return "a small block outside every page";
  if (allocated_ != large_allocated + small_allocated) return "allocated() disagrees with the blocks";
  return "";
}

}  // namespace alloc
}  // namespace gpuslack

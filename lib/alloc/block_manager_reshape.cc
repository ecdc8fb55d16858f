// BlockManager (block_manager.h): live small blocks joined and split in
// place, for StreamCache's Note [A stream's small blocks at any size]. A
// page's free space, its used bytes and the page index are untouched: only
// the blocks' table and the page's bitmap of block starts change, so a
// block never leaves its page (Note [The small pool apart]).
#include "alloc/block_manager.h"

#include <algorithm>

namespace gpuslack {
namespace alloc {

bool BlockManager::joinable(uint64_t offset, uint64_t next) const {
  auto a = live_.find(offset);
  if (a == live_.end() || a->second.page == kNoPage || offset + a->second.size != next) return false;
  auto b = live_.find(next);
  return b != live_.end() && b->second.page == a->second.page;
}

uint64_t BlockManager::join_next(uint64_t offset) {
  if (!joinable(offset, offset + size_of(offset))) return 0;
  Block& a = live_.find(offset)->second;
  const uint64_t next = offset + a.size;
  a.size += live_.find(next)->second.size;
  a.requested = a.size;
  const uint64_t joined = a.size;
  pages_[a.page].mark_start(next, false);
  live_.erase(next);
  return joined;
}

std::optional<uint64_t> BlockManager::split(uint64_t offset, uint64_t size) {
  auto it = live_.find(offset);
  if (it == live_.end() || it->second.page == kNoPage || size == 0 || size % kAlignment ||
      size >= it->second.size)
    return std::nullopt;
  Block& head = it->second;
  const Block tail{head.size - size, head.page, head.size - size};
  head.size = size;
  head.requested = std::min(head.requested, size);
  const uint64_t at = offset + size;
  pages_[tail.page].mark_start(at, true);
  live_.emplace(at, tail);  // may rehash: `head` is not used past here
  return at;
}

}  // namespace alloc
}  // namespace gpuslack

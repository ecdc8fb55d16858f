// BlockManager (block_manager.h): a small block placed over blocks the
// caller gives up and the free space beside them, for StreamCache's Note
// [A stream's small blocks at any size]. Everything stays in its page
// (Note [The small pool apart]): the blocks' table, the page's bitmap of
// block starts, its free ranges and, when its largest free range changes,
// its place in the page index.
#include <algorithm>

#include "alloc/block_manager.h"

namespace gpuslack {
namespace alloc {

std::optional<BlockManager::Joined> BlockManager::allocate_joined(uint64_t bytes, const Ranges& mine) {
  const uint64_t size = round_up(bytes);
  if (size > kSmallLimit) return std::nullopt;
  // The extents: each block of `mine` grown over the free ranges beside it
  // in its page, merged with the next one's where they meet. The smallest
  // that holds `size` wins, lowest address among equals.
  struct Extent {
    uint64_t start, end;
    uint32_t page;
    size_t first, last;  // its blocks in `mine`
  };
  std::optional<Extent> best, cur;
  auto consider = [&] {
    if (cur && cur->end - cur->start >= size && (!best || cur->end - cur->start < best->end - best->start)) best = cur;
  };
  for (size_t i = 0, group_end = 0; i < mine.size() && !(best && best->end - best->start == size); ++i) {
    auto [offset, n] = mine[i];
    auto it = live_.find(offset);
    if (it == live_.end() || it->second.page == kNoPage || it->second.size != n) continue;  // not a small block
    const Page& page = pages_[it->second.page];
    if (i >= group_end) {
      // A page's first block here: no extent in it can be larger than its
      // blocks here and its free bytes together; if those cannot hold the
      // request, none of its blocks is looked at.
      uint64_t bound = kPageSize - page.used;
      for (group_end = i; group_end < mine.size() && mine[group_end].first < page.at + kPageSize; ++group_end)
        bound += mine[group_end].second;
      if (bound < size) {
        i = group_end - 1;
        continue;
      }
    }
    uint64_t lo = offset, hi = offset + n;
    // The free ranges beside it; not where the block before or after is
    // one of `mine` (its neighbour is that block).
    if (offset > page.at && !(i > 0 && mine[i - 1].first + mine[i - 1].second == offset))
      if (auto left = page.free.containing(offset - 1)) lo = left->first;
    if (hi < page.at + kPageSize && !(i + 1 < mine.size() && mine[i + 1].first == hi))
      if (auto right = page.free.containing(hi)) hi = right->first + right->second;
    if (cur && cur->page == it->second.page && cur->last + 1 == i && cur->end >= lo) {
      cur->end = hi;
      cur->last = i;
      continue;
    }
    consider();
    cur = Extent{lo, hi, it->second.page, i, i};
  }
  consider();
  if (!best) return std::nullopt;
  // The block at the extent's start: the free ranges it covers are taken,
  // the blocks it covers go, and one it covers in part keeps its rest.
  Page& page = pages_[best->page];
  const uint64_t at = best->start, end = at + size;
  Joined joined{at, {}, std::nullopt};
  for (size_t i = best->first; i <= best->last && mine[i].first < end; ++i) {
    auto [offset, n] = mine[i];
    joined.used.push_back(offset);
    live_.erase(offset);
    allocated_ -= n;
    page.used -= n;
    page.mark_start(offset, false);
    if (offset + n > end) joined.rest = std::make_pair(end, offset + n - end);
  }
  page.free.take_overlap(at, size);
  add_live(at, Block{size, best->page, bytes});
  page.used += size;
  if (joined.rest) {
    add_live(joined.rest->first, Block{joined.rest->second, best->page, joined.rest->second});
    page.used += joined.rest->second;
  }
  // The page's largest free range may have shrunk (nothing was freed).
  uint32_t bucket = static_cast<uint32_t>(page.free.largest() / kAlignment);
  if (bucket != page.bucket) {
    index_remove(best->page);
    page.bucket = bucket;
    index_add(best->page);
  }
  return joined;
}

}  // namespace alloc
}  // namespace gpuslack

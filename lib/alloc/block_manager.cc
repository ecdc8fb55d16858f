#include "alloc/block_manager.h"

#include <algorithm>
#include <cassert>
#include <iterator>

namespace gpuslack {
namespace alloc {

BlockManager::BlockManager(uint64_t capacity, uint64_t small_pool) : capacity_(capacity / kAlignment * kAlignment) {
  // See Note [The small pool apart].
  small_end_ = std::min(small_pool, capacity_) / kPageSize * kPageSize;
  if (small_end_) small_free_.insert(0, small_end_);
  if (capacity_ > small_end_) large_free_.insert(small_end_, capacity_ - small_end_);
}

std::optional<uint64_t> BlockManager::allocate(uint64_t bytes) { return place(bytes, nullptr); }

std::optional<uint64_t> BlockManager::allocate(uint64_t bytes, PlacementCost cost, uint64_t max_cost,
                                               bool at_granule_edges) {
  Placement placement{cost, max_cost, at_granule_edges};
  return place(bytes, &placement);
}

std::optional<uint64_t> BlockManager::place(uint64_t bytes, const Placement* placement) {
  if (bytes > capacity_) return std::nullopt;
  uint64_t size = round_up(bytes);
  if (size <= kSmallLimit) return allocate_small(size, bytes, placement);
  std::optional<uint64_t> at = take_large(size, placement);
  if (!at) return std::nullopt;
  add_live(*at, Block{size, kNoPage, bytes});
  return at;
}

void BlockManager::add_live(uint64_t at, const Block& block) {
  live_.emplace(at, block);
  if (block.page == kNoPage) occupants_.emplace(at, kNoPage);
  else pages_[block.page].mark_start(at, true);
  allocated_ += block.size;
}

// Note [Placement by cost].
std::optional<uint64_t> BlockManager::take_from(base::RangeSet& space, uint64_t size, const Placement* placement) {
  if (!placement) return space.take_best_fit(size);
  // Above the ceiling nothing is chosen: the cost may stop counting there.
  const uint64_t ceiling = placement->max_cost == kAnyCost ? kAnyCost : placement->max_cost + 1;
  std::optional<uint64_t> best;
  uint64_t best_cost = ceiling;  // what a placement must cost less than to be chosen
  // See Note [Whole granules at granule edges].
  const bool edges = placement->at_granule_edges && size % kPageSize == 0;
  space.for_each_fit(size, kPlacementCandidates, [&](uint64_t start, uint64_t range) {
    uint64_t at[4], n = 0;
    if (edges) {
      uint64_t first = (start + kPageSize - 1) / kPageSize * kPageSize;
      if (first + size <= start + range) {
        at[n++] = first;
        uint64_t last = (start + range - size) / kPageSize * kPageSize;
        if (last != first) at[n++] = last;
      }
    }
    for (uint64_t end : {start, start + range - size})
      if (std::find(at, at + n, end) == at + n) at[n++] = end;
    for (uint64_t k = 0; k < n; ++k) {
      uint64_t c = placement->cost(at[k], size, best_cost);
      if (c < best_cost || (!best && ceiling == kAnyCost)) {
        best = at[k];
        best_cost = c;
      }
      if (c == 0 || range == size) break;
    }
    return !best || best_cost != 0;
  });
  if (!best) return std::nullopt;
  bool taken = space.take(*best, size);
  assert(taken);  // for_each_fit offered a free range that holds it
  (void)taken;
  return best;
}

// See Note [The small pool apart]. The small pool's ranges are multiples of
// kPageSize from 0, so a page taken at either end of one is granule-aligned.
// While it has any free range a page goes nowhere else (a placement that
// costs too much there fails, and the caller maps one there).
std::optional<uint64_t> BlockManager::take_page(const Placement* placement) {
  if (small_free_.count()) return take_from(small_free_, kPageSize, placement);
  return take_large(kPageSize, placement);
}

std::optional<uint64_t> BlockManager::allocate_small(uint64_t size, uint64_t requested, const Placement* placement) {
  // Best fit across the pages: the page whose largest free range is the
  // smallest that holds `size` (lowest address among equals); a new page
  // only when none has room.
  uint32_t id = best_page(size);
  bool fresh = id == kNoPage;
  if (fresh) {
    std::optional<uint64_t> page_at = take_page(placement);
    if (!page_at) return std::nullopt;
    id = new_page(*page_at);
  }
  Page& page = pages_[id];
  uint64_t at = *page.free.take_best_fit(size);
  page.used += size;
  uint32_t bucket = static_cast<uint32_t>(page.free.largest() / kAlignment);
  if (fresh || bucket != page.bucket) {
    if (!fresh) index_remove(id);
    page.bucket = bucket;
    index_add(id);
  }
  add_live(at, Block{size, id, requested});
  return at;
}

uint32_t BlockManager::new_page(uint64_t at) {
  uint32_t id;
  if (!unused_pages_.empty()) {
    id = unused_pages_.back();
    unused_pages_.pop_back();
  } else {
    id = static_cast<uint32_t>(pages_.size());
    pages_.emplace_back();
  }
  Page& page = pages_[id];
  page.at = at;
  page.free.insert(at, kPageSize);
  page.in_use = true;
  occupants_.emplace(at, id);
  return id;
}

uint64_t BlockManager::release(uint64_t offset) {
  auto it = live_.find(offset);  // a page is not a block: never found here
  if (it == live_.end()) return 0;
  Block block = it->second;
  live_.erase(it);
  allocated_ -= block.size;
  if (block.page != kNoPage) return release_small(offset, block);
  occupants_.erase(offset);
  large_free_.insert(offset, block.size);
  return block.size;
}

uint64_t BlockManager::release_small(uint64_t offset, const Block& block) {
  Page& page = pages_[block.page];
  page.free.insert(offset, block.size);
  page.used -= block.size;
  page.mark_start(offset, false);
  if (page.used == 0) {  // the page's last block: back to where it came from
    occupants_.erase(page.at);
    index_remove(block.page);
    page.free.take(page.at, kPageSize);  // empty, its base::RangeSet kept for the slot's next page
    (page.at < small_end_ ? small_free_ : large_free_).insert(page.at, kPageSize);
    page.in_use = false;
    unused_pages_.push_back(block.page);
  } else if (uint32_t bucket = static_cast<uint32_t>(page.free.largest() / kAlignment); bucket != page.bucket) {
    index_remove(block.page);
    page.bucket = bucket;
    index_add(block.page);
  }
  return block.size;
}

// Note [Space held for an owner].

uint64_t BlockManager::release_to(uint64_t offset, Owner owner) {
  auto it = live_.find(offset);
  if (it == live_.end() || it->second.page != kNoPage) return 0;
  uint64_t size = it->second.size;
  live_.erase(it);
  occupants_.erase(offset);
  allocated_ -= size;
  held_[owner].all.insert(offset, size);
  held_bytes_ += size;
  return size;
}

bool BlockManager::fence_held(Owner owner) {
  auto h = held_.find(owner);
  if (h == held_.end() || h->second.all.count() == 0) return false;
  h->second.fenced = base::RangeSet();
  for (const auto& [start, n] : h->second.all.ranges()) h->second.fenced.insert(start, n);
  return true;
}

uint64_t BlockManager::release_fenced(Owner owner) {
  auto h = held_.find(owner);
  if (h == held_.end()) return 0;
  uint64_t released = 0;
  for (const auto& [start, n] : h->second.fenced.ranges()) {
    bool taken = h->second.all.take(start, n);
    assert(taken);  // marked ranges lie within what is held
    (void)taken;
    large_free_.insert(start, n);
    released += n;
  }
  h->second.fenced = base::RangeSet();
  held_bytes_ -= released;
  return released;
}

std::optional<uint64_t> BlockManager::allocate_held(Owner owner, uint64_t bytes, FreeFits free_fits) {
  uint64_t size = round_up(bytes);
  if (size <= kSmallLimit || bytes > capacity_) return std::nullopt;
  auto h = held_.find(owner);
  if (h == held_.end() || h->second.all.count() == 0) return std::nullopt;
  // See Note [One pool for an owner's reuse]: the best fit over the held
  // ranges and the free space as one (a held range merged with the free
  // ranges beside it), among the places the caller can use now: wholly
  // held, or where `free_fits` says. Even an exact held fit is weighed:
  // taking it at once raised opt-finetune's peak by 20 MiB.
  const base::RangeSet& held = h->second.all;
  auto usable = [&](uint64_t offset, uint64_t n) {
    std::optional<std::pair<uint64_t, uint64_t>> in = held.containing(offset);
    bool wholly_held = in && offset + n <= in->first + in->second;
    return wholly_held || free_fits(offset, n, n);
  };
  // The one pool, read without changing either set: each held range
  // grown over the free ranges beside it (two held ranges with one free
  // range between them are one), and every other free range as it is.
  struct Extent {
    uint64_t start, size;
  };
  // Inline: an owner holds a few ranges, and the cached path should not
  // use the heap (Note [The large cached path, cheaply] in device_allocator.h).
  absl::InlinedVector<Extent, 16> merged;      // by address, then by (size, start)
  absl::InlinedVector<uint64_t, 32> absorbed;  // starts of the free ranges merged in
  for (const auto& [start, n] : held.ranges()) {
    uint64_t lo = start, hi = start + n;
    if (auto left = start ? large_free_.containing(start - 1) : std::nullopt) {
      lo = left->first;
      absorbed.push_back(left->first);
    }
    if (auto right = large_free_.containing(hi)) {
      hi = right->first + right->second;
      absorbed.push_back(right->first);
    }
    if (!merged.empty() && merged.back().start + merged.back().size >= lo)
      merged.back().size = hi - merged.back().start;
    else
      merged.push_back({lo, hi - lo});
  }
  merged.erase(std::remove_if(merged.begin(), merged.end(), [&](const Extent& e) { return e.size < size; }),
               merged.end());
  std::sort(merged.begin(), merged.end(),
            [](const Extent& a, const Extent& b) { return a.size != b.size ? a.size < b.size : a.start < b.start; });
  // In best-fit order over both, as take_from would see them lent together:
  // at most kPlacementCandidates ranges, each at its start, then its end.
  std::optional<uint64_t> at;
  size_t seen = 0, next = 0;
  auto consider = [&](uint64_t start, uint64_t range) {
    ++seen;
    for (uint64_t place : {start, start + range - size}) {
      if (usable(place, size)) return at = place, false;
      if (range == size) break;
    }
    return seen < kPlacementCandidates;
  };
  bool go_on = true;
  large_free_.for_each_fit(size, kPlacementCandidates + absorbed.size(), [&](uint64_t start, uint64_t range) {
    for (; go_on && next < merged.size() &&
           (merged[next].size < range || (merged[next].size == range && merged[next].start < start));
         ++next)
      go_on = consider(merged[next].start, merged[next].size);
    if (!go_on) return false;
    if (std::find(absorbed.begin(), absorbed.end(), start) != absorbed.end()) return true;
    return go_on = consider(start, range);
  });
  for (; go_on && next < merged.size(); ++next) go_on = consider(merged[next].start, merged[next].size);
  if (at) {
    // What the block covers of the held ranges, then of the free space.
    // (Each set looked up only where it can hold a part.)
    uint64_t from_held = h->second.all.take_overlap(*at, size);
    [[maybe_unused]] uint64_t from_free = from_held < size ? large_free_.take_overlap(*at, size) : 0;
    assert(from_held + from_free == size);
    held_bytes_ -= from_held;
    if (h->second.fenced.count()) h->second.fenced.take_overlap(*at, size);
    add_live(*at, Block{size, kNoPage, bytes});
    return at;
  }
  // None of the ranges looked at could be used where they start or end: the
  // held best fit, if any.
  h->second.all.for_each_fit(size, 1, [&](uint64_t start, uint64_t) { return at = start, false; });
  if (!at) return std::nullopt;
  [[maybe_unused]] bool taken = h->second.all.take(*at, size);
  assert(taken);
  h->second.fenced.take_overlap(*at, size);
  held_bytes_ -= size;
  add_live(*at, Block{size, kNoPage, bytes});
  return at;
}

std::optional<uint64_t> BlockManager::allocate_growing(Owner owner, uint64_t bytes, PlacementCost cost,
                                                       uint64_t max_cost, Ranges* from_held, bool at_granule_edges) {
  uint64_t size = round_up(bytes);
  auto h = held_.find(owner);
  if (size <= kSmallLimit || bytes > capacity_ || h == held_.end()) return allocate(bytes, cost, max_cost, at_granule_edges);
  // Lend the owner's ranges to the free space for one placement, then take
  // back what the block left of them. Bounded by the owner's range count,
  // and only on a miss: the cached path is allocate_held().
  std::vector<std::pair<uint64_t, uint64_t>> lent(h->second.all.ranges().begin(), h->second.all.ranges().end());
  for (const auto& [start, n] : lent) large_free_.insert(start, n);
  Placement placement{cost, max_cost, at_granule_edges};
  std::optional<uint64_t> at = take_large(size, &placement);
  base::RangeSet kept;
  auto keep = [&](uint64_t from, uint64_t to) {
    if (to <= from) return;
    bool taken = large_free_.take(from, to - from);
    assert(taken);  // lent, and not under the block: still free
    (void)taken;
    kept.insert(from, to - from);
  };
  for (const auto& [start, n] : lent) {
    uint64_t end = start + n;
    if (at && *at < end && *at + size > start) {
      keep(start, *at);
      keep(*at + size, end);
      uint64_t from = std::max(start, *at), to = std::min(end, *at + size);
      held_bytes_ -= to - from;
      if (from_held) from_held->emplace_back(from, to - from);
    } else {
      keep(start, end);
    }
  }
  h->second.all = std::move(kept);
  if (at) {
    h->second.fenced.take_overlap(*at, size);
    add_live(*at, Block{size, kNoPage, bytes});
  }
  return at;
}

bool BlockManager::hold(Owner owner, uint64_t offset, uint64_t size) {
  if (size == 0 || !large_free_.take(offset, size)) return false;
  held_[owner].all.insert(offset, size);
  held_bytes_ += size;
  return true;
}

void BlockManager::unhold(Owner owner, std::vector<uint64_t>* out) {
  auto h = held_.find(owner);
  if (h == held_.end()) return;
  for (const auto& [start, n] : h->second.all.ranges()) {
    add_live(start, Block{n, kNoPage, n});
    held_bytes_ -= n;
    out->push_back(start);
  }
  held_.erase(h);
}

std::vector<BlockManager::Owner> BlockManager::owners() const {
  std::vector<Owner> out;
  for (const auto& [owner, held] : held_)
    if (held.all.count()) out.push_back(owner);
  return out;
}

// The page index: heaps_[b] is the root of a pairing heap, by address, of
// the pages whose largest free range is b * kAlignment; nonempty_ and
// nonempty_words_ mark the buckets that hold any, so the first bucket at or
// above a size is two bit scans away.

uint32_t BlockManager::best_page(uint64_t size) const {
  uint32_t b = static_cast<uint32_t>(size / kAlignment), w = b / 64;
  uint64_t bits = nonempty_[w] & (~0ull << (b % 64));
  if (!bits) {
    uint64_t words = w + 1 < 64 ? nonempty_words_ & (~0ull << (w + 1)) : 0;
    if (!words) return kNoPage;
    w = static_cast<uint32_t>(__builtin_ctzll(words));
    bits = nonempty_[w];
  }
  return heaps_[w * 64 + static_cast<uint32_t>(__builtin_ctzll(bits))];
}

void BlockManager::index_add(uint32_t id) {
  Page& page = pages_[id];
  page.child = page.next = page.prev = kNoPage;
  uint32_t& root = heaps_[page.bucket];
  if (root == kNoPage) {
    nonempty_[page.bucket / 64] |= 1ull << (page.bucket % 64);
    nonempty_words_ |= 1ull << (page.bucket / 64);
  }
  root = meld(root, id);
}

void BlockManager::index_remove(uint32_t id) {
  Page& page = pages_[id];
  uint32_t& root = heaps_[page.bucket];
  uint32_t children = merge_pairs(page.child);
  if (id == root) {
    root = children;
  } else {  // out of its sibling list, and its children back in the heap
    Page& prev = pages_[page.prev];
    (prev.child == id ? prev.child : prev.next) = page.next;
    if (page.next != kNoPage) pages_[page.next].prev = page.prev;
    root = meld(root, children);
  }
  page.child = page.next = page.prev = kNoPage;
  if (root == kNoPage) {
    nonempty_[page.bucket / 64] &= ~(1ull << (page.bucket % 64));
    if (!nonempty_[page.bucket / 64]) nonempty_words_ &= ~(1ull << (page.bucket / 64));
  }
}

uint32_t BlockManager::meld(uint32_t a, uint32_t b) {
  if (a == kNoPage) return b;
  if (b == kNoPage) return a;
  if (pages_[b].at < pages_[a].at) std::swap(a, b);
  Page &parent = pages_[a], &child = pages_[b];  // b becomes a's first child
  child.next = parent.child;
  if (parent.child != kNoPage) pages_[parent.child].prev = b;
  child.prev = a;
  parent.child = b;
  return a;
}

// The standard two passes: meld the siblings in pairs from the left, then
// the pairs into one from the right. The pairs wait on a stack threaded
// through their `next` links.
uint32_t BlockManager::merge_pairs(uint32_t first) {
  uint32_t stack = kNoPage;
  while (first != kNoPage) {
    uint32_t a = first, b = pages_[a].next;
    first = b == kNoPage ? kNoPage : pages_[b].next;
    pages_[a].next = pages_[a].prev = kNoPage;
    if (b != kNoPage) pages_[b].next = pages_[b].prev = kNoPage;
    uint32_t pair = meld(a, b);
    pages_[pair].next = stack;
    stack = pair;
  }
  uint32_t root = kNoPage;
  while (stack != kNoPage) {
    uint32_t pair = stack;
    stack = pages_[pair].next;
    pages_[pair].next = kNoPage;
    root = meld(root, pair);
  }
  return root;
}

uint64_t BlockManager::size_of(uint64_t offset) const {
  auto it = live_.find(offset);
  return it == live_.end() ? 0 : it->second.size;
}

std::optional<BlockManager::Live> BlockManager::block_containing(uint64_t offset) const {
  auto it = live_.find(offset);  // a block's start: the common case
  if (it == live_.end()) {
    // Inside something of the large space: a large block, or a page whose
    // last block start at or before `offset` is the one.
    auto after = occupants_.upper_bound(offset);
    if (after == occupants_.begin()) return std::nullopt;
    auto [at, page] = *std::prev(after);
    std::optional<uint64_t> start = page == kNoPage ? std::optional<uint64_t>(at) : pages_[page].start_at_or_before(offset);
    if (!start) return std::nullopt;
    it = live_.find(*start);
    if (it == live_.end()) return std::nullopt;
  }
  if (offset - it->first >= it->second.size) return std::nullopt;  // free space after it
  return Live{it->first, it->second.size, it->second.requested};
}

void BlockManager::Page::mark_start(uint64_t offset, bool live) {
  uint64_t slot = (offset - at) / kAlignment;
  if (live) starts[slot / 64] |= 1ull << (slot % 64);
  else starts[slot / 64] &= ~(1ull << (slot % 64));
}

std::optional<uint64_t> BlockManager::Page::start_at_or_before(uint64_t offset) const {
  if (offset - at >= kPageSize) return std::nullopt;
  uint64_t slot = (offset - at) / kAlignment;
  for (int64_t w = static_cast<int64_t>(slot / 64); w >= 0; --w) {
    uint64_t bits = starts[w];
    if (static_cast<uint64_t>(w) == slot / 64) bits &= ~0ull >> (63 - slot % 64);  // slots <= slot
    if (bits) return at + (static_cast<uint64_t>(w) * 64 + 63 - __builtin_clzll(bits)) * kAlignment;
  }
  return std::nullopt;
}

void BlockManager::set_requested(uint64_t offset, uint64_t bytes) {
  auto it = live_.find(offset);
  if (it != live_.end() && bytes <= it->second.size) it->second.requested = bytes;
}

// Walks the space in address order: the small pool's and the large space's
// free ranges, live large blocks and pages partition [0, capacity), the
// small pool holding pages only, at multiples of kPageSize; within each
// page, its free ranges and its small blocks partition the page. Then the
// page index.
std::string BlockManager::check() const {
  if (std::string e = large_free_.check(); !e.empty()) return "large space: " + e;
  if (std::string e = small_free_.check(); !e.empty()) return "small pool: " + e;
  if (small_end_ % kPageSize || small_end_ > capacity_) return "the small pool is not whole pages";
  for (const auto& [start, n] : small_free_.ranges())
    if (start % kPageSize || n % kPageSize || start + n > small_end_)
      return "a small pool free range out of place at " + std::to_string(start);
  if (large_free_.count() && large_free_.ranges().begin()->first < small_end_)
    return "a large space free range in the small pool";
  struct Span {
    uint64_t at, size;
    uint32_t page;  // the page it is, or the page it is in; kNoPage: a large block
  };
  std::vector<Span> large, small;  // large blocks and pages; small blocks
  uint64_t large_allocated = 0, small_allocated = 0;
  size_t in_use = 0;
  for (const auto& [offset, block] : live_) {
    if (block.requested > block.size) return "a block asked for more than its size at " + std::to_string(offset);
    if (block.page == kNoPage) {
      // A large block may be small-sized: what unhold() made of the rest of
      // a held range (Note [Space held for an owner]).
      large.push_back({offset, block.size, kNoPage});
      large_allocated += block.size;
    } else {
      if (block.page >= pages_.size() || !pages_[block.page].in_use)
        return "a small block in no page at " + std::to_string(offset);
      small.push_back({offset, block.size, block.page});
      small_allocated += block.size;
    }
  }
  for (uint32_t id = 0; id < pages_.size(); ++id) {
    if (pages_[id].in_use) large.push_back({pages_[id].at, kPageSize, id});
  }
  auto by_address = [](const Span& a, const Span& b) { return a.at < b.at; };
  std::sort(large.begin(), large.end(), by_address);
  std::sort(small.begin(), small.end(), by_address);
  // The ordered occupants of the large space: its large blocks and pages.
  if (occupants_.size() != large.size()) return "the occupants of the large space disagree in number";
  auto occupant = occupants_.begin();
  for (const Span& l : large) {
    if (occupant->first != l.at || occupant->second != l.page)
      return "the occupants of the large space disagree at " + std::to_string(l.at);
    ++occupant;
  }
  // Held ranges are neither free nor live: a third kind of span.
  uint64_t held = 0;
  for (const auto& [owner, h] : held_) {
    if (std::string e = h.all.check(); !e.empty()) return "held ranges: " + e;
    if (std::string e = h.fenced.check(); !e.empty()) return "fenced held ranges: " + e;
    for (const auto& [start, n] : h.fenced.ranges()) {
      std::optional<std::pair<uint64_t, uint64_t>> in = h.all.containing(start);
      if (!in || start + n > in->first + in->second) return "a fenced range not held at " + std::to_string(start);
    }
    for (const auto& [start, n] : h.all.ranges()) {
      large.push_back({start, n, kHeldSpan});
      held += n;
    }
  }
  if (held != held_bytes_) return "held() disagrees with the held ranges";
  std::sort(large.begin(), large.end(), by_address);
  for (const Span& l : large) {
    if (l.at >= small_end_) break;
    if (l.page == kNoPage || l.page == kHeldSpan || l.at % kPageSize)
      return "a large block, a held range or a misaligned page in the small pool at " + std::to_string(l.at);
  }

  uint64_t cursor = 0;
  std::vector<std::pair<uint64_t, uint64_t>> free_ranges(small_free_.ranges().begin(), small_free_.ranges().end());
  free_ranges.insert(free_ranges.end(), large_free_.ranges().begin(), large_free_.ranges().end());
  auto free_it = free_ranges.begin(), free_end = free_ranges.end();
  auto taken = large.begin();
  auto block = small.begin();
  while (free_it != free_end || taken != large.end()) {
    bool take_free = taken == large.end() || (free_it != free_end && free_it->first < taken->at);
    uint64_t start = take_free ? free_it->first : taken->at;
    uint64_t size = take_free ? free_it->second : taken->size;
    if (start != cursor) return "a gap or overlap in the large space at " + std::to_string(start);
    if (start % kAlignment || size % kAlignment) return "misaligned range at " + std::to_string(start);
    cursor = start + size;
    if (take_free) {
      ++free_it;
      continue;
    }
    if (taken->page != kNoPage && taken->page != kHeldSpan) {  // a page: its free ranges and blocks partition it
      uint32_t id = taken->page;
      const Page& page = pages_[id];
      std::string at = std::to_string(page.at);
      if (std::string e = page.free.check(); !e.empty()) return "page at " + at + ": " + e;
      if (page.used == 0) return "an empty page kept at " + at;
      uint64_t used = 0, in_page = page.at, blocks = 0;
      auto f = page.free.ranges().begin(), f_end = page.free.ranges().end();
      while (in_page < page.at + kPageSize) {
        if (f != f_end && f->first == in_page) {
          in_page += f->second;
          ++f;
        } else if (block != small.end() && block->at == in_page && block->page == id) {
          if (block->size > kSmallLimit) return "a large block in the page at " + at;
          if (page.start_at_or_before(in_page) != in_page) return "a block start unmarked in the page at " + at;
          used += block->size;
          in_page += block->size;
          ++blocks;
          ++block;
        } else {
          return "a gap or overlap in the page at " + at;
        }
      }
      if (in_page != page.at + kPageSize || f != f_end) return "a block or free range runs past the page at " + at;
      if (used != page.used) return "the used bytes of the page at " + at + " disagree";
      uint64_t marked = 0;
      for (uint64_t w : page.starts) marked += static_cast<uint64_t>(__builtin_popcountll(w));
      if (marked != blocks) return "block starts marked in the page at " + at + " that no block has";
      ++in_use;
    }
    ++taken;
  }
  if (cursor != capacity_) return "the large space does not end at capacity";
  if (block != small.end()) return "a small block outside its page at " + std::to_string(block->at);
  if (allocated_ != large_allocated + small_allocated) return "allocated() disagrees with the blocks";
  return check_index(in_use);
}

// The page index holds every page in use, where the page says, under the
// bucket of its largest free range; its heaps are in order, its bitmaps
// mark exactly the non-empty buckets; the unused slots are the others.
std::string BlockManager::check_index(size_t in_use) const {
  for (uint32_t id = 0; id < pages_.size(); ++id) {
    const Page& page = pages_[id];
    if (page.in_use && page.bucket != page.free.largest() / kAlignment)
      return "the page at " + std::to_string(page.at) + " is not under its largest free range in the index";
    if (!page.in_use && (page.used || page.free.count())) return "an unused page slot that is not empty";
  }
  // Each marked bucket's heap, walked from its root: every page in it is in
  // use and under this bucket, no lower than its parent, linked both ways;
  // together they are the pages in use. (The unmarked buckets are not
  // visited: check() runs after every operation of the fuzzer, and
  // index_remove() unmarks a bucket only once its heap is empty.)
  size_t indexed = 0;
  uint64_t words = 0;
  std::vector<uint32_t> parents;  // the walk's stack: pages whose children are to be seen
  for (uint32_t w = 0; w < kBuckets / 64; ++w) {
    if (nonempty_[w]) words |= 1ull << w;
    for (uint64_t bits = nonempty_[w]; bits; bits &= bits - 1) {
      uint32_t b = w * 64 + static_cast<uint32_t>(__builtin_ctzll(bits)), root = heaps_[b];
      if (root == kNoPage) return "the page index marks an empty bucket";
      if (pages_[root].prev != kNoPage || pages_[root].next != kNoPage) return "a page index root with siblings";
      parents.assign(1, root);
      while (!parents.empty()) {
        uint32_t parent = parents.back();
        parents.pop_back();
        const Page& p = pages_[parent];
        if (!p.in_use || p.bucket != b) return "a page in the wrong heap of the page index";
        if (++indexed > in_use) return "the page index holds pages not in use, or a cycle";
        for (uint32_t c = p.child, prev = parent; c != kNoPage; prev = c, c = pages_[c].next) {
          if (c >= pages_.size() || pages_[c].prev != prev) return "a page index heap's links disagree";
          if (pages_[c].at < p.at) return "a page index heap out of order at " + std::to_string(p.at);
          parents.push_back(c);
          if (indexed + parents.size() > in_use) return "the page index holds pages not in use, or a cycle";
        }
      }
    }
  }
  if (words != nonempty_words_) return "the page index's word bitmap is wrong";
  if (indexed != in_use) return "the page index misses pages in use";
  if (unused_pages_.size() != pages_.size() - in_use) return "the unused page slots disagree with the pages";
  std::vector<bool> listed(pages_.size());
  for (uint32_t id : unused_pages_) {
    if (id >= pages_.size() || pages_[id].in_use || listed[id]) return "a page slot listed as unused wrongly";
    listed[id] = true;
  }
  return "";
}

}  // namespace alloc
}  // namespace gpuslack

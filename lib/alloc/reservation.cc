#include "alloc/reservation.h"

#include <algorithm>
#include <vector>

namespace gpuslack {
namespace alloc {

// Blocks go where the least is left to map (Note [Placement by cost] in
// block_manager.h): a free mapped range before an unmapped smaller one.

std::optional<uintptr_t> Reservation::allocate_mapped(uint64_t bytes) {
  // The best fit first: on the cached path it is mapped, and costs no scan.
  std::optional<uint64_t> at = blocks_.allocate(bytes);
  if (!at) return std::nullopt;
  if (map_.mapped_range(*at, blocks_.size_of(*at))) return base_ + *at;
  blocks_.release(*at);
  // Else a mapped placement further along, if any.
  at = blocks_.allocate(bytes, unmapped_cost(), 0);
  if (!at) return std::nullopt;
  // A small block in a page in use was placed without asking.
  if (map_.mapped_range(*at, blocks_.size_of(*at))) return base_ + *at;
  blocks_.release(*at);
  return std::nullopt;
}

std::optional<uintptr_t> Reservation::allocate_mapped(uint64_t bytes, Owner owner) {
  BlockManager::Ranges from_held;
  std::optional<uint64_t> at = blocks_.allocate_growing(owner, bytes, unmapped_cost(), 0, &from_held);
  if (!at) return std::nullopt;
  if (map_.mapped_range(*at, blocks_.size_of(*at))) return base_ + *at;
  // A small block in a page in use, placed without asking.
  blocks_.release(*at);
  for (const auto& [offset, size] : from_held) blocks_.hold(owner, offset, size);
  return std::nullopt;
}

std::optional<uintptr_t> Reservation::allocate_mapping(uint64_t bytes, uint64_t map_budget, CUresult* result,
                                                       std::optional<Owner> owner, uint64_t growth_allowed,
                                                       bool in_pages, uint64_t long_run_bytes) {
  BlockManager::Ranges from_held;
  // Granule by granule, a block of whole granules goes at a granule edge at
  // the same price (BlockManager's Note [Whole granules at granule edges]).
  std::optional<uint64_t> at =
      owner ? blocks_.allocate_growing(*owner, bytes, unmapped_cost(), BlockManager::kAnyCost, &from_held, !in_pages)
            : blocks_.allocate(bytes, unmapped_cost(), BlockManager::kAnyCost, !in_pages);
  if (!at) {
    *result = CUDA_ERROR_NOT_FOUND;
    return std::nullopt;
  }
  uint64_t size = blocks_.size_of(*at);
  // GranuleMap's Note [Pages mapped whole]: the block's pages, whole where
  // they are unmapped; the block alone when that does not fit.
  uint64_t span_at = *at, span_size = size;
  if (in_pages) map_.page_span(*at, size, &span_at, &span_size);
  if (growth_allowed != kNoBudget) {
    // DeviceAllocator's Note [Releasing memory]: what this maps past the
    // growth allowed, cached granules elsewhere give back first, so the
    // mapped total does not grow while free memory lies unused elsewhere.
    uint64_t missing = map_.unmapped_bytes(span_at, span_size);
    // See Note [Releasing what a miss needs]: whole ranges on a fuller device.
    if (missing > growth_allowed) release_free(missing - growth_allowed, true, !in_pages);
  }
  auto map = [&](uint64_t o, uint64_t n) {
    if (map_budget == kNoBudget || map_.mapped_range(o, n)) return map_.map(o, n, in_pages, long_run_bytes);
    if (map_budget == 0) return CUDA_ERROR_OUT_OF_MEMORY;
    // The budget caps what this reservation may map in all: what it has
    // plus what the device-wide cap leaves.
    map_.set_limit(map_.mapped_bytes() + map_budget);
    CUresult r = map_.map(o, n, in_pages, long_run_bytes);
    map_.set_limit(0);
    return r;
  };
  *result = map(span_at, span_size);
  if (*result == CUDA_ERROR_OUT_OF_MEMORY && span_size != size) *result = map(*at, size);
  map_.release_kept();  // what the map did not take (GranuleMap's Note [Moving a page instead of making one])
  if (*result != CUDA_SUCCESS) {
    // What was the owner's stays the owner's (Note [Space held for an
    // owner]); the rest, unmapped again, is free space as before.
    blocks_.release(*at);
    for (const auto& [offset, size] : from_held) blocks_.hold(*owner, offset, size);
    return std::nullopt;
  }
  return base_ + *at;
}

std::optional<BlockManager::Live> Reservation::block_containing(uintptr_t a) const {
  if (!holds(a)) return std::nullopt;
  std::optional<BlockManager::Live> b = blocks_.block_containing(a - base_);
  if (b) b->start += base_;
  return b;
}

uint64_t Reservation::trim() {
  uint64_t released = 0;
  // Copy: unmapping does not change the free ranges, but be plain about it.
  std::vector<std::pair<uint64_t, uint64_t>> ranges(blocks_.large_free().ranges().begin(),
                                                    blocks_.large_free().ranges().end());
  ranges.insert(ranges.end(), blocks_.small_free().ranges().begin(), blocks_.small_free().ranges().end());
  for (const auto& [offset, size] : ranges) released += map_.unmap(offset, size) * map_.granularity();
  return released;
}

uint64_t Reservation::release_free(uint64_t want, bool keep, bool whole_ranges) {
  // Smaller free ranges first: holes that serve fewer requests.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [offset, size] : blocks_.large_free().ranges())
    if (size >= map_.granularity()) ranges.emplace_back(offset, size);
  for (const auto& [offset, size] : blocks_.small_free().ranges()) ranges.emplace_back(offset, size);  // empty pages
  std::sort(ranges.begin(), ranges.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  if (!whole_ranges) {
    // See Note [One range for a move]: the smallest range that alone gives
    // what is wanted goes first.
    auto one = std::find_if(ranges.begin(), ranges.end(), [&](const auto& r) {
      return map_.whole_chunk_bytes(r.first, r.second, want) >= want;
    });
    if (one != ranges.end()) std::rotate(ranges.begin(), one, one + 1);
  }
  uint64_t released = 0;
  const uint64_t page = map_.page_bytes();
  for (const auto& [offset, size] : ranges) {
    if (released >= want) break;
    // See Note [Releasing what a miss needs]: of this range, what is still
    // wanted, in whole pages, and kReleaseSlackPages more.
    uint64_t most = whole_ranges ? ~0ull : (want - released + page - 1) / page * page + kReleaseSlackPages * page;
    released += map_.unmap(offset, size, keep, most) * map_.granularity();
  }
  return released;
}

}  // namespace alloc
}  // namespace gpuslack

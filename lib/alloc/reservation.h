// Reservation: one reserved virtual range of a device, the blocks placed
// in it, and the physical memory mapped under them.
//
// It pairs a GranuleMap (what is mapped) with a BlockManager (where blocks
// go), and speaks in absolute addresses. DeviceAllocator starts with one
// Reservation sized from device memory and adds another when no free range
// of the ones it has can hold a block (the address space, not the memory,
// ran out); a block never spans two.
//
// Its range begins with a small pool as large as the large space
// (BlockManager's Note [The small pool apart]): `bytes` of address space
// for large blocks and as much again, rounded to pages, where only
// small-pool pages go, so that no small block shares a physical page with
// a large one. Address space costs no memory.
//
// Note [Releasing what a miss needs]: a miss past the growth ceiling
// releases cached chunks first (DeviceAllocator's Note [Releasing
// memory]), smallest free ranges first. It used to unmap every chunk of
// each range it took, the last one included, so a 20 MiB need could
// release a 200 MiB hole: the handles no map took were released
// (cuMemRelease), and the next miss created them again (cuMemCreate +
// cuMemMap). Now a range gives only what is still wanted, rounded up to
// whole pages, and kReleaseSlackPages more (the next miss of a trace whose
// shapes change usually needs a page again: with no slack one replayed
// trace's peak grew a granule, with two some needed more calls;
// bench/README.md, "Releasing what a miss needs"). The chunks go from the
// range's start. Only while the miss maps in pages (the device less than
// a quarter full, GranuleMap's Note [Pages mapped whole]): on a fuller
// device a range gives every chunk, as before, since giving back less
// made one replayed trace need a larger device (minimalloc/H, 1.02 to
// 1.05 GiB).
//
// Note [One range for a move]: of the free ranges a miss past the growth
// ceiling releases from, the smallest one whose whole chunks alone give
// what is wanted goes first, before the smaller ones (smallest first
// otherwise, as above). A move costs a cuMemUnmap per run of chunks
// released and a cuMemMap per handle mapped: the pages of one range come
// off with one unmap, and a long run's handle (GranuleMap's Note [Two
// pages make a long run]) comes off whole, where gathering small holes
// took one unmap each and their pages one map each. Only while the miss
// maps in pages: on a fuller device every range gives every chunk, as
// before, smallest first. On the 19 replayed traces, after runs of two
// pages, calls fell from 5,018 to 4,901 (expandable segments: 5,347),
// minimalloc/C now under theirs (209 against 218), minimalloc's peak
// reserved 0.795x theirs (bench/README.md, "One range for a move").
//
// Not thread-safe: the allocator serializes calls. holds() reads only
// what never changes after construction.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "alloc/block_manager.h"
#include "alloc/granule_map.h"

namespace gpuslack {
namespace alloc {

class Reservation {
 public:
  // `bytes` of address space for large blocks, and a small pool before
  // them; physical memory in pages of `map_chunk` (GranuleMap).
  Reservation(const cuda::DriverApi* api, int device, uint64_t bytes, uint64_t map_chunk)
      : map_(api, device, 2 * bytes + map_chunk, map_chunk),
        base_(static_cast<uintptr_t>(map_.base())),
        blocks_(map_.size(), small_pool(map_, bytes)) {}

  bool ok() const { return map_.ok(); }
  const std::string& why() const { return map_.why(); }
  bool holds(uintptr_t a) const { return a >= base_ && a < base_ + map_.size(); }

  // A block of `bytes` on memory already mapped (no driver call), or
  // nullopt (nothing changes). With an owner, its held ranges may be part
  // of the placement (BlockManager's Note [Space held for an owner]).
  using Owner = BlockManager::Owner;
  std::optional<uintptr_t> allocate_mapped(uint64_t bytes);
  std::optional<uintptr_t> allocate_mapped(uint64_t bytes, Owner owner);
  // A block of `bytes`, mapping what is missing under it: at most
  // `map_budget` bytes more (kNoBudget: as much as the device gives). On
  // failure nullopt, nothing changes, and *result says why:
  // CUDA_ERROR_NOT_FOUND when no free range here holds `bytes`,
  // CUDA_ERROR_OUT_OF_MEMORY for a full device or an exhausted budget, else
  // the driver's error.
  static constexpr uint64_t kNoBudget = ~0ull;
  // `in_pages`: its pages mapped whole (GranuleMap's Note [Pages mapped
  // whole]); else its own granules, one handle each.
  // Of what the block needs mapped, all but `growth_allowed` bytes are
  // first released from cached granules in other free ranges (kNoBudget:
  // nothing is released). `long_run_bytes`: GranuleMap::map's (Note [One
  // handle for a long run]).
  std::optional<uintptr_t> allocate_mapping(uint64_t bytes, uint64_t map_budget, CUresult* result,
                                           std::optional<Owner> owner = std::nullopt,
                                           uint64_t growth_allowed = kNoBudget, bool in_pages = true,
                                           uint64_t long_run_bytes = 0);

  // Note [Space held for an owner], in absolute addresses.
  uint64_t release_to(uintptr_t a, Owner owner) { return blocks_.release_to(a - base_, owner); }
  // BlockManager's Note [One pool for an owner's reuse]: declines when a
  // tighter free range, already mapped, holds the block.
  std::optional<uintptr_t> allocate_held(Owner owner, uint64_t bytes) {
    std::optional<uint64_t> at = blocks_.allocate_held(
        owner, bytes, [this](uint64_t start, uint64_t, uint64_t size) { return map_.mapped_range(start, size); });
    return at ? std::optional<uintptr_t>(base_ + *at) : std::nullopt;
  }
  void unhold(Owner owner, std::vector<uint64_t>* out) {
    size_t first = out->size();
    blocks_.unhold(owner, out);
    for (size_t i = first; i < out->size(); ++i) (*out)[i] += base_;
  }
  bool fence_held(Owner owner) { return blocks_.fence_held(owner); }
  uint64_t release_fenced(Owner owner) { return blocks_.release_fenced(owner); }
  std::vector<Owner> owners() const { return blocks_.owners(); }
  uint64_t held() const { return blocks_.held(); }
  uint64_t held_by(Owner owner) const { return blocks_.held_by(owner); }

  // Frees the block at `a`; returns its size (0: no live block there).
  uint64_t release(uintptr_t a) { return blocks_.release(a - base_); }
  uint64_t size_of(uintptr_t a) const { return blocks_.size_of(a - base_); }
  // The live block holding `a`, in absolute addresses (BlockManager::Live).
  std::optional<BlockManager::Live> block_containing(uintptr_t a) const;
  // The physical chunks under [a, a + bytes), offsets made addresses
  // (GranuleMap::chunks).
  bool chunks(uintptr_t a, uint64_t bytes, std::vector<GranuleMap::Chunk>* out) const {
    size_t first = out->size();
    if (!map_.chunks(a - base_, bytes, out)) return false;
    for (size_t i = first; i < out->size(); ++i) (*out)[i].offset += base_;
    return true;
  }
  void set_requested(uintptr_t a, uint64_t bytes) { blocks_.set_requested(a - base_, bytes); }
  // BlockManager::allocate_joined, in absolute addresses: `mine` lie here.
  std::optional<BlockManager::Joined> allocate_joined(uint64_t bytes, BlockManager::Ranges mine) {
    for (auto& m : mine) m.first -= base_;
    std::optional<BlockManager::Joined> j = blocks_.allocate_joined(bytes, mine);
    if (!j) return j;
    j->at += base_;
    for (uint64_t& a : j->used) a += base_;
    if (j->rest) j->rest->first += base_;
    return j;
  }

  // Unmaps every chunk lying wholly in free space (the large space's and
  // the small pool's); returns the bytes released.
  uint64_t trim();
  // Unmaps chunks lying wholly in free ranges, smallest ranges first (but
  // See Note [One range for a move]), until
  // at least `want` bytes are released or none is left, and of a range
  // only what is still wanted (Note [Releasing what a miss needs]); returns
  // the bytes released. DeviceAllocator's Note [Releasing memory].
  // With `keep`, the handles are kept for the map that follows (GranuleMap's
  // Note [Moving a page instead of making one]).
  // With `whole_ranges`, every chunk of each range taken, as before.
  uint64_t release_free(uint64_t want, bool keep = false, bool whole_ranges = false);
  CUresult grant(int device) { return map_.grant(device); }
  // Pages a range gives past the need (See Note [Releasing what a miss
  // needs]).
  static constexpr uint64_t kReleaseSlackPages = 1;

  uint64_t allocated() const { return blocks_.allocated(); }  // live blocks, freed-but-held included
  uint64_t mapped_bytes() const { return map_.mapped_bytes(); }
  uint64_t largest_free() const { return blocks_.largest_free(); }
  // The small pool's bytes at the range's start; the large space follows.
  uint64_t small_pool() const { return blocks_.small_pool(); }
  const GranuleMap& map() const { return map_; }

 private:
  // The small pool's bytes: what the range holds beyond `bytes` for large
  // blocks, rounded down to the map's pages, so that the large space begins
  // at a page edge and no page spans both.
  static uint64_t small_pool(const GranuleMap& map, uint64_t bytes) {
    if (!map.ok() || map.size() <= bytes) return 0;
    return (map.size() - bytes) / map.page_bytes() * map.page_bytes();
  }
  // A placement's price (Note [Placement by cost]): the bytes left to map.
  auto unmapped_cost() const {
    return [this](uint64_t offset, uint64_t size, uint64_t enough) { return map_.unmapped_bytes(offset, size, enough); };
  }

  GranuleMap map_;
  uintptr_t base_;
  BlockManager blocks_;
};

}  // namespace alloc
}  // namespace gpuslack

// BlockManager: which bytes of one address range are handed out, as
// blocks, and which are free.
//
// The allocator reserves virtual address space and maps physical memory
// under it; BlockManager decides, in offsets within that space, where each
// block goes. It knows nothing of CUDA, streams or mapping.
//   - Every size is rounded up to 512 bytes, every offset a multiple of 512;
//     a block also keeps the bytes asked for (what a range check allows).
//   - Small requests (<= 1 MiB) are packed into 2 MiB small-pool pages, so
//     small short-lived blocks never split the space large blocks need.
//   - Large requests take the best fit (smallest free range that holds
//     them, lowest address among equals) of the address-ordered free
//     ranges, and a freed block merges with its free neighbours at once:
//     two free ranges are never adjacent (base::RangeSet).
//   - With a small pool (the constructor's `small_pool`), pages lie in
//     their own range [0, small_pool), granule-aligned, and no large block
//     ever goes there; so a small block never shares a physical page with a
//     large one (Note [The small pool apart]). Only when that range is full
//     does a page go to the large space.
//   - A small-pool page goes back to where it came from (the small pool's
//     range or the large space) when its last block is freed.
//   - The caller may price placements (Note [Placement by cost]).
//
// Note [The cached path]: an allocation or a free that maps nothing costs a
// few B-tree and hash-table operations and no scan (base::RangeSet's header says
// how its indexes keep their share small). Live blocks are in a hash table
// that also names each small block's page. For the block holding an
// interior address (a range check of a copy or memset), large blocks and
// pages are also in a B-tree by address (changed only when a large block
// or a page comes or goes), and each page marks its blocks' starts in a
// bitmap (one bit set or cleared per small block): a tree lookup, then at
// most 64 words of one page's bitmap. Pages are indexed by their
// largest free range in buckets, one per possible size (a page's ranges are
// multiples of 512 B below 2 MiB: 4096 of them), a two-level bitmap of the
// non-empty buckets and, in each bucket, a heap of its pages by address: a
// small request's page (the one whose largest free range is the smallest
// that fits, lowest address among equals) is found with two bit scans and a
// heap's root, and a page whose largest range changes moves between two
// heaps that usually hold one page each. The heaps are pairing heaps linked
// through the pages themselves (O(1) insert, O(log n) amortized removal),
// so 4096 buckets cost one array of roots and no allocation.
// bench/alloc_latency_bench.cc measures the path; bench/README.md has the
// figures.
//
// Note [Placement by cost]: best fit by virtual range alone is blind to what
// lies under a range. The VMM allocator keeps free granules mapped (cached),
// so the smallest range that fits may be unmapped while a larger one is
// mapped, or a block placed at a range's start may need a new granule where
// its end would reuse a neighbour's partly used one. allocate() with a
// PlacementCost (the allocator's: the bytes a placement would have to map)
// weighs, for a large block or a new small-pool page, the first
// kPlacementCandidates ranges in best-fit order, each at its start and at
// its end, and takes the cheapest (best fit among equals; the first free
// placement ends the search). Bounded: a miss prices at most 64
// candidates, each by a walk of its granules that stops once it costs as
// much as the cheapest so far (or more than the ceiling); the cached path
// never gets here.
//
// Note [Whole granules at granule edges]: a large block whose size is a
// whole number of kPageSize (2 MiB, the driver's granule) placed at a
// range's start or end lies across one granule more than it needs when that
// end is not at a granule edge, and the space it leaves beside it is a
// granule shared with a live neighbour, which can never be released. On a
// trace of growing KV caches (gpt-decode-bf16), 6 MiB and 2 MiB blocks
// after a 62.5 MiB one lay at odd-MiB offsets, with thirteen 2 MiB holes
// each straddling two granules: 26 MiB mapped, free, and unreleasable when
// the device was full. So a caller that maps granule by granule may ask
// (`at_granule_edges`) that such a block also be offered each candidate
// range's first and last granule edges, before its ends: at the same cost
// it goes there, covers exactly its own granules, and whatever it leaves is
// whole granules or a piece of a neighbour's. The VMM allocator asks it
// only when the miss maps granule by granule (GranuleMap's Note [Pages
// mapped whole]): while it maps 20 MiB pages, holes in a page are the
// page's, and there the edges raised peak reserved on the recorded traces
// (bench/README.md, "The small pool apart").
//
// Note [Space held for an owner]: a large block freed in an owner's order
// (the VMM allocator's owners are streams: a block freed on stream S may be
// reused by later work on S at once, by anything else only after a fence)
// leaves the live blocks but does not join the free space everyone
// allocates from. Its range is held for the owner, merged with the owner's
// neighbouring held ranges, and split again by the owner's own requests
// (allocate_held: best fit, any size above kSmallLimit): PyTorch's and
// RMM's stream-ordered pools, inside one address space. A miss may place a
// block over the owner's held ranges and the free space together
// (allocate_growing), so a held range at the edge of free space grows
// rather than a new one being mapped beside it. Held ranges reach everyone
// in one of two ways. fence_held() marks what the owner holds now (the
// caller records one event in its order), and once that event completes,
// release_fenced() moves the marked ranges the owner has not reused since
// into the free space: the owner never loses its own reuse meanwhile. Or
// unhold() makes each held range a live block again, for the caller to
// fence and release() (pressure, a stream's end). Small blocks live in
// pages shared by every owner and are never held.
//
// Note [One pool for an owner's reuse]: an owner's held ranges and the free
// space are two pools, and a block taken from the held ranges whenever one
// fits (the allocator's cached path for a stream's large requests) is
// carved from a larger held range while a free range of exactly its size
// lies beside it: on the recorded training traces that left tens of free
// holes, each smaller than the next request, and peak reserved 25% over
// PyTorch's expandable segments on a CNN (bench/README.md, "One pool for a
// stream's reuse"). PyTorch has one pool per stream, best fit over all of
// it. So allocate_held(owner, bytes, free_fits) is one pool: the best fit
// over the owner's held ranges and the free space together, a held range
// merged with the free ranges beside it (allocate_growing's lending), at
// the first of the first kPlacementCandidates ranges in best-fit order
// whose start or end the caller can use now: wholly held, or where
// `free_fits` says (the VMM allocator: already mapped). What the block
// leaves of the held ranges stays held. A first version declined to the
// free space's best fit only when a free range tighter than the held best
// fit could be used, and took an exact held fit at once; it still kept the
// two pools apart where they touch: on gpt-decode-bf16 (KV caches that grow
// 16 KiB a step, bench/README.md, "Held and free space as one pool") each
// freed cache was held, a 3.8 MiB range next to a free one of 1.5-3.8 MiB,
// too small for the next cache alone, and peak reserved was 804 MiB
// against PyTorch's 724, with 42 MiB held and 92 MiB free and mapped in
// 30 such pieces at the peak; as one pool, 724. An exact held fit is
// weighed like the rest (taken at once, it cost opt-finetune 20 MiB). When
// no range looked at offers a usable place at its ends, the held best fit
// serves, as before. The pool is read, not built: each held range is grown
// over the free ranges beside it (two lookups), those extents are ordered
// by (size, start) and merged into the free space's own best-fit walk, and
// only the block's bytes are taken (from the held ranges, then the free
// space). Lending the held ranges to the free space and taking them back,
// as allocate_growing does on a miss, chose the same places on all 19
// traces but cost a few tree insertions and removals per held range on
// every call, and doubled the decode traces' allocation p99
// (bench/README.md, "The one pool read, not built").
//
// Note [The small pool apart]: the VMM allocator maps large blocks in
// 20 MiB pages, one physical handle each, released only whole (GranuleMap's
// Note [Pages mapped whole]), and releases cached memory only where a whole
// handle lies in free space. A small-pool page placed in the large space
// lands, by cost, in the cached free part of such a page (nothing to map
// there), and then one small block that lives on pins the whole 20 MiB
// after every large block on it is freed; a page placed at an offset that
// is not a multiple of 2 MiB spans two granules; and pages scattered in the
// large space leave holes whose edge granules are partly used. PyTorch keeps
// its small pool in segments of its own (2 MiB, against 20 MiB pages in the
// large pool) for the same reason. So the allocator gives BlockManager a
// small pool: the first `small_pool` bytes of the range, where only pages
// go, each at a multiple of kPageSize (one granule, one handle of its own:
// the allocator never maps small pages in 20 MiB pages), and the large
// space begins after it, at a page edge. An empty page goes back to the
// small pool's free ranges, still mapped (a cache for the next page, priced
// by Note [Placement by cost]), and is released like any cached granule.
// Only a full small pool sends pages to the large space, as before.
//
// Plain data, no locking: the caller serializes. check() verifies every
// invariant (blocks never overlap, free and used bytes partition the space,
// everything freed has coalesced) for tests and debug builds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "base/absl_containers.h"
#include "base/range_set.h"

namespace gpuslack {
namespace alloc {

class BlockManager {
 public:
  static constexpr uint64_t kAlignment = 512;
  static constexpr uint64_t kSmallLimit = 1ull << 20;
  static constexpr uint64_t kPageSize = 2ull << 20;

  // Manages [0, capacity), capacity rounded down to kAlignment; its first
  // `small_pool` bytes (rounded down to kPageSize) hold small-pool pages
  // only (Note [The small pool apart]; 0: pages share the large space).
  explicit BlockManager(uint64_t capacity, uint64_t small_pool = 0);

  // The offset of a new block of at least `bytes` (0 bytes: a 512-byte
  // block), or nullopt if no free range holds it.
  std::optional<uint64_t> allocate(uint64_t bytes);

  // What placing a block at [offset, offset + size) costs the caller, in
  // its own unit (the VMM allocator: bytes it would have to map). It may
  // stop counting once the cost reaches `enough` (the cheapest placement
  // seen so far): any result >= `enough` is not chosen.
  using PlacementCost = absl::FunctionRef<uint64_t(uint64_t offset, uint64_t size, uint64_t enough)>;
  static constexpr uint64_t kAnyCost = ~0ull;
  static constexpr size_t kPlacementCandidates = 64;
  // As allocate(), but a large block or a new small-pool page goes where
  // `cost` is lowest (Note [Placement by cost]); nullopt, and nothing
  // changes, if the cheapest costs more than `max_cost`. A small block that
  // fits a page in use goes there as allocate() would put it: the cost is
  // not asked. With `at_granule_edges`, Note [Whole granules at granule
  // edges].
  std::optional<uint64_t> allocate(uint64_t bytes, PlacementCost cost, uint64_t max_cost,
                                   bool at_granule_edges = false);
  // Frees the block that starts at `offset`; returns its (rounded) size, or
  // 0 if no live block starts there (nothing changes).
  uint64_t release(uint64_t offset);
  // The (rounded) size of the live block at `offset`, 0 if none.
  uint64_t size_of(uint64_t offset) const;
  // A live block: where it starts, its (rounded) size, and the bytes asked
  // for (allocate()'s `bytes`, or set_requested()'s).
  struct Live {
    uint64_t start, size, requested;
  };
  // The live block holding `offset` (anywhere inside it).
  std::optional<Live> block_containing(uint64_t offset) const;
  // The live block at `offset` is reused for a request of `bytes` (at most
  // its size): what block_containing() reports as asked for.
  void set_requested(uint64_t offset, uint64_t bytes);

  // Note [Space held for an owner].
  using Owner = uint64_t;
  // Frees the large block at `offset` into `owner`'s held space; returns
  // its size, or 0 if no live large block starts there (nothing changes).
  uint64_t release_to(uint64_t offset, Owner owner);
  // A block of at least `bytes` (large: above kSmallLimit once rounded)
  // from `owner`'s held space alone (the three-argument form below, with
  // no free place usable), the rest still held; nullopt if none of its
  // ranges holds it or the request is small.
  std::optional<uint64_t> allocate_held(Owner owner, uint64_t bytes) {
    return allocate_held(owner, bytes, [](uint64_t, uint64_t, uint64_t) { return false; });
  }
  // As allocate_held(), but over the owner's held ranges and the free space
  // as one pool, best fit, where the block lies wholly in held space or
  // `free_fits(start, size, bytes)` says the caller can place it at `start`
  // now (`size` == `bytes`: the block's rounded size); else the held best
  // fit, or nullopt (Note [One pool for an owner's reuse]).
  using FreeFits = absl::FunctionRef<bool(uint64_t start, uint64_t size, uint64_t bytes)>;
  std::optional<uint64_t> allocate_held(Owner owner, uint64_t bytes, FreeFits free_fits);
  // As allocate(bytes, cost, max_cost), over the free space and `owner`'s
  // held ranges together: what the block does not take of them stays held.
  // A small request is allocate(bytes, cost, max_cost). The pieces the block
  // took from the held ranges are appended to `from_held` (if given), so
  // that a caller who cannot use the block can release() it and hold() them
  // again.
  using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;  // (offset, size)
  std::optional<uint64_t> allocate_growing(Owner owner, uint64_t bytes, PlacementCost cost, uint64_t max_cost,
                                           Ranges* from_held = nullptr, bool at_granule_edges = false);
  // StreamCache's Note [A stream's small blocks at any size]
  // (block_manager_reshape.cc): a small block of `bytes` over `mine` (live
  // small blocks, by address, that the caller gives up) and the free ranges
  // of their pages, at the start of the smallest extent (lowest address
  // among equals) that one page's free ranges and blocks of `mine`, one
  // after another, make with at least one block of `mine`; nullopt if none
  // holds it (nothing changes). Joined::used: the blocks of `mine` it
  // covered, which are gone; of one it covered in part the rest stays a live
  // block of its own (asked for: all of it), Joined::rest.
  struct Joined {
    uint64_t at;
    std::vector<uint64_t> used;
    std::optional<std::pair<uint64_t, uint64_t>> rest;  // (offset, size)
  };
  std::optional<Joined> allocate_joined(uint64_t bytes, const Ranges& mine);
  // Moves [offset, offset + size), which must lie in free space, into
  // `owner`'s held ranges. False (nothing changes) if it does not.
  bool hold(Owner owner, uint64_t offset, uint64_t size);
  // Makes every held range of `owner` a live block (size and bytes asked
  // for: the range's), appends their offsets to `out`, forgets the owner.
  void unhold(Owner owner, std::vector<uint64_t>* out);
  // Marks every range `owner` holds now as fenced (replacing the previous
  // mark); false if it holds none. Reusing a range unmarks it.
  bool fence_held(Owner owner);
  // Moves the marked ranges into the free space; returns their bytes.
  uint64_t release_fenced(Owner owner);
  // The owners holding ranges now.
  std::vector<Owner> owners() const;
  uint64_t held() const { return held_bytes_; }  // every owner's held bytes
  uint64_t held_by(Owner owner) const {
    auto h = held_.find(owner);
    return h == held_.end() ? 0 : h->second.all.total();
  }

  uint64_t capacity() const { return capacity_; }
  uint64_t allocated() const { return allocated_; }  // live blocks, rounded sizes
  uint64_t largest_free() const { return large_free_.largest(); }
  size_t small_pages() const { return pages_.size() - unused_pages_.size(); }
  // The large space's free ranges (where a new large block can go).
  const base::RangeSet& large_free() const { return large_free_; }
  // The small pool's free ranges (where a new page goes first; empty
  // without a small pool). Note [The small pool apart].
  const base::RangeSet& small_free() const { return small_free_; }
  uint64_t small_pool() const { return small_end_; }

  std::string check() const;

  static uint64_t round_up(uint64_t bytes) {
    return bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
  }

 private:
  static constexpr uint32_t kNoPage = ~0u;
  static constexpr uint32_t kHeldSpan = ~0u - 1;  // check()'s mark for a held range
  // The page index's buckets: one per page largest free range / kAlignment.
  static constexpr uint32_t kBuckets = kPageSize / kAlignment;
  static_assert(kBuckets == 64 * 64, "the bucket bitmap is two levels of 64 bits");
  struct Block {
    uint64_t size;
    uint32_t page;  // its small-pool page's index in pages_; kNoPage: a large block
    uint64_t requested;  // the bytes asked for, <= size
  };
  struct Page {
    uint64_t at = 0;  // where the page lies in the large space
    base::RangeSet free;    // its free bytes, in offsets of the whole space
    uint64_t used = 0;
    bool in_use = false;  // false: a slot of pages_ waiting for reuse
    // In the page index: its bucket (free.largest() / kAlignment) and its
    // links in that bucket's pairing heap: its first child, its next
    // sibling, and its previous sibling (its parent if it is the first
    // child; kNoPage for the heap's root).
    uint32_t bucket = 0;
    uint32_t child = kNoPage, next = kNoPage, prev = kNoPage;
    // Bit i: a live block starts at at + i * kAlignment.
    uint64_t starts[kPageSize / kAlignment / 64] = {};
    void mark_start(uint64_t offset, bool live);
    // The last block start at or before `offset` (in the page), if any.
    std::optional<uint64_t> start_at_or_before(uint64_t offset) const;
  };

  struct Placement {
    PlacementCost cost;
    uint64_t max_cost;
    bool at_granule_edges = false;  // Note [Whole granules at granule edges]
  };
  // Takes `size` bytes of `space`: best fit, or by `placement`.
  static std::optional<uint64_t> take_from(base::RangeSet& space, uint64_t size, const Placement* placement);
  std::optional<uint64_t> take_large(uint64_t size, const Placement* placement) {
    return take_from(large_free_, size, placement);
  }
  // A new page's place: the small pool while it has room, else the large space.
  std::optional<uint64_t> take_page(const Placement* placement);
  std::optional<uint64_t> place(uint64_t bytes, const Placement* placement);
  std::optional<uint64_t> allocate_small(uint64_t size, uint64_t requested, const Placement* placement);
  void add_live(uint64_t at, const Block& block);
  uint64_t release_small(uint64_t offset, const Block& block);
  uint32_t new_page(uint64_t at);
  std::string check_index(size_t pages_in_use) const;

  // The page index (Note [The cached path]). Every page in use is in it,
  // under the bucket of its largest free range.
  uint32_t best_page(uint64_t size) const;  // kNoPage if no page holds `size`
  void index_add(uint32_t page);
  void index_remove(uint32_t page);
  uint32_t meld(uint32_t a, uint32_t b);  // two heap roots; the root of both
  uint32_t merge_pairs(uint32_t first);  // a sibling list; the root of all

  uint64_t capacity_;
  uint64_t allocated_ = 0;
  base::RangeSet large_free_;                        // pages are live 2 MiB blocks in it
  uint64_t small_end_ = 0;                           // the small pool: [0, small_end_)
  base::RangeSet small_free_;                        // its free ranges
  absl::flat_hash_map<uint64_t, Block> live_;  // offset -> every live block (not pages)
  absl::btree_map<uint64_t, uint32_t> occupants_;  // offset -> large block (kNoPage) or page (its id)
  std::vector<Page> pages_;                    // indexed by Block::page; slots reused
  std::vector<uint32_t> unused_pages_;         // the slots of pages_ not in use
  // See Note [Space held for an owner]: each owner's held ranges, never
  // adjacent to each other; adjacent to free space or another owner's, they
  // may be.
  struct Held {
    base::RangeSet all;
    base::RangeSet fenced;  // marked by fence_held(), within `all`
  };
  absl::flat_hash_map<Owner, Held> held_;
  uint64_t held_bytes_ = 0;
  std::vector<uint32_t> heaps_ = std::vector<uint32_t>(kBuckets, kNoPage);  // each bucket's root page
  uint64_t nonempty_[kBuckets / 64] = {};      // bit b: heaps_[b] holds a page
  uint64_t nonempty_words_ = 0;                // bit w: nonempty_[w] != 0
};

}  // namespace alloc
}  // namespace gpuslack

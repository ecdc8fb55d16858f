// Reservation on the simulated driver: where blocks go against what is
// mapped (Note [Placement by cost] in lib/alloc/block_manager.h), and the
// small pool kept apart from large blocks' pages (Note [The small pool
// apart]).
#include "alloc/reservation.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "sim_driver.h"

namespace gpuslack {
namespace alloc {
namespace {

using test_support::api;
using test_support::kMiB;

// Free ranges [4, 12) MiB, unmapped, and [16, 32) MiB, mapped: an 8 MiB
// block fits the first best, and goes to the second, where nothing is left
// to map.
class MappedAndUnmappedHoles : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(r_.ok()) << r_.why();
    large_ = r_.small_pool();  // the large space begins after the small pool
    base_ = r_.map().base() + large_;
    for (uint64_t mib : {4, 8, 4, 16, 4}) {
      CUresult e = CUDA_SUCCESS;
      std::optional<uintptr_t> a = r_.allocate_mapping(mib * kMiB, Reservation::kNoBudget, &e);
      ASSERT_TRUE(a) << e;
      at_.push_back(*a);
    }
    ASSERT_EQ(base_ + 16 * kMiB, at_[3]);
    r_.release(at_[1]);  // [4, 12)
    r_.release(at_[3]);  // [16, 32)
    ASSERT_EQ(24 * kMiB, r_.trim());  // 4 + 8 granules
    // [16, 32) mapped again, and freed: cached.
    CUresult e = CUDA_SUCCESS;
    std::optional<uintptr_t> again = r_.allocate_mapping(16 * kMiB, Reservation::kNoBudget, &e);
    ASSERT_TRUE(again) << e;
    ASSERT_EQ(base_ + 16 * kMiB, *again);
    r_.release(*again);
    mapped_before_ = r_.map().granules_mapped_total();
  }

  Reservation r_{api(), 0, 64 * kMiB, 2 * kMiB};
  uintptr_t base_ = 0;
  uint64_t large_ = 0;
  std::vector<uintptr_t> at_;
  uint64_t mapped_before_ = 0;
};

TEST_F(MappedAndUnmappedHoles, AllocateMappedFindsTheMappedRangeBehindTheBestFit) {
  EXPECT_FALSE(r_.map().mapped_range(large_ + 4 * kMiB, 8 * kMiB));
  std::optional<uintptr_t> a = r_.allocate_mapped(8 * kMiB);
  ASSERT_TRUE(a);
  EXPECT_EQ(base_ + 16 * kMiB, *a);
  EXPECT_EQ(mapped_before_, r_.map().granules_mapped_total());
  // Nothing mapped holds 12 MiB (only [36, 64) does, unmapped): no block,
  // and nothing changes.
  uint64_t allocated = r_.allocated(), largest = r_.largest_free();
  EXPECT_FALSE(r_.allocate_mapped(12 * kMiB));
  EXPECT_EQ(allocated, r_.allocated());
  EXPECT_EQ(largest, r_.largest_free());
  EXPECT_EQ(0u, r_.size_of(base_ + 36 * kMiB));
}

TEST_F(MappedAndUnmappedHoles, AllocateMappingMapsNothingWhenAMappedRangeHoldsTheBlock) {
  CUresult e = CUDA_SUCCESS;
  std::optional<uintptr_t> a = r_.allocate_mapping(8 * kMiB, Reservation::kNoBudget, &e);
  ASSERT_TRUE(a) << e;
  EXPECT_EQ(base_ + 16 * kMiB, *a);
  EXPECT_EQ(mapped_before_, r_.map().granules_mapped_total());
  // The rest of the mapped range, [24, 32), then the unmapped best fit.
  std::optional<uintptr_t> b = r_.allocate_mapping(8 * kMiB, Reservation::kNoBudget, &e);
  ASSERT_TRUE(b) << e;
  EXPECT_EQ(base_ + 24 * kMiB, *b);
  EXPECT_EQ(mapped_before_, r_.map().granules_mapped_total());
  std::optional<uintptr_t> c = r_.allocate_mapping(8 * kMiB, Reservation::kNoBudget, &e);
  ASSERT_TRUE(c) << e;
  EXPECT_EQ(base_ + 4 * kMiB, *c);
  EXPECT_EQ(mapped_before_ + 4, r_.map().granules_mapped_total());
}

// A small block allocated between large ones, in a reservation that maps
// 20 MiB pages: after the large ones are freed and the cache trimmed, only
// the small block's own granule stays mapped. Before the small pool was
// kept apart, its page went, by cost, into the cached rest of the first
// large block's 20 MiB page, and held all 20 MiB mapped.
// See Note [Releasing what a miss needs]: a large cached range gives what is
// wanted, in whole pages, and kReleaseSlackPages more, not all it holds.
TEST(ReleaseFree, ARangeGivesWhatIsWantedAndOnePageMore) {
  Reservation r(api(), 0, 64 * kMiB, 2 * kMiB);  // pages of one granule
  ASSERT_TRUE(r.ok()) << r.why();
  CUresult e = CUDA_SUCCESS;
  std::optional<uintptr_t> a = r.allocate_mapping(24 * kMiB, Reservation::kNoBudget, &e);
  ASSERT_TRUE(a) << e;
  ASSERT_EQ(24 * kMiB, r.mapped_bytes());
  ASSERT_EQ(24 * kMiB, r.release(*a));  // cached: one free range, 12 pages mapped
  const uint64_t page = r.map().page_bytes();
  EXPECT_EQ(2 * page + Reservation::kReleaseSlackPages * page, r.release_free(3 * kMiB));
  EXPECT_EQ(24 * kMiB - (2 + Reservation::kReleaseSlackPages) * page, r.mapped_bytes());
  const uint64_t left = r.mapped_bytes();
  EXPECT_EQ(left, r.release_free(64 * kMiB));  // more than is cached: all of it
  EXPECT_EQ(0u, r.mapped_bytes());
  // On a fuller device (whole_ranges), a range gives every chunk.
  a = r.allocate_mapping(24 * kMiB, Reservation::kNoBudget, &e);
  ASSERT_TRUE(a) << e;
  ASSERT_EQ(24 * kMiB, r.release(*a));
  EXPECT_EQ(24 * kMiB, r.release_free(3 * kMiB, false, true));
}

// See Note [One range for a move]: a range that alone gives what is
// wanted goes before smaller ones: one cuMemUnmap, and the smaller hole
// stays mapped.
TEST(ReleaseFree, OneRangeThatGivesWhatIsWantedGoesFirst) {
  Reservation r(api(), 0, 64 * kMiB, 2 * kMiB);  // pages of one granule
  ASSERT_TRUE(r.ok()) << r.why();
  CUresult e = CUDA_SUCCESS;
  // Three blocks side by side; the first and the third freed: a free range
  // of 2 MiB (the first), and one of 12 MiB (the third and the rest).
  std::optional<uintptr_t> small = r.allocate_mapping(2 * kMiB, Reservation::kNoBudget, &e);
  std::optional<uintptr_t> live = r.allocate_mapping(2 * kMiB, Reservation::kNoBudget, &e);
  std::optional<uintptr_t> large = r.allocate_mapping(12 * kMiB, Reservation::kNoBudget, &e);
  ASSERT_TRUE(small && live && large) << e;
  ASSERT_EQ(*small + 2 * kMiB, *live);
  ASSERT_EQ(*live + 2 * kMiB, *large);
  ASSERT_EQ(16 * kMiB, r.mapped_bytes());
  r.release(*small);
  r.release(*large);
  const uint64_t unmaps = r.map().unmap_calls();
  const uint64_t page = r.map().page_bytes();
  EXPECT_EQ(4 * kMiB + Reservation::kReleaseSlackPages * page, r.release_free(4 * kMiB));
  EXPECT_EQ(1u, r.map().unmap_calls() - unmaps);
  EXPECT_TRUE(r.map().mapped(*small - r.map().base()));  // the small hole stays
  EXPECT_TRUE(r.map().mapped(*live - r.map().base()));
  // On a fuller device (whole_ranges), smallest first, as before.
  EXPECT_EQ(2 * kMiB, r.release_free(1, false, true));
  EXPECT_FALSE(r.map().mapped(*small - r.map().base()));
}

TEST(SmallPool, ASmallBlockDoesNotKeepALargePageMapped) {
  Reservation r(api(), 0, 64 * kMiB, 20 * kMiB);
  ASSERT_TRUE(r.ok()) << r.why();
  const uint64_t granule = r.map().granularity();
  ASSERT_EQ(2 * kMiB, granule);
  ASSERT_GE(r.small_pool(), 64 * kMiB);
  EXPECT_EQ(0u, r.small_pool() % r.map().page_bytes());  // the large space begins at a page edge
  CUresult e = CUDA_SUCCESS;
  std::optional<uintptr_t> a = r.allocate_mapping(8 * kMiB, Reservation::kNoBudget, &e);
  ASSERT_TRUE(a) << e;
  EXPECT_EQ(20 * kMiB, r.mapped_bytes());  // its page, whole
  // The page's cached rest costs nothing to map; the small block goes to
  // the small pool all the same, on a granule of its own.
  std::optional<uintptr_t> small = r.allocate_mapped(4096);
  EXPECT_FALSE(small);  // nothing mapped in the small pool yet
  small = r.allocate_mapping(4096, Reservation::kNoBudget, &e, std::nullopt, Reservation::kNoBudget, false);
  ASSERT_TRUE(small) << e;
  const uintptr_t base = r.map().base();
  EXPECT_LT(*small - base, r.small_pool());
  EXPECT_EQ(0u, (*small - base) % granule);  // the page is one granule
  std::optional<uintptr_t> b = r.allocate_mapping(8 * kMiB, Reservation::kNoBudget, &e);
  ASSERT_TRUE(b) << e;
  EXPECT_GE(*b - base, r.small_pool());
  EXPECT_EQ(22 * kMiB, r.mapped_bytes());  // b in a's page, the small page apart
  EXPECT_EQ(8 * kMiB, r.release(*a));
  EXPECT_EQ(8 * kMiB, r.release(*b));
  EXPECT_EQ(20 * kMiB, r.trim());
  EXPECT_EQ(granule, r.mapped_bytes());  // the small block's granule alone
  std::vector<GranuleMap::Chunk> chunks;
  ASSERT_TRUE(r.chunks(*small, 4096, &chunks));
  ASSERT_EQ(1u, chunks.size());
  EXPECT_EQ(granule, chunks[0].bytes);  // a handle of its own
  // Freed too, its page stays cached in the small pool and is released
  // like any cached granule.
  EXPECT_EQ(4096u, r.release(*small));
  EXPECT_EQ(granule, r.mapped_bytes());
  EXPECT_EQ(granule, r.release_free(1));
  EXPECT_EQ(0u, r.mapped_bytes());
}

// An emptied small-pool page stays mapped and serves the next page with no
// driver call.
TEST(SmallPool, AnEmptiedPageServesTheNextWithoutMapping) {
  Reservation r(api(), 0, 64 * kMiB, 20 * kMiB);
  ASSERT_TRUE(r.ok()) << r.why();
  CUresult e = CUDA_SUCCESS;
  std::optional<uintptr_t> s = r.allocate_mapping(64 * 1024, Reservation::kNoBudget, &e, std::nullopt,
                                                  Reservation::kNoBudget, false);
  ASSERT_TRUE(s) << e;
  EXPECT_EQ(64u * 1024, r.release(*s));
  const uint64_t mapped = r.map().granules_mapped_total();
  std::optional<uintptr_t> t = r.allocate_mapped(512 * 1024);
  ASSERT_TRUE(t);
  EXPECT_LT(*t - r.map().base(), r.small_pool());
  EXPECT_EQ(mapped, r.map().granules_mapped_total());
}

// Mapping granule by granule, a block of whole granules goes to a granule
// edge (BlockManager's Note [Whole granules at granule edges]): freed, it
// leaves whole granules that a trim releases, where at the range's start it
// would have left a granule shared with its neighbour.
TEST(GranuleEdges, AMissMappingGranulesPutsWholeGranulesAtAnEdge) {
  Reservation r(api(), 0, 64 * kMiB, 20 * kMiB);
  ASSERT_TRUE(r.ok()) << r.why();
  const uintptr_t large = r.map().base() + r.small_pool();
  CUresult e = CUDA_SUCCESS;
  auto granules = [&](uint64_t bytes) {
    return r.allocate_mapping(bytes, Reservation::kNoBudget, &e, std::nullopt, Reservation::kNoBudget, false);
  };
  std::optional<uintptr_t> a = granules(3 * kMiB);
  ASSERT_TRUE(a) << e;
  EXPECT_EQ(large, *a);
  std::optional<uintptr_t> b = granules(4 * kMiB);
  ASSERT_TRUE(b) << e;
  EXPECT_EQ(large + 4 * kMiB, *b);  // at the edge: the same two granules to map as at 3 MiB, none shared
  std::optional<uintptr_t> c = granules(2 * kMiB);
  ASSERT_TRUE(c) << e;
  EXPECT_EQ(large + 8 * kMiB, *c);
  EXPECT_EQ(10 * kMiB, r.mapped_bytes());
  EXPECT_EQ(4 * kMiB, r.release(*b));
  EXPECT_EQ(4 * kMiB, r.trim());  // b's two granules, whole
  EXPECT_EQ(6 * kMiB, r.mapped_bytes());
}

// BlockManager's Note [One pool for an owner's reuse]: a stream's held
// range larger than the block gives way to a free range of its size that is
// mapped (nothing to map there), which the stream's request takes; unmapped,
// the held range serves it.
TEST(OnePool, AHeldRangeGivesWayToATighterMappedFreeRange) {
  Reservation r(api(), 0, 64 * kMiB, 2 * kMiB);
  ASSERT_TRUE(r.ok()) << r.why();
  const Reservation::Owner owner = 7;
  std::vector<uintptr_t> at;
  for (uint64_t mib : {4, 4, 4, 8, 4}) {
    CUresult e = CUDA_SUCCESS;
    std::optional<uintptr_t> a = r.allocate_mapping(mib * kMiB, Reservation::kNoBudget, &e);
    ASSERT_TRUE(a) << e;
    at.push_back(*a);
  }
  ASSERT_EQ(at[0] + 12 * kMiB, at[3]);
  r.release(at[1]);                                  // 4 MiB, mapped, between live blocks
  ASSERT_EQ(8 * kMiB, r.release_to(at[3], owner));  // 8 MiB held for the stream
  std::optional<uintptr_t> m = r.allocate_held(owner, 4 * kMiB);  // the mapped 4 MiB is tighter
  ASSERT_TRUE(m);
  EXPECT_EQ(8 * kMiB, r.held_by(owner));
  EXPECT_EQ(at[1], *m);
  // Freed and trimmed, it is no longer where the block can go without mapping.
  r.release(*m);
  ASSERT_EQ(4 * kMiB, r.trim());
  std::optional<uintptr_t> h = r.allocate_held(owner, 4 * kMiB);
  ASSERT_TRUE(h);
  EXPECT_EQ(at[3], *h);
  EXPECT_EQ(4 * kMiB, r.held_by(owner));
}

}  // namespace
}  // namespace alloc
}  // namespace gpuslack

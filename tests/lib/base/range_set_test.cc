#include "base/range_set.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <vector>

namespace gpuslack {
namespace base {
namespace {

TEST(RangeSet, InsertCoalescesWithBothNeighbours) {
  RangeSet s;
  ASSERT_TRUE(s.insert(0, 100));
  ASSERT_TRUE(s.insert(200, 100));
  EXPECT_EQ(2u, s.count());
  ASSERT_TRUE(s.insert(100, 100));  // bridges the two
  EXPECT_EQ(1u, s.count());
  EXPECT_EQ(300u, s.largest());
  EXPECT_EQ("", s.check());
}

TEST(RangeSet, RefusesOverlapsAndEmptyRanges) {
  RangeSet s;
  ASSERT_TRUE(s.insert(100, 100));
  EXPECT_FALSE(s.insert(150, 10));
  EXPECT_FALSE(s.insert(50, 60));
  EXPECT_FALSE(s.insert(199, 5));
  EXPECT_FALSE(s.insert(300, 0));
  EXPECT_EQ(100u, s.total());
  EXPECT_EQ("", s.check());
}

TEST(RangeSet, BestFitTakesTheSmallestThenLowest) {
  RangeSet s;
  s.insert(0, 1000);
  s.insert(2000, 300);
  s.insert(3000, 300);
  s.insert(4000, 500);
  EXPECT_EQ(2000u, s.take_best_fit(300));  // exact, lowest address
  EXPECT_EQ(4000u, s.take_best_fit(400));  // 500 beats 1000
  EXPECT_EQ(4400u, s.take_best_fit(1));    // what is left of the 500 is now smallest
  EXPECT_FALSE(s.take_best_fit(1001));
  EXPECT_EQ("", s.check());
}

TEST(RangeSet, ForEachFitVisitsTheFittingRangesInBestFitOrder) {
  using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;
  RangeSet s;
  ASSERT_TRUE(s.insert(0, 4096));
  ASSERT_TRUE(s.insert(8192, 1024));
  ASSERT_TRUE(s.insert(16384, 2048));
  ASSERT_TRUE(s.insert(32768, 1024));
  // [16384, 18432) shrinks to [16896, 18432): its old key (2048, 16384)
  // stays behind, stale, and is not the largest (Note [Stale size keys]).
  ASSERT_TRUE(s.take(16384, 512));
  Ranges seen;
  auto record = [&](uint64_t start, uint64_t size) {
    seen.emplace_back(start, size);
    return true;
  };
  // Four fit; the stale key is neither visited nor counted against the limit.
  s.for_each_fit(1024, 4, record);
  EXPECT_EQ((Ranges{{8192, 1024}, {32768, 1024}, {16896, 1536}, {0, 4096}}), seen);
  EXPECT_EQ("", s.check());
  seen.clear();
  s.for_each_fit(1024, 2, record);  // a limit
  EXPECT_EQ((Ranges{{8192, 1024}, {32768, 1024}}), seen);
  seen.clear();
  s.for_each_fit(1536, 10, [&](uint64_t start, uint64_t size) {  // stopped by f
    seen.emplace_back(start, size);
    return false;
  });
  EXPECT_EQ((Ranges{{16896, 1536}}), seen);
  seen.clear();
  s.for_each_fit(8192, 10, record);  // none fits
  EXPECT_TRUE(seen.empty());
  EXPECT_EQ(4096u + 1024 + 1536 + 1024, s.total());  // nothing taken
  EXPECT_EQ("", s.check());
}

TEST(RangeSet, TakeSplitsARangeInThree) {
  RangeSet s;
  s.insert(0, 1000);
  ASSERT_TRUE(s.take(400, 200));
  EXPECT_EQ(2u, s.count());
  EXPECT_EQ(800u, s.total());
  EXPECT_FALSE(s.take(500, 10));   // no longer free
  EXPECT_FALSE(s.take(300, 200));  // runs past its range
  ASSERT_TRUE(s.insert(400, 200));
  EXPECT_EQ(1u, s.count());
  EXPECT_EQ("", s.check());
}

TEST(RangeSet, RangesAreOffsetAndSizeInAddressOrder) {
  RangeSet s;
  s.insert(4000, 500);
  s.insert(0, 1000);
  s.insert(2000, 300);
  std::vector<std::pair<uint64_t, uint64_t>> got(s.ranges().begin(), s.ranges().end());
  EXPECT_EQ((std::vector<std::pair<uint64_t, uint64_t>>{{0, 1000}, {2000, 300}, {4000, 500}}), got);
  auto it = s.ranges().begin();
  EXPECT_EQ(0u, it->first);
  EXPECT_EQ(1000u, it->second);
  EXPECT_EQ(3u, s.ranges().size());
  EXPECT_EQ(std::make_pair(uint64_t{2000}, uint64_t{300}), s.containing(2299));
  EXPECT_FALSE(s.containing(2300));
  EXPECT_FALSE(s.containing(1999));
}

TEST(RangeSet, EveryWayARangeChanges) {
  RangeSet s;
  s.insert(1000, 1000);
  ASSERT_TRUE(s.take(1900, 100));  // the tail: the range's end moves
  ASSERT_TRUE(s.take(1000, 100));  // the head: its start moves
  EXPECT_EQ(std::make_pair(uint64_t{1100}, uint64_t{800}), s.containing(1500));
  ASSERT_TRUE(s.insert(1900, 50));  // grows up, merging with the range before
  ASSERT_TRUE(s.insert(1050, 50));  // grows down, merging with the range after
  EXPECT_EQ(std::make_pair(uint64_t{1050}, uint64_t{900}), s.containing(1050));
  ASSERT_TRUE(s.insert(2000, 10));  // apart: a range of its own
  ASSERT_TRUE(s.insert(1950, 50));  // bridges two
  EXPECT_EQ(1u, s.count());
  EXPECT_EQ(960u, s.largest());
  EXPECT_EQ("", s.check());
  ASSERT_TRUE(s.take(1050, 960));  // all of it
  EXPECT_EQ(0u, s.count());
  EXPECT_EQ(0u, s.largest());
  EXPECT_FALSE(s.take_best_fit(1));
  EXPECT_EQ("", s.check());
}

// Random inserts and takes against a model that knows every free unit: the
// same answers, the same ranges, every invariant after every operation.
// Sanitizer builds run the model check far slower: fewer seeds there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr unsigned kSeeds = 5;
#else
constexpr unsigned kSeeds = 20;
#endif

TEST(RangeSet, RandomOperationsMatchAUnitByUnitModel) {
  constexpr uint64_t kUnits = 256;
  for (unsigned seed = 1; seed <= kSeeds; ++seed) {
    std::mt19937_64 rng(seed);
    RangeSet s;
    std::vector<bool> free(kUnits, false);
    auto model_ranges = [&] {
      std::vector<std::pair<uint64_t, uint64_t>> ranges;
      for (uint64_t u = 0; u < kUnits;) {
        if (!free[u]) {
          ++u;
          continue;
        }
        uint64_t start = u;
        while (u < kUnits && free[u]) ++u;
        ranges.emplace_back(start, u - start);
      }
      return ranges;
    };
    for (int op = 0; op < 3000; ++op) {
      uint64_t offset = rng() % kUnits, size = 1 + rng() % 16;
      if (offset + size > kUnits) size = kUnits - offset;
      bool all_free = true, none_free = true;
      for (uint64_t u = offset; u < offset + size; ++u) (free[u] ? none_free : all_free) = false;
      switch (rng() % 3) {
        case 0:  // insert: only where nothing is free
          ASSERT_EQ(none_free, s.insert(offset, size)) << "seed " << seed << " op " << op;
          if (none_free) std::fill(free.begin() + offset, free.begin() + offset + size, true);
          break;
        case 1: {  // take: only inside one free range
          ASSERT_EQ(all_free, s.take(offset, size)) << "seed " << seed << " op " << op;
          if (all_free) std::fill(free.begin() + offset, free.begin() + offset + size, false);
          break;
        }
        default: {  // best fit: the smallest range that holds it, lowest first
          std::optional<uint64_t> want;
          uint64_t want_size = ~0ull;
          for (auto [start, len] : model_ranges()) {
            if (len >= size && len < want_size) want = start, want_size = len;
          }
          ASSERT_EQ(want, s.take_best_fit(size)) << "seed " << seed << " op " << op;
          if (want) std::fill(free.begin() + *want, free.begin() + *want + size, false);
        }
      }
      ASSERT_EQ("", s.check()) << "seed " << seed << " op " << op;
      auto ranges = model_ranges();
      std::vector<std::pair<uint64_t, uint64_t>> got(s.ranges().begin(), s.ranges().end());
      ASSERT_EQ(ranges, got) << "seed " << seed << " op " << op;
      uint64_t largest = 0, total = 0;
      for (auto [start, len] : ranges) largest = std::max(largest, len), total += len;
      ASSERT_EQ(largest, s.largest());
      ASSERT_EQ(total, s.total());
    }
  }
}

TEST(RangeSet, TakeOverlapTakesEveryPieceInsideTheSpan) {
  RangeSet r;
  r.insert(0, 100);
  r.insert(200, 100);
  r.insert(400, 100);
  EXPECT_EQ(0u, r.take_overlap(100, 100));   // a gap: nothing
  EXPECT_EQ(200u, r.take_overlap(50, 400));  // the end of one, all of one, the start of one
  EXPECT_EQ("", r.check());
  EXPECT_EQ(2u, r.count());
  EXPECT_EQ(100u, r.total());
  EXPECT_EQ(std::make_optional(std::make_pair<uint64_t, uint64_t>(0, 50)), r.containing(10));
  EXPECT_EQ(std::make_optional(std::make_pair<uint64_t, uint64_t>(450, 50)), r.containing(460));
  EXPECT_EQ(10u, r.take_overlap(460, 10));  // inside one range: split in three
  EXPECT_EQ(3u, r.count());
  EXPECT_EQ("", r.check());
  EXPECT_EQ(50u, r.take_overlap(0, 50));  // one whole range
  EXPECT_EQ(2u, r.count());
  EXPECT_EQ(0u, r.take_overlap(0, 450));  // ends where a range starts: nothing
  EXPECT_EQ(5u, r.take_overlap(445, 10));  // starts before a range, ends inside it
  EXPECT_EQ(35u, r.total());
  EXPECT_EQ("", r.check());
}

}  // namespace
}  // namespace base
}  // namespace gpuslack

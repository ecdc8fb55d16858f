// BlockManager without CUDA: randomized sequences of allocations and frees,
// with every invariant checked after every operation, against an
// independent model of which bytes are live, and against a reference
// allocator that places every block the way BlockManager must, by scanning.
#include "alloc/block_manager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <vector>

namespace gpuslack {
namespace alloc {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

TEST(BlockManager, RoundsTo512AndPacksSmallBlocksIntoPages) {
  BlockManager m(64 * kMiB);
  auto a = m.allocate(1), b = m.allocate(513), c = m.allocate(0);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(512u, m.size_of(*a));
  EXPECT_EQ(1024u, m.size_of(*b));
  EXPECT_EQ(512u, m.size_of(*c));
  EXPECT_EQ(1u, m.small_pages());  // all three in one 2 MiB page
  EXPECT_EQ(2048u, m.allocated());
  EXPECT_EQ("", m.check());
  EXPECT_EQ(512u, m.release(*a));
  EXPECT_EQ(0u, m.release(*a));  // twice: nothing
  m.release(*b);
  m.release(*c);
  EXPECT_EQ(0u, m.small_pages());  // the empty page went back
  EXPECT_EQ(64 * kMiB, m.largest_free());
  EXPECT_EQ("", m.check());
}

// See Note [The small pool apart]. Pages go to the small pool, each at a
// multiple of kPageSize, large blocks never; an emptied page goes back
// there; only a full pool sends pages to the large space.
TEST(BlockManager, SmallPoolHoldsThePagesApartFromLargeBlocks) {
  BlockManager m(64 * kMiB, 4 * kMiB + 512);  // rounded down: two pages
  EXPECT_EQ(4 * kMiB, m.small_pool());
  EXPECT_EQ(4 * kMiB, m.small_free().total());
  EXPECT_EQ(60 * kMiB, m.largest_free());
  auto large = m.allocate(3 * kMiB);
  ASSERT_TRUE(large);
  EXPECT_EQ(4 * kMiB, *large);  // the large space begins after the pool
  auto a = m.allocate(kMiB), b = m.allocate(kMiB), c = m.allocate(kMiB);  // a and b share the first page
  ASSERT_TRUE(a && b && c);
  EXPECT_LT(*a, 4 * kMiB);
  EXPECT_LT(*b, 4 * kMiB);
  EXPECT_LT(*c, 4 * kMiB);
  EXPECT_EQ(2u, m.small_pages());
  EXPECT_EQ(0u, m.small_free().count());
  auto d = m.allocate(kMiB + 512);  // a page's worth does not fit the two: the large space
  auto e = m.allocate(kMiB);        // the fourth megabyte of the pool
  ASSERT_TRUE(d && e);
  EXPECT_LT(*e, 4 * kMiB);
  auto f = m.allocate(512);  // the pool is full: a page in the large space
  ASSERT_TRUE(f);
  EXPECT_GE(*f, 4 * kMiB);
  EXPECT_EQ(3u, m.small_pages());
  EXPECT_EQ("", m.check());
  // Emptied, each page goes back where it came from.
  m.release(*f);
  EXPECT_EQ(2u, m.small_pages());
  m.release(*a);
  m.release(*b);
  m.release(*c);
  m.release(*e);
  EXPECT_EQ(0u, m.small_pages());
  EXPECT_EQ(4 * kMiB, m.small_free().total());
  EXPECT_EQ(1u, m.small_free().count());
  EXPECT_EQ("", m.check());
  // Placement by cost over the pool: a page goes where the price is lowest
  // (here: the second page slot), never outside the pool while it has room.
  auto second_slot_free = [](uint64_t offset, uint64_t, uint64_t) -> uint64_t { return offset == 2 * kMiB ? 0 : 1; };
  auto nowhere = [](uint64_t, uint64_t, uint64_t) -> uint64_t { return 1; };
  EXPECT_FALSE(m.allocate(kMiB, nowhere, 0));  // no slot at the price: nothing, not the large space
  EXPECT_EQ(0u, m.small_pages());
  auto g = m.allocate(4096, second_slot_free, 0);
  ASSERT_TRUE(g);
  EXPECT_EQ(2 * kMiB, *g);
  m.release(*g);
  m.release(*large);
  m.release(*d);
  EXPECT_EQ(60 * kMiB, m.largest_free());
  EXPECT_EQ("", m.check());
}

// See Note [Whole granules at granule edges]: asked, a block of whole
// granules goes to a granule edge at the same price; other sizes, and
// callers that do not ask, keep the range's ends.
TEST(BlockManager, WholeGranulesGoToGranuleEdgesWhenAsked) {
  BlockManager m(64 * kMiB);
  auto free_everywhere = [](uint64_t, uint64_t, uint64_t) -> uint64_t { return 0; };
  auto a = m.allocate(3 * kMiB);  // [0, 3): the free range starts mid-granule
  ASSERT_TRUE(a);
  auto b = m.allocate(4 * kMiB, free_everywhere, BlockManager::kAnyCost, true);
  ASSERT_TRUE(b);
  EXPECT_EQ(4 * kMiB, *b);  // not 3 MiB, across three granules
  auto c = m.allocate(4 * kMiB + 512, free_everywhere, BlockManager::kAnyCost, true);
  ASSERT_TRUE(c);
  EXPECT_EQ(8 * kMiB, *c);  // not whole granules: the range's start
  m.release(*c);
  auto d = m.allocate(4 * kMiB, free_everywhere, BlockManager::kAnyCost);
  ASSERT_TRUE(d);
  EXPECT_EQ(8 * kMiB, *d);  // not asked: the range's start
  m.release(*d);
  // The last edge of a range, when the first costs more.
  auto first_costs = [](uint64_t offset, uint64_t, uint64_t) -> uint64_t { return offset < 20 * kMiB ? 1 : 0; };
  auto e = m.allocate(2 * kMiB, first_costs, BlockManager::kAnyCost, true);
  ASSERT_TRUE(e);
  EXPECT_EQ(62 * kMiB, *e);  // [8, 64) ends at an edge
  EXPECT_EQ("", m.check());
  // A range too short for an edge placement still takes the block.
  m.release(*e);
  m.release(*b);
  auto f = m.allocate(60 * kMiB + 512);  // [3, 63 MiB + 512): a 1 MiB - 512 hole at its end
  ASSERT_TRUE(f);
  EXPECT_EQ("", m.check());
}

TEST(BlockManager, LargeBlocksAreBestFitAndCoalesceOnFree) {
  BlockManager m(100 * kMiB);
  auto a = m.allocate(10 * kMiB), b = m.allocate(20 * kMiB), c = m.allocate(10 * kMiB);
  ASSERT_TRUE(a && b && c);
  m.release(*b);  // a 20 MiB hole between a and c
  auto d = m.allocate(15 * kMiB);
  EXPECT_EQ(*b, *d);  // best fit: the hole (20 MiB) beats the tail (60 MiB)
  m.release(*a);
  m.release(*c);
  m.release(*d);
  EXPECT_EQ(1u, m.large_free().count());  // everything merged back
  EXPECT_EQ(100 * kMiB, m.largest_free());
  EXPECT_EQ("", m.check());
}

TEST(BlockManager, FullIsNulloptNotACrash) {
  BlockManager m(8 * kMiB);
  auto a = m.allocate(8 * kMiB);
  ASSERT_TRUE(a);
  EXPECT_FALSE(m.allocate(1));
  EXPECT_FALSE(m.allocate(2 * kMiB));
  EXPECT_FALSE(m.allocate(~0ull));
  EXPECT_EQ(0u, m.release(*a + 512));  // not a block start
  EXPECT_EQ(0u, m.size_of(12345));
  EXPECT_EQ("", m.check());
}

// The block holding any address inside it, with the bytes asked for:
// small and large blocks, side by side, freed, and reused for a smaller
// request (what range checks of copies and memsets ask).
TEST(BlockManager, FindsTheBlockHoldingAnInteriorAddressAndItsRequestedBytes) {
  BlockManager m(64 * kMiB);
  auto s1 = m.allocate(1000), s2 = m.allocate(1000), big = m.allocate(3 * kMiB + 1);
  ASSERT_TRUE(s1 && s2 && big);
  ASSERT_EQ(*s1 + 1024, *s2);  // side by side in one page
  auto live = [&](uint64_t at) { return m.block_containing(at); };
  ASSERT_TRUE(live(*s1));
  EXPECT_EQ(*s1, live(*s1)->start);
  EXPECT_EQ(1024u, live(*s1)->size);
  EXPECT_EQ(1000u, live(*s1)->requested);
  EXPECT_EQ(*s1, live(*s1 + 1023)->start);  // the rounding belongs to s1
  EXPECT_EQ(*s2, live(*s1 + 1024)->start);
  EXPECT_EQ(*big, live(*big + 2 * kMiB + 7)->start);
  EXPECT_EQ(3 * kMiB + 1, live(*big + 2 * kMiB + 7)->requested);
  auto wide = m.allocate(300 << 10);  // its start's bit many bitmap words before its end
  ASSERT_TRUE(wide);
  EXPECT_EQ(*wide, live(*wide + (300 << 10) - 1)->start);
  EXPECT_FALSE(live(*wide + (300 << 10)));
  m.release(*wide);
  EXPECT_FALSE(live(*s2 + 1024));  // free space after the last small block
  EXPECT_FALSE(live(m.capacity() - 1));
  m.release(*s2);
  EXPECT_FALSE(live(*s2 + 100));  // freed
  EXPECT_EQ(*s1, live(*s1 + 100)->start);
  m.set_requested(*s1, 10);
  EXPECT_EQ(10u, live(*s1)->requested);
  m.set_requested(*s1, 2048);  // more than the block: ignored
  EXPECT_EQ(10u, live(*s1)->requested);
  EXPECT_EQ("", m.check());
}

// One random run: allocate and free at random, sizes spanning small and
// large, checking invariants and the model after every operation.
// With `small_pool`, its first bytes are the small pool (Note [The small
// pool apart]).
void random_run(unsigned seed, uint64_t capacity, int ops, uint64_t small_pool = 0) {
  std::mt19937_64 rng(seed);
  BlockManager m(capacity, small_pool);
  std::map<uint64_t, uint64_t> live;  // the model: offset -> requested size
  auto random_size = [&]() -> uint64_t {
    switch (rng() % 4) {
      case 0: return rng() % 4096;              // tiny
      case 1: return rng() % (kMiB + 1);        // small, up to the limit
      case 2: return kMiB + rng() % (8 * kMiB);  // large
      default: return rng() % (32 * kMiB);
    }
  };
  // A third of the allocations priced: a cost per 2 MiB "granule" that
  // changes with the seed, and a random ceiling (Note [Placement by cost]).
  const uint64_t salt = rng();
  // It stops counting at `enough`, as it may.
  auto cost = [salt](uint64_t offset, uint64_t size, uint64_t enough = BlockManager::kAnyCost) {
    uint64_t c = 0;
    for (uint64_t g = offset >> 21; g <= (offset + size - 1) >> 21 && c < enough; ++g)
      c += ((g * 0x9e3779b97f4a7c15ull) ^ salt) >> 62;
    return c;
  };
  for (int i = 0; i < ops; ++i) {
    if (live.empty() || rng() % 100 < 55) {
      uint64_t bytes = random_size();
      std::optional<uint64_t> at;
      if (rng() % 3 == 0) {
        uint64_t allocated = m.allocated(), free_total = m.large_free().total() + m.small_free().total();
        size_t ranges = m.large_free().count(), pages = m.small_pages();
        uint64_t max_cost = rng() % 2 ? BlockManager::kAnyCost : rng() % 8;
        at = m.allocate(bytes, cost, max_cost, rng() % 2);  // Note [Whole granules at granule edges] or not
        if (!at) {  // refused: nothing changed
          ASSERT_EQ(allocated, m.allocated()) << "seed " << seed << " op " << i;
          ASSERT_EQ(free_total, m.large_free().total() + m.small_free().total()) << "seed " << seed << " op " << i;
          ASSERT_EQ(ranges, m.large_free().count()) << "seed " << seed << " op " << i;
          ASSERT_EQ(pages, m.small_pages()) << "seed " << seed << " op " << i;
        } else if (m.size_of(*at) > BlockManager::kSmallLimit) {
          ASSERT_LE(cost(*at, m.size_of(*at)), max_cost) << "seed " << seed << " op " << i;
        }
      } else {
        at = m.allocate(bytes);
      }
      if (at) {
        uint64_t size = m.size_of(*at);
        ASSERT_GE(size, bytes);
        ASSERT_EQ(0u, *at % BlockManager::kAlignment);
        ASSERT_LE(*at + size, capacity);
        // No overlap with any live block, by the model.
        auto next = live.lower_bound(*at);
        if (next != live.end()) ASSERT_LE(*at + size, next->first) << "seed " << seed << " op " << i;
        if (next != live.begin()) {
          auto prev = std::prev(next);
          ASSERT_LE(prev->first + m.size_of(prev->first), *at) << "seed " << seed << " op " << i;
        }
        live[*at] = bytes;
      }
    } else {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      ASSERT_EQ(BlockManager::round_up(it->second), m.release(it->first));
      live.erase(it);
    }
    ASSERT_EQ("", m.check()) << "seed " << seed << " op " << i;
    // An address (anywhere, or in or just past a live block): the block
    // holding it, by the model, with its requested bytes.
    uint64_t probe = rng() % capacity;
    if (!live.empty() && rng() % 2) {
      auto b = live.begin();
      std::advance(b, rng() % live.size());
      probe = std::min(capacity - 1, b->first + rng() % (BlockManager::round_up(b->second) + 512));
    }
    auto holder = live.upper_bound(probe);
    std::optional<BlockManager::Live> found = m.block_containing(probe);
    if (holder != live.begin() && probe - std::prev(holder)->first < BlockManager::round_up(std::prev(holder)->second)) {
      --holder;
      ASSERT_TRUE(found) << "seed " << seed << " op " << i;
      ASSERT_EQ(holder->first, found->start) << "seed " << seed << " op " << i;
      ASSERT_EQ(holder->second, found->requested) << "seed " << seed << " op " << i;
    } else {
      ASSERT_FALSE(found) << "seed " << seed << " op " << i;
    }
  }
  // Every freed byte coalesces: with everything freed, one range remains.
  for (auto& [offset, bytes] : live) m.release(offset);
  ASSERT_EQ("", m.check());
  EXPECT_EQ(0u, m.allocated());
  EXPECT_EQ(0u, m.small_pages());
  EXPECT_EQ(1u, m.large_free().count());
  EXPECT_EQ(m.capacity() - m.small_pool(), m.largest_free());
  EXPECT_EQ(m.small_pool(), m.small_free().total());
  EXPECT_EQ(m.small_pool() ? 1u : 0u, m.small_free().count());
}

// Sanitizer builds slow check() (run after every op) by 50x or more:
// fewer seeds there; Release runs them all (and the fuzz target more).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr unsigned kSeedDivisor = 5;
#else
constexpr unsigned kSeedDivisor = 1;
#endif

// See Note [Placement by cost]: a cheaper range beats a better fit; a block may
// go at a range's end; a ceiling refuses without changing anything.
TEST(BlockManager, PricedPlacementTakesTheCheapestRangeThenTheBestFit) {
  BlockManager m(64 * kMiB);
  // Free ranges: [4, 8) MiB (the best fit for 4 MiB) and [16, 64) MiB.
  auto a = m.allocate(4 * kMiB), b = m.allocate(4 * kMiB), c = m.allocate(8 * kMiB);
  ASSERT_TRUE(a && b && c);
  ASSERT_EQ(4 * kMiB, *b);
  m.release(*b);
  // Bytes below 16 MiB cost; the larger range is free of charge.
  auto below_16 = [](uint64_t offset, uint64_t size, uint64_t) {
    return offset < 16 * kMiB ? std::min(offset + size, 16 * kMiB) - offset : 0;
  };
  std::optional<uint64_t> at = m.allocate(4 * kMiB, below_16, BlockManager::kAnyCost);
  ASSERT_TRUE(at);
  EXPECT_EQ(16 * kMiB, *at);  // not 4 MiB, the best fit
  // All equal: the best fit, at its start.
  auto flat = [](uint64_t, uint64_t, uint64_t) -> uint64_t { return 1; };
  at = m.allocate(4 * kMiB, flat, BlockManager::kAnyCost);
  ASSERT_TRUE(at);
  EXPECT_EQ(4 * kMiB, *at);
  m.release(*at);
  // Cheaper at the range's end: [4, 8) MiB, priced only at its start.
  auto start_costs = [](uint64_t offset, uint64_t, uint64_t) -> uint64_t { return offset == 4 * kMiB ? 9 : offset < 16 * kMiB ? 0 : 5; };
  at = m.allocate(2 * kMiB, start_costs, BlockManager::kAnyCost);
  ASSERT_TRUE(at);
  EXPECT_EQ(6 * kMiB, *at);
  // Over the ceiling: refused, nothing changes.
  uint64_t allocated = m.allocated(), free_total = m.large_free().total();
  EXPECT_FALSE(m.allocate(2 * kMiB, flat, 0));
  EXPECT_FALSE(m.allocate(512, flat, 0));  // a new small-pool page is priced too
  EXPECT_EQ(allocated, m.allocated());
  EXPECT_EQ(free_total, m.large_free().total());
  EXPECT_EQ(0u, m.small_pages());
  // A page goes where it is free of charge.
  at = m.allocate(512, below_16, 0);
  ASSERT_TRUE(at);
  EXPECT_GE(*at, 16 * kMiB);
  EXPECT_EQ("", m.check());
}

TEST(BlockManager, RandomSequencesKeepEveryInvariant) {
  for (unsigned seed = 1; seed <= 20 / kSeedDivisor; ++seed) random_run(seed, 256 * kMiB, 2000);
}

TEST(BlockManager, RandomSequencesWithASmallPool) {
  // Pages in the pool, and past it in the large space once it is full.
  for (unsigned seed = 300; seed < 300 + 10 / kSeedDivisor; ++seed) random_run(seed, 256 * kMiB, 2000, 6 * kMiB);
  for (unsigned seed = 400; seed < 400 + 10 / kSeedDivisor; ++seed) random_run(seed, 40 * kMiB, 3000, 8 * kMiB);
}

TEST(BlockManager, RandomSequencesUnderPressure) {
  // A small space: many allocations fail, pages and large blocks compete.
  for (unsigned seed = 100; seed < 100 + 10 / kSeedDivisor; ++seed) random_run(seed, 24 * kMiB, 3000);
}

// The placement rules, written the obvious way (every choice a scan): free
// ranges coalesce; a large block takes the smallest free range that holds
// it, lowest address among equals; a small block goes to the page whose
// largest free range is the smallest that holds it (lowest address among
// equals), a new page (placed like a large block) only if none does, and
// takes that page's best-fitting range; an empty page goes back. Priced
// (Note [Placement by cost]): of the first 64 free ranges that hold a large
// block or a new page, in best-fit order, each at its start then its end,
// the first of the cheapest; none if that costs more than the ceiling.
class ReferenceBlockManager {
 public:
  using Cost = std::function<uint64_t(uint64_t offset, uint64_t size)>;

  explicit ReferenceBlockManager(uint64_t capacity) : capacity_(capacity) { add(large_, 0, capacity); }

  std::optional<uint64_t> allocate(uint64_t bytes, const Cost& cost = nullptr, uint64_t max_cost = 0) {
    if (bytes > capacity_) return std::nullopt;
    uint64_t size = BlockManager::round_up(bytes);
    auto take_large = [&](uint64_t n) { return cost ? take_priced(n, cost, max_cost) : take_best_fit(large_, n); };
    if (size > BlockManager::kSmallLimit) {
      auto at = take_large(size);
      if (at) live_[*at] = size;
      return at;
    }
    std::map<uint64_t, uint64_t>* best = nullptr;
    uint64_t best_largest = ~0ull;
    for (auto& [page_at, free] : pages_) {
      uint64_t l = largest(free);
      if (l >= size && l < best_largest) best = &free, best_largest = l;
    }
    if (!best) {
      auto page_at = take_large(BlockManager::kPageSize);
      if (!page_at) return std::nullopt;
      best = &pages_[*page_at];
      add(*best, *page_at, BlockManager::kPageSize);
    }
    auto at = take_best_fit(*best, size);
    live_[*at] = size;
    return at;
  }

  uint64_t release(uint64_t offset) {
    auto it = live_.find(offset);
    if (it == live_.end()) return 0;
    uint64_t size = it->second;
    live_.erase(it);
    if (size > BlockManager::kSmallLimit) {
      add(large_, offset, size);
      return size;
    }
    auto page = std::prev(pages_.upper_bound(offset));
    add(page->second, offset, size);
    if (page->second.size() == 1 && page->second.begin()->second == BlockManager::kPageSize) {
      add(large_, page->first, BlockManager::kPageSize);
      pages_.erase(page);
    }
    return size;
  }

  size_t small_pages() const { return pages_.size(); }
  uint64_t largest_free() const { return largest(large_); }

 private:
  static void add(std::map<uint64_t, uint64_t>& free, uint64_t offset, uint64_t size) {
    auto next = free.lower_bound(offset);
    if (next != free.end() && next->first == offset + size) {
      size += next->second;
      next = free.erase(next);
    }
    if (next != free.begin() && std::prev(next)->first + std::prev(next)->second == offset) {
      std::prev(next)->second += size;
    } else {
      free.emplace(offset, size);
    }
  }
  static std::optional<uint64_t> take_best_fit(std::map<uint64_t, uint64_t>& free, uint64_t size) {
    auto best = free.end();
    for (auto it = free.begin(); it != free.end(); ++it) {
      if (it->second >= size && (best == free.end() || it->second < best->second)) best = it;
    }
    if (best == free.end()) return std::nullopt;
    uint64_t at = best->first, rest = best->second - size;
    free.erase(best);
    if (rest) free.emplace(at + size, rest);
    return at;
  }
  std::optional<uint64_t> take_priced(uint64_t size, const Cost& cost, uint64_t max_cost) {
    std::vector<std::pair<uint64_t, uint64_t>> fits;  // (size, offset)
    for (auto& [offset, n] : large_)
      if (n >= size) fits.emplace_back(n, offset);
    std::sort(fits.begin(), fits.end());
    if (fits.size() > BlockManager::kPlacementCandidates) fits.resize(BlockManager::kPlacementCandidates);
    std::optional<uint64_t> best;
    uint64_t best_cost = 0;
    for (auto& [n, offset] : fits) {
      for (uint64_t at : {offset, offset + n - size}) {
        uint64_t c = cost(at, size);
        if (!best || c < best_cost) best = at, best_cost = c;
      }
    }
    if (!best || best_cost > max_cost) return std::nullopt;
    // Take [*best, *best + size) out of its range.
    auto range = std::prev(large_.upper_bound(*best));
    uint64_t start = range->first, end = range->first + range->second;
    large_.erase(range);
    if (*best > start) large_.emplace(start, *best - start);
    if (*best + size < end) large_.emplace(*best + size, end - *best - size);
    return best;
  }
  static uint64_t largest(const std::map<uint64_t, uint64_t>& free) {
    uint64_t l = 0;
    for (auto& [offset, size] : free) l = std::max(l, size);
    return l;
  }

  uint64_t capacity_;
  std::map<uint64_t, uint64_t> large_, live_;
  std::map<uint64_t, std::map<uint64_t, uint64_t>> pages_;
};

// Op for op, BlockManager places every block where the reference does.
// Sizes come from a short list, so that many pages end up with equal
// largest free ranges and the choice among them is tested.
void reference_run(unsigned seed, uint64_t capacity, int ops) {
  std::mt19937_64 rng(seed);
  BlockManager m(capacity);
  ReferenceBlockManager ref(capacity);
  std::vector<uint64_t> live;
  const uint64_t sizes[] = {1, 512, 4096, 64 << 10, 300 << 10, 512 << 10, 768 << 10, kMiB, kMiB + 1, 3 * kMiB};
  // Half the allocations priced: per 1 MiB, 0 to 3 by a hash of its index
  // and the seed (so many placements tie), under a ceiling of any or 0-5.
  auto cost = [salt = rng()](uint64_t offset, uint64_t size) {
    uint64_t c = 0;
    for (uint64_t u = offset >> 20; u <= (offset + size - 1) >> 20; ++u) c += ((u * 0x9e3779b97f4a7c15ull) ^ salt) >> 62;
    return c;
  };
  // BlockManager's callers may stop counting at `enough`; this one does.
  auto priced = [&](uint64_t offset, uint64_t size, uint64_t enough) { return std::min(cost(offset, size), enough); };
  for (int i = 0; i < ops; ++i) {
    if (live.empty() || rng() % 100 < 60) {
      uint64_t bytes = sizes[rng() % std::size(sizes)];
      std::optional<uint64_t> at, expected;
      if (rng() % 2) {
        uint64_t max_cost = rng() % 2 ? BlockManager::kAnyCost : rng() % 6;
        at = m.allocate(bytes, priced, max_cost);
        expected = ref.allocate(bytes, cost, max_cost);
      } else {
        at = m.allocate(bytes);
        expected = ref.allocate(bytes);
      }
      ASSERT_EQ(expected, at) << "seed " << seed << " op " << i << ": " << bytes << " bytes";
      if (at) live.push_back(*at);
    } else {
      size_t k = rng() % live.size();
      ASSERT_EQ(ref.release(live[k]), m.release(live[k])) << "seed " << seed << " op " << i;
      live[k] = live.back();
      live.pop_back();
    }
    ASSERT_EQ("", m.check()) << "seed " << seed << " op " << i;
    ASSERT_EQ(ref.small_pages(), m.small_pages()) << "seed " << seed << " op " << i;
    ASSERT_EQ(ref.largest_free(), m.largest_free()) << "seed " << seed << " op " << i;
  }
}

TEST(BlockManager, PlacesEveryBlockWhereTheReferenceDoes) {
  for (unsigned seed = 1; seed <= 10 / kSeedDivisor; ++seed) reference_run(seed, 256 * kMiB, 3000);
  for (unsigned seed = 200; seed < 200 + 5 / kSeedDivisor; ++seed) reference_run(seed, 24 * kMiB, 3000);
}

TEST(BlockManager, AmongEqualPagesTheLowestWins) {
  BlockManager m(64 * kMiB);
  std::vector<uint64_t> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(*m.allocate(768 << 10));  // 4 pages, 512 KiB free in each
  ASSERT_EQ(4u, m.small_pages());
  uint64_t page[4];
  for (int p = 0; p < 4; ++p) page[p] = blocks[2 * p];  // each page's first block is at its start
  EXPECT_EQ(page[0] + (1536 << 10), m.allocate(256 << 10));  // all equal: the lowest page
  EXPECT_EQ(page[0] + (1792 << 10), m.allocate(256 << 10));  // now the tightest: the same page
  EXPECT_EQ(page[1] + (1536 << 10), m.allocate(512 << 10));  // the next lowest
  m.release(blocks[4]);  // page 2 gains a 768 KiB range, below its 512 KiB one
  EXPECT_EQ(page[2], m.allocate(600 << 10));  // the only page with room
  m.release(blocks[7]);  // page 3: 1.25 MiB free, in one range
  EXPECT_EQ(page[2] + (600 << 10), m.allocate(168 << 10));  // 168 KiB left in page 2: tightest
  EXPECT_EQ("", m.check());
}

// Note [Space held for an owner].
TEST(BlockManager, HeldSpaceServesItsOwnerOnlyAndReachesEveryoneWhenReleased) {
  BlockManager m(64 * kMiB);
  const BlockManager::Owner s1 = 1, s2 = 2;
  auto a = m.allocate(8 * kMiB), b = m.allocate(8 * kMiB), c = m.allocate(8 * kMiB);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(8 * kMiB, m.release_to(*a, s1));
  EXPECT_EQ(8 * kMiB, m.release_to(*b, s1));  // merges with a's range
  EXPECT_EQ(0u, m.release_to(*b, s1));        // not live any more
  EXPECT_EQ(16 * kMiB, m.held());
  EXPECT_EQ(8 * kMiB, m.allocated());
  EXPECT_EQ("", m.check());
  // s2 holds nothing; small requests are never served from held space.
  EXPECT_FALSE(m.allocate_held(s2, 4 * kMiB));
  EXPECT_FALSE(m.allocate_held(s1, 64 << 10));
  // Everyone else: not inside what s1 holds.
  auto d = m.allocate(12 * kMiB);
  ASSERT_TRUE(d);
  EXPECT_TRUE(*d >= *a + 16 * kMiB || *d + 12 * kMiB <= *a);
  // s1: any size, split across the merged range.
  auto e = m.allocate_held(s1, 12 * kMiB);
  ASSERT_TRUE(e);
  EXPECT_EQ(*a, *e);
  EXPECT_EQ(4 * kMiB, m.held());
  EXPECT_EQ("", m.check());
  // Fenced, then reused in part: only what was not reused reaches everyone.
  EXPECT_TRUE(m.fence_held(s1));
  EXPECT_EQ(8 * kMiB, m.release_to(*c, s1));  // after the fence: not marked
  EXPECT_EQ(12 * kMiB, m.held());
  EXPECT_EQ(4 * kMiB, m.release_fenced(s1));
  EXPECT_EQ(8 * kMiB, m.held());
  EXPECT_EQ("", m.check());
}

// See Note [One pool for an owner's reuse]: the owner's held ranges and the
// free space are one pool, best fit over both, among the places the caller
// can use now (wholly held, or where the caller says).
TEST(BlockManager, HeldSpaceAndFreeSpaceAreOnePoolForTheirOwner) {
  BlockManager m(64 * kMiB);
  const BlockManager::Owner s = 1;
  auto a = m.allocate(4 * kMiB), x = m.allocate(4 * kMiB), b = m.allocate(4 * kMiB), y = m.allocate(8 * kMiB),
       c = m.allocate(4 * kMiB);
  ASSERT_TRUE(a && x && b && y && c);
  m.release(*x);              // free: [x, x + 4 MiB), between a and b
  m.release_to(*y, s);        // held: 8 MiB
  auto usable = [](uint64_t, uint64_t, uint64_t) { return true; };
  EXPECT_EQ(*x, m.allocate_held(s, 4 * kMiB, usable));  // x's range is tighter than the held one
  EXPECT_EQ(8 * kMiB, m.held());                         // the held range untouched
  EXPECT_EQ("", m.check());
  m.release(*x);
  // A free range the caller cannot use (say, not mapped) does not count;
  // a place wholly in a held range is never asked about.
  std::vector<uint64_t> asked;
  auto unusable = [&](uint64_t start, uint64_t size, uint64_t bytes) {
    asked.push_back(start);
    EXPECT_EQ(4 * kMiB, size);
    EXPECT_EQ(4 * kMiB, bytes);
    return false;
  };
  EXPECT_EQ(*y, m.allocate_held(s, 4 * kMiB, unusable));
  EXPECT_EQ(std::vector<uint64_t>{*x}, asked);  // best fit first: x, then the held range
  EXPECT_EQ(4 * kMiB, m.held());
  // Even an exact held fit is weighed against free ranges: x comes first.
  EXPECT_EQ(*x, m.allocate_held(s, 4 * kMiB, usable));
  EXPECT_EQ(*y + 4 * kMiB, m.allocate_held(s, 4 * kMiB, unusable));
  EXPECT_EQ(0u, m.held());
  EXPECT_EQ("", m.check());
}

// The case of a growing KV cache (gpt-decode-bf16): a held range too small
// for the block, with free space beside it, holds it together with that
// space; no held range alone does.
TEST(BlockManager, AHeldRangeAndTheFreeRangeBesideItHoldOneBlock) {
  BlockManager m(64 * kMiB);
  const BlockManager::Owner s = 1;
  auto a = m.allocate(4 * kMiB), h = m.allocate(3 * kMiB), f = m.allocate(2 * kMiB), c = m.allocate(4 * kMiB);
  ASSERT_TRUE(a && h && f && c);
  m.release_to(*h, s);  // held: 3 MiB
  m.release(*f);        // free beside it: 2 MiB
  auto usable = [](uint64_t, uint64_t, uint64_t) { return true; };
  EXPECT_EQ(*h, m.allocate_held(s, 4 * kMiB, usable));
  EXPECT_EQ(0u, m.held());
  auto rest = m.large_free().containing(*f + kMiB);  // what it left: 1 MiB free before c
  ASSERT_TRUE(rest);
  EXPECT_EQ(std::make_pair(*f + kMiB, kMiB), *rest);
  EXPECT_EQ("", m.check());
  // Without a usable place at a merged range's ends, the held best fit:
  // a held 8 MiB range between two free 2 MiB ones the caller cannot use.
  BlockManager n(64 * kMiB);
  auto p = n.allocate(4 * kMiB), f1 = n.allocate(2 * kMiB), k = n.allocate(8 * kMiB), f2 = n.allocate(2 * kMiB),
       q = n.allocate(4 * kMiB);
  ASSERT_TRUE(p && f1 && k && f2 && q);
  n.release(*f1);
  n.release_to(*k, s);
  n.release(*f2);
  auto none = [](uint64_t, uint64_t, uint64_t) { return false; };
  EXPECT_EQ(*k, n.allocate_held(s, 6 * kMiB, none));
  EXPECT_EQ(2 * kMiB, n.held());
  EXPECT_EQ("", n.check());
}

TEST(BlockManager, FencedHeldRangesReleaseOnlyWhatWasNotReusedSince) {
  BlockManager m(64 * kMiB);
  const BlockManager::Owner s = 7;
  auto a = m.allocate(16 * kMiB), guard = m.allocate(4 * kMiB);
  ASSERT_TRUE(a && guard);
  m.release_to(*a, s);
  EXPECT_TRUE(m.fence_held(s));
  auto b = m.allocate_held(s, 6 * kMiB);  // reused after the fence: unmarked
  ASSERT_TRUE(b);
  EXPECT_EQ("", m.check());
  m.release_to(*b, s);  // freed again after the fence: held, not marked
  EXPECT_EQ(16 * kMiB, m.held());
  EXPECT_EQ(10 * kMiB, m.release_fenced(s));
  EXPECT_EQ(6 * kMiB, m.held());
  EXPECT_EQ("", m.check());
  // What was released is free space for anyone; the rest stays the owner's.
  EXPECT_FALSE(m.allocate_held(s, 8 * kMiB));
  EXPECT_TRUE(m.allocate_held(s, 6 * kMiB));
  EXPECT_EQ("", m.check());
}

TEST(BlockManager, GrowingPlacesOverHeldAndFreeSpaceAndUnholdMakesBlocks) {
  BlockManager m(64 * kMiB);
  const BlockManager::Owner s = 3;
  auto low = m.allocate(8 * kMiB), a = m.allocate(8 * kMiB);
  ASSERT_TRUE(low && a);
  m.release_to(*a, s);  // held, with free space above it
  auto free_cost = [](uint64_t, uint64_t, uint64_t) -> uint64_t { return 0; };
  BlockManager::Ranges from_held;
  auto g = m.allocate_growing(s, 20 * kMiB, free_cost, BlockManager::kAnyCost, &from_held);
  ASSERT_TRUE(g);
  EXPECT_EQ(20 * kMiB, m.size_of(*g));
  EXPECT_EQ("", m.check());
  // Undo as a failed mapping does: release, then the held pieces again.
  uint64_t took = 0;
  for (const auto& [offset, size] : from_held) took += size;
  m.release(*g);
  for (const auto& [offset, size] : from_held) EXPECT_TRUE(m.hold(s, offset, size));
  EXPECT_EQ(took, m.held());
  EXPECT_EQ("", m.check());
  std::vector<uint64_t> blocks;
  m.unhold(s, &blocks);
  EXPECT_EQ(0u, m.held());
  EXPECT_FALSE(blocks.empty());
  for (uint64_t b : blocks) EXPECT_GT(m.release(b), 0u);
  EXPECT_EQ("", m.check());
  EXPECT_EQ(8 * kMiB, m.allocated());
}

// Note [Space held for an owner], against a model of every 512-byte unit:
// which owner holds it (0: none) and whether a fence marked it. Random
// frees into three owners, reuse by the owner (split, grown into free
// space), fences, releases, unholds and plain allocations; after every
// step the invariants hold, no allocation lands on another owner's held
// unit, and each owner's held bytes are the model's.
TEST(BlockManager, RandomHeldSequencesNeverCrossOwners) {
  constexpr uint64_t kCapacity = 64 * kMiB, kUnit = BlockManager::kAlignment;
  for (unsigned seed = 1; seed <= 8 / kSeedDivisor; ++seed) {
    std::mt19937_64 rng(seed);
    BlockManager m(kCapacity);
    std::vector<uint8_t> owner(kCapacity / kUnit, 0), fenced(kCapacity / kUnit, 0);
    std::vector<uint64_t> live;
    auto units = [&](uint64_t at, uint64_t size, auto f) {
      for (uint64_t u = at / kUnit; u < (at + size) / kUnit; ++u) f(u);
    };
    auto priced = [](uint64_t, uint64_t, uint64_t) -> uint64_t { return 0; };
    for (int i = 0; i < 1500; ++i) {
      const BlockManager::Owner o = 1 + rng() % 3;
      const uint64_t bytes = rng() % 3 ? kMiB + 1 + rng() % (6 * kMiB) : rng() % kMiB;
      std::optional<uint64_t> at;
      switch (rng() % 8) {
        case 0:
        case 1:
          at = m.allocate(bytes);
          if (at) units(*at, m.size_of(*at), [&](uint64_t u) { ASSERT_EQ(0, owner[u]) << "seed " << seed << " op " << i; });
          break;
        case 2:
          at = m.allocate_held(o, bytes);
          if (at) units(*at, m.size_of(*at), [&](uint64_t u) {
            ASSERT_EQ(o, owner[u]) << "seed " << seed << " op " << i;
            owner[u] = 0;
            fenced[u] = 0;
          });
          break;
        case 3:
          at = m.allocate_growing(o, bytes, priced, BlockManager::kAnyCost);
          if (at) units(*at, m.size_of(*at), [&](uint64_t u) {
            ASSERT_TRUE(owner[u] == 0 || owner[u] == o) << "seed " << seed << " op " << i;
            owner[u] = 0;
            fenced[u] = 0;
          });
          break;
        case 4:
        case 5:
          if (!live.empty()) {
            size_t k = rng() % live.size();
            uint64_t b = live[k], size = m.size_of(b);
            live[k] = live.back();
            live.pop_back();
            if (size > BlockManager::kSmallLimit && rng() % 4) {
              ASSERT_EQ(size, m.release_to(b, o));
              units(b, size, [&](uint64_t u) { owner[u] = static_cast<uint8_t>(o); fenced[u] = 0; });
            } else {
              ASSERT_EQ(size, m.release(b));
            }
          }
          break;
        case 6:
          if (rng() % 2) {
            m.fence_held(o);
            for (uint64_t u = 0; u < owner.size(); ++u)
              if (owner[u] == o) fenced[u] = 1;  // every unit it holds; other owners' marks stay
          } else {
            uint64_t expect = 0;
            for (uint64_t u = 0; u < owner.size(); ++u)
              if (owner[u] == o && fenced[u]) {
                owner[u] = 0;
                fenced[u] = 0;
                expect += kUnit;
              }
            ASSERT_EQ(expect, m.release_fenced(o)) << "seed " << seed << " op " << i;
          }
          break;
        default: {
          std::vector<uint64_t> blocks;
          m.unhold(o, &blocks);
          for (uint64_t b : blocks) {
            units(b, m.size_of(b), [&](uint64_t u) { ASSERT_EQ(o, owner[u]) << "seed " << seed << " op " << i; owner[u] = 0; fenced[u] = 0; });
            live.push_back(b);
          }
        }
      }
      if (at) live.push_back(*at);
      ASSERT_EQ("", m.check()) << "seed " << seed << " op " << i;
      for (BlockManager::Owner x = 1; x <= 3; ++x)
        ASSERT_EQ(kUnit * static_cast<uint64_t>(std::count(owner.begin(), owner.end(), x)), m.held_by(x))
            << "seed " << seed << " op " << i;
    }
  }
}

}  // namespace
}  // namespace alloc
}  // namespace gpuslack

// BlockManager without CUDA: randomized sequences of allocations and frees,
// with every invariant checked after every operation, against an
// independent model of which bytes are live.
#include "alloc/block_manager.h"

#include <gtest/gtest.h>

#include <map>
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

// One random run: allocate and free at random, sizes spanning small and
// large, checking invariants and the model after every operation.
void random_run(unsigned seed, uint64_t capacity, int ops) {
  std::mt19937_64 rng(seed);
  BlockManager m(capacity);
  std::map<uint64_t, uint64_t> live;  // the model: offset -> requested size
  auto random_size = [&]() -> uint64_t {
    switch (rng() % 4) {
      case 0: return rng() % 4096;              // tiny
      case 1: return rng() % (kMiB + 1);        // small, up to the limit
      case 2: return kMiB + rng() % (8 * kMiB);  // large
      default: return rng() % (32 * kMiB);
    }
  };
  for (int i = 0; i < ops; ++i) {
    if (live.empty() || rng() % 100 < 55) {
      uint64_t bytes = random_size();
      std::optional<uint64_t> at = m.allocate(bytes);
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
  }
  // Every freed byte coalesces: with everything freed, one range remains.
  for (auto& [offset, bytes] : live) m.release(offset);
  ASSERT_EQ("", m.check());
  EXPECT_EQ(0u, m.allocated());
  EXPECT_EQ(0u, m.small_pages());
  EXPECT_EQ(1u, m.large_free().count());
  EXPECT_EQ(m.capacity(), m.largest_free());
}

TEST(BlockManager, RandomSequencesKeepEveryInvariant) {
  for (unsigned seed = 1; seed <= 20; ++seed) random_run(seed, 256 * kMiB, 2000);
}

TEST(BlockManager, RandomSequencesUnderPressure) {
  // A small space: many allocations fail, pages and large blocks compete.
  for (unsigned seed = 100; seed < 110; ++seed) random_run(seed, 24 * kMiB, 3000);
}

}  // namespace
}  // namespace alloc
}  // namespace gpuslack

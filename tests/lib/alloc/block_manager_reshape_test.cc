// BlockManager::allocate_joined (block_manager_reshape.cc): a small block
// placed over blocks the caller gives up and the free ranges beside them,
// within one page (StreamCache's Note [A stream's small blocks at any
// size]); every invariant checked after each step.
#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <random>
#include <vector>

#include "alloc/block_manager.h"

namespace gpuslack {
namespace alloc {
namespace {

constexpr uint64_t kKiB = 1ull << 10, kMiB = 1ull << 20;
using Ranges = BlockManager::Ranges;

TEST(BlockManagerJoined, AdjacentBlocksJoinIntoOneWithoutANewPage) {
  BlockManager m(64 * kMiB, 16 * kMiB);
  auto a = m.allocate(512 * kKiB), b = m.allocate(512 * kKiB), c = m.allocate(kMiB);
  ASSERT_TRUE(a && b && c);
  ASSERT_EQ(*a + 512 * kKiB, *b);
  ASSERT_EQ(1u, m.small_pages());
  std::optional<BlockManager::Joined> j = m.allocate_joined(kMiB - 100, Ranges{{*a, 512 * kKiB}, {*b, 512 * kKiB}});
  ASSERT_TRUE(j);
  EXPECT_EQ(*a, j->at);
  EXPECT_EQ((std::vector<uint64_t>{*a, *b}), j->used);
  EXPECT_FALSE(j->rest);
  EXPECT_EQ(kMiB, m.size_of(*a));
  EXPECT_EQ(0u, m.size_of(*b));  // no block starts there now
  EXPECT_EQ(0u, m.release(*b));
  std::optional<BlockManager::Live> live = m.block_containing(*b);
  ASSERT_TRUE(live);
  EXPECT_EQ(*a, live->start);
  EXPECT_EQ(kMiB - 100, live->requested);
  EXPECT_EQ(2 * kMiB, m.allocated());
  EXPECT_EQ(1u, m.small_pages());
  EXPECT_EQ("", m.check());
}

TEST(BlockManagerJoined, WhatTheRequestDoesNotNeedStaysABlockOfItsOwn) {
  BlockManager m(64 * kMiB, 16 * kMiB);
  auto a = m.allocate(kMiB), b = m.allocate(kMiB);
  ASSERT_TRUE(a && b);
  std::optional<BlockManager::Joined> j = m.allocate_joined(256 * kKiB, Ranges{{*b, kMiB}});
  ASSERT_TRUE(j);
  EXPECT_EQ(*b, j->at);
  EXPECT_EQ(std::vector<uint64_t>{*b}, j->used);
  ASSERT_TRUE(j->rest);
  EXPECT_EQ(*b + 256 * kKiB, j->rest->first);
  EXPECT_EQ(768 * kKiB, j->rest->second);
  EXPECT_EQ(256 * kKiB, m.size_of(*b));
  EXPECT_EQ(768 * kKiB, m.size_of(j->rest->first));
  std::optional<BlockManager::Live> rest = m.block_containing(j->rest->first + 1000);
  ASSERT_TRUE(rest);
  EXPECT_EQ(j->rest->first, rest->start);
  EXPECT_EQ(2 * kMiB, m.allocated());
  EXPECT_EQ("", m.check());
  // Both free as blocks of their own; the page goes back empty.
  EXPECT_EQ(768 * kKiB, m.release(j->rest->first));
  EXPECT_EQ(256 * kKiB, m.release(*b));
  EXPECT_EQ(kMiB, m.release(*a));
  EXPECT_EQ(0u, m.small_pages());
  EXPECT_EQ("", m.check());
}

TEST(BlockManagerJoined, TakesTheFreeRangesBesideTheBlocks) {
  BlockManager m(64 * kMiB, 16 * kMiB);
  auto a = m.allocate(kMiB), b = m.allocate(512 * kKiB);  // 512 KiB of the page free after b
  ASSERT_TRUE(a && b);
  ASSERT_EQ(*a + kMiB, *b);
  std::optional<BlockManager::Joined> j = m.allocate_joined(kMiB, Ranges{{*b, 512 * kKiB}});
  ASSERT_TRUE(j);
  EXPECT_EQ(*b, j->at);
  EXPECT_EQ(kMiB, m.size_of(*b));
  EXPECT_EQ(2 * kMiB, m.allocated());
  EXPECT_EQ("", m.check());
  // The page is full: the next small block needs another page.
  ASSERT_TRUE(m.allocate(512));
  EXPECT_EQ(2u, m.small_pages());
  EXPECT_EQ("", m.check());
}

TEST(BlockManagerJoined, TheSmallestExtentThatHoldsItWins) {
  BlockManager m(64 * kMiB, 16 * kMiB);
  // One page: x 256 KiB | y 512 KiB | k 256 KiB | z 256 KiB | rest 768 KiB
  auto x = m.allocate(256 * kKiB), y = m.allocate(512 * kKiB), k = m.allocate(256 * kKiB),
       z = m.allocate(256 * kKiB), rest = m.allocate(kMiB - 256 * kKiB);
  ASSERT_TRUE(x && y && k && z && rest);
  ASSERT_EQ(1u, m.small_pages());
  // Given up: x and y (768 KiB together), z alone (256 KiB). 300 KiB:
  // z is too small, x + y the only extent that holds it.
  std::optional<BlockManager::Joined> j =
      m.allocate_joined(300 * kKiB, Ranges{{*x, 256 * kKiB}, {*y, 512 * kKiB}, {*z, 256 * kKiB}});
  ASSERT_TRUE(j);
  EXPECT_EQ(*x, j->at);
  EXPECT_EQ((std::vector<uint64_t>{*x, *y}), j->used);  // y covered in part
  ASSERT_TRUE(j->rest);
  EXPECT_EQ(*x + 300 * kKiB, j->rest->first);
  EXPECT_EQ(468 * kKiB, j->rest->second);
  EXPECT_EQ("", m.check());
  // 200 KiB: z (256 KiB) is the tightest now.
  j = m.allocate_joined(200 * kKiB, Ranges{{*x + 300 * kKiB, 468 * kKiB}, {*z, 256 * kKiB}});
  ASSERT_TRUE(j);
  EXPECT_EQ(*z, j->at);
  EXPECT_EQ("", m.check());
}

TEST(BlockManagerJoined, NothingJoinsAcrossPagesOrOverAnotherLiveBlock) {
  BlockManager m(64 * kMiB, 16 * kMiB);
  auto a = m.allocate(kMiB), b = m.allocate(512 * kKiB), c = m.allocate(512 * kKiB);  // page 1, full
  auto d = m.allocate(512 * kKiB), e = m.allocate(512 * kKiB), f = m.allocate(kMiB);  // page 2, full
  ASSERT_TRUE(a && b && c && d && e && f);
  ASSERT_EQ(2u, m.small_pages());
  ASSERT_EQ(*c + 512 * kKiB, *d);  // adjacent addresses, two pages
  const uint64_t allocated = m.allocated();
  EXPECT_FALSE(m.allocate_joined(kMiB, Ranges{{*c, 512 * kKiB}, {*d, 512 * kKiB}}));
  EXPECT_FALSE(m.allocate_joined(kMiB, Ranges{{*b, 512 * kKiB}, {*d, 512 * kKiB}}));  // c between, live
  EXPECT_FALSE(m.allocate_joined(kMiB, Ranges{{*a + 512, kMiB - 512}}));  // no block starts there
  EXPECT_FALSE(m.allocate_joined(2 * kMiB, Ranges{{*a, kMiB}, {*b, 512 * kKiB}}));  // not small
  EXPECT_EQ(allocated, m.allocated());
  EXPECT_EQ(kMiB, m.size_of(*a));
  EXPECT_EQ("", m.check());
}

// Random small blocks: some live, some given up (`mine`), some freed; each
// joined block must lie over given-up blocks and free space only, never a
// live block, and every invariant hold after every step.
TEST(BlockManagerJoined, RandomSequencesNeverCoverALiveBlock) {
  std::mt19937_64 rng(28);
  size_t joined = 0, with_rest = 0;
  for (int round = 0; round < 20; ++round) {
    BlockManager m(256 * kMiB, 32 * kMiB);
    std::map<uint64_t, uint64_t> live, mine;  // offset -> size
    for (int step = 0; step < 400; ++step) {
      const uint64_t bytes = 1 + rng() % (rng() % 4 == 0 ? kMiB : 64 * kKiB);
      switch (rng() % 4) {
        case 0:
        case 1:
          if (auto at = m.allocate(bytes)) live[*at] = m.size_of(*at);
          break;
        case 2:  // give one up, or free one
          if (!live.empty()) {
            auto it = std::next(live.begin(), rng() % live.size());
            if (rng() % 2) mine.insert(*it);
            else ASSERT_EQ(it->second, m.release(it->first));
            live.erase(it);
          }
          break;
        case 3: {
          Ranges given(mine.begin(), mine.end());
          std::optional<BlockManager::Joined> j = m.allocate_joined(bytes, given);
          if (!j) break;
          ++joined;
          with_rest += j->rest.has_value();
          const uint64_t size = BlockManager::round_up(bytes);
          ASSERT_EQ(size, m.size_of(j->at));
          auto after = live.lower_bound(j->at);
          if (after != live.end()) ASSERT_LE(j->at + size, after->first) << "covers a live block";
          if (after != live.begin()) ASSERT_LE(std::prev(after)->first + std::prev(after)->second, j->at);
          for (uint64_t u : j->used) ASSERT_EQ(1u, mine.erase(u));
          for (const auto& [offset, n] : mine) ASSERT_TRUE(offset + n <= j->at || offset >= j->at + size);
          if (j->rest) {
            ASSERT_EQ(j->at + size, j->rest->first);
            ASSERT_EQ(j->rest->second, m.size_of(j->rest->first));
            mine[j->rest->first] = j->rest->second;
          }
          live[j->at] = size;
          break;
        }
      }
      ASSERT_EQ("", m.check()) << "round " << round << " step " << step;
    }
  }
  EXPECT_GT(joined, 200u);  // the sequences do join, and split
  EXPECT_GT(with_rest, 100u);
}

}  // namespace
}  // namespace alloc
}  // namespace gpuslack

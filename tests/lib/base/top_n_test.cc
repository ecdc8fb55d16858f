#include "base/top_n.h"

#include <gtest/gtest.h>

#include <optional>
#include <utility>
#include <vector>

namespace gpuslack {
namespace {

using Item = std::pair<int, char>;  // key, name
int key_of(const Item& i) { return i.first; }

TEST(TopN, KeepLargestIsStableAndCutsAtN) {
  std::vector<Item> items = {{1, 'a'}, {3, 'b'}, {2, 'c'}, {3, 'd'}, {0, 'e'}};
  keep_largest(items, 3, key_of);
  EXPECT_EQ((std::vector<Item>{{3, 'b'}, {3, 'd'}, {2, 'c'}}), items);
  keep_largest(items, 10, key_of);
  EXPECT_EQ(3u, items.size());
  keep_largest(items, 0, key_of);
  EXPECT_TRUE(items.empty());
}

TEST(TopN, OfferKeepsTheLargestAndHandsBackWhatLeaves) {
  std::vector<Item> top;
  EXPECT_FALSE(offer_to_top(top, 2, Item{5, 'a'}, key_of));
  EXPECT_FALSE(offer_to_top(top, 2, Item{1, 'b'}, key_of));
  // Not larger than the least kept: refused.
  EXPECT_EQ(Item(1, 'c'), offer_to_top(top, 2, Item{1, 'c'}, key_of));
  // Larger: replaces the least, which is handed back.
  EXPECT_EQ(Item(1, 'b'), offer_to_top(top, 2, Item{4, 'd'}, key_of));
  sort_largest_first(top, key_of);
  EXPECT_EQ((std::vector<Item>{{5, 'a'}, {4, 'd'}}), top);
  std::vector<Item> none;
  EXPECT_EQ(Item(9, 'z'), offer_to_top(none, 0, Item{9, 'z'}, key_of));
}

}  // namespace
}  // namespace gpuslack

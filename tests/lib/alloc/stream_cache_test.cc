// StreamCache: exact-size reuse per stream, most recent first; flush takes a
// stream's blocks; take_large its large ones only; counts stay right.
#include "alloc/stream_cache.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace gpuslack {
namespace alloc {
namespace {

cudaStream_t stream(uintptr_t v) { return reinterpret_cast<cudaStream_t>(v); }

TEST(StreamCache, TakesOnlyTheSameSizeOnTheSameStream) {
  StreamCache c(1024);
  EXPECT_EQ(1u, c.put(stream(1), 0, 512));
  EXPECT_EQ(2u, c.put(stream(1), 4096, 512));
  c.put(stream(2), 8192, 512);
  EXPECT_EQ(1536u, c.bytes());
  EXPECT_EQ(std::nullopt, c.take(stream(1), 1024));  // other size
  EXPECT_EQ(std::nullopt, c.take(stream(3), 512));   // other stream
  EXPECT_EQ(4096u, c.take(stream(1), 512));          // the latest first
  EXPECT_EQ(0u, c.take(stream(1), 512));
  EXPECT_EQ(std::nullopt, c.take(stream(1), 512));
  EXPECT_EQ(1u, c.blocks());
  EXPECT_EQ(512u, c.bytes());
}

TEST(StreamCache, FlushHandsOverEveryBlockOfOneStream) {
  StreamCache c(1024);
  c.put(stream(1), 0, 512);
  c.put(stream(1), 1024, 2048);
  c.put(stream(2), 8192, 512);
  std::vector<cudaStream_t> s = c.streams();
  EXPECT_EQ(2u, s.size());
  std::vector<uint64_t> out;
  c.flush(stream(1), &out);
  std::sort(out.begin(), out.end());
  EXPECT_EQ((std::vector<uint64_t>{0, 1024}), out);
  EXPECT_EQ(1u, c.blocks());
  EXPECT_EQ(512u, c.bytes());
  EXPECT_EQ(std::vector<cudaStream_t>{stream(2)}, c.streams());
  c.flush(stream(7), &out);  // nothing there
  EXPECT_EQ(2u, out.size());
}

TEST(StreamCache, TakeLargeLeavesTheSmallBlocks) {
  StreamCache c(1024);
  c.put(stream(1), 0, 512);
  c.put(stream(1), 4096, 2048);
  c.put(stream(1), 8192, 4096);
  c.put(stream(2), 16384, 4096);
  EXPECT_EQ(6656u, c.bytes_of(stream(1)));
  std::vector<uint64_t> out;
  c.take_large(stream(1), &out);
  std::sort(out.begin(), out.end());
  EXPECT_EQ((std::vector<uint64_t>{4096, 8192}), out);
  EXPECT_EQ(512u, c.bytes_of(stream(1)));
  EXPECT_EQ(2u, c.blocks());
  EXPECT_EQ(0u, c.take(stream(1), 512));
  EXPECT_EQ(std::nullopt, c.take(stream(1), 2048));
  EXPECT_EQ(16384u, c.take(stream(2), 4096));  // another stream's: untouched
  EXPECT_EQ(0u, c.bytes());
}

// See Note [A stream's small blocks at any size]: a stream's small blocks by
// address, and one of them taken out by name, the counts kept.
TEST(StreamCache, SmallBlocksByAddressAndOneRemoved) {
  StreamCache c(1024);
  c.put(stream(1), 8192, 512);
  c.put(stream(1), 0, 1024);
  c.put(stream(1), 4096, 512);
  c.put(stream(1), 16384, 2048);  // large
  c.put(stream(2), 2048, 512);
  EXPECT_EQ(2048u, c.small_bytes_of(stream(1)));
  StreamCache::Blocks out;
  c.small_blocks(stream(1), &out);
  EXPECT_EQ((StreamCache::Blocks{{0, 1024}, {4096, 512}, {8192, 512}}), out);
  EXPECT_FALSE(c.remove(stream(1), 4096, 1024));  // not at that size
  EXPECT_FALSE(c.remove(stream(2), 4096, 512));   // not that stream's
  EXPECT_TRUE(c.remove(stream(1), 8192, 512));
  EXPECT_FALSE(c.remove(stream(1), 8192, 512));
  EXPECT_EQ(1536u, c.small_bytes_of(stream(1)));
  EXPECT_EQ(3584u, c.bytes_of(stream(1)));
  EXPECT_EQ(4u, c.blocks());
  EXPECT_EQ(4096u, c.take(stream(1), 512));  // the other 512 stays
  EXPECT_EQ(std::nullopt, c.take(stream(1), 512));
  EXPECT_EQ(1024u, c.small_bytes_of(stream(1)));
  out.clear();
  c.small_blocks(stream(3), &out);
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace alloc
}  // namespace gpuslack

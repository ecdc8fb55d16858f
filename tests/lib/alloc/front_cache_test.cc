// FrontCache: exact-size reuse per stream, most recent first; a record
// per block that says cached (freed) or live, so a second free is refused;
// the limits; drains by stream and size (large blocks counted apart); the
// counts, bytes and low water.
#include "alloc/front_cache.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace gpuslack {
namespace alloc {
namespace {

cudaStream_t stream(uintptr_t v) { return reinterpret_cast<cudaStream_t>(v); }

TEST(FrontCache, TakesOnlyTheSameSizeOnTheSameStreamLatestFirst) {
  FrontCache c;
  ASSERT_TRUE(c.adopt(stream(1), 0, 512));
  ASSERT_TRUE(c.adopt(stream(1), 4096, 512));
  ASSERT_TRUE(c.adopt(stream(2), 8192, 512));
  EXPECT_EQ(1536u, c.cached_bytes());
  EXPECT_EQ(std::nullopt, c.take(stream(1), 1024, 1000));  // other size
  EXPECT_EQ(std::nullopt, c.take(stream(3), 512, 500));    // other stream
  EXPECT_EQ(4096u, c.take(stream(1), 512, 500));
  EXPECT_EQ(0u, c.take(stream(1), 512, 512));
  EXPECT_EQ(std::nullopt, c.take(stream(1), 512, 512));
  EXPECT_EQ(1u, c.cached_blocks());
  EXPECT_EQ(512u, c.cached_bytes());
  EXPECT_EQ(3u, c.records());  // the taken ones are live records now
}

TEST(FrontCache, ASecondFreeIsRefusedAndAnUnknownBlockIsNotItsToJudge) {
  FrontCache c;
  ASSERT_TRUE(c.adopt(stream(1), 1024, 512));
  EXPECT_EQ(FrontCache::Put::kFreedAlready, c.put(1024, stream(1)));  // cached: freed
  EXPECT_EQ(FrontCache::Put::kNoRecord, c.put(2048, stream(1)));
  ASSERT_EQ(1024u, c.take(stream(1), 512, 300));
  // Freed on another stream: reused there, not on the first.
  EXPECT_EQ(FrontCache::Put::kCached, c.put(1024, stream(2)));
  EXPECT_EQ(FrontCache::Put::kFreedAlready, c.put(1024, stream(2)));
  EXPECT_EQ(FrontCache::Put::kFreedAlready, c.put(1024, stream(1)));
  EXPECT_EQ(std::nullopt, c.take(stream(1), 512, 300));
  EXPECT_EQ(1024u, c.take(stream(2), 512, 300));
  FrontCache::Counts n = c.take_counts();
  EXPECT_EQ(2u, n.allocations);
  EXPECT_EQ(1u, n.frees);  // adopt() is the allocator's free, counted there
  EXPECT_EQ(0u, c.take_counts().allocations);
}

TEST(FrontCache, FindAndDetachSeeCachedAsFreedAndLiveWithItsRequest) {
  FrontCache c;
  ASSERT_TRUE(c.adopt(stream(1), 1024, 512));
  std::optional<FrontCache::Record> r = c.find(1024);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->cached);
  FrontCache::Record out;
  EXPECT_FALSE(c.detach(1024, &out));  // freed: stays
  EXPECT_EQ(1u, c.records());
  ASSERT_EQ(1024u, c.take(stream(1), 512, 333));
  r = c.find(1024);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->cached);
  EXPECT_EQ(333u, r->requested);
  ASSERT_TRUE(c.detach(1024, &out));
  EXPECT_EQ(333u, out.requested);
  EXPECT_EQ(512u, out.size);
  EXPECT_EQ(std::nullopt, c.find(1024));
  EXPECT_EQ(FrontCache::Put::kNoRecord, c.put(1024, stream(1)));
  EXPECT_FALSE(c.detach(4096, &out));
}

TEST(FrontCache, LimitsRefuseNewBlocksAndSayWhenToGiveBack) {
  FrontCache c(FrontCache::Limits{2, 4096, 3});
  EXPECT_FALSE(c.adopt(stream(1), 0, 8192));  // over the bytes
  ASSERT_TRUE(c.adopt(stream(1), 0, 512));
  ASSERT_TRUE(c.adopt(stream(1), 512, 512));
  EXPECT_FALSE(c.adopt(stream(1), 1024, 512));  // over the blocks
  EXPECT_FALSE(c.over());
  ASSERT_TRUE(c.take(stream(1), 512, 512));
  ASSERT_TRUE(c.take(stream(1), 512, 512));
  ASSERT_TRUE(c.adopt(stream(1), 1024, 512));
  EXPECT_FALSE(c.adopt(stream(1), 2048, 512));  // over the records (two live, one cached)
  EXPECT_EQ(FrontCache::Put::kCached, c.put(0, stream(1)));
  EXPECT_FALSE(c.over());
  EXPECT_EQ(FrontCache::Put::kCached, c.put(512, stream(1)));  // three cached
  EXPECT_TRUE(c.over());
  std::vector<FrontCache::Drained> out;
  c.drain(&out);
  EXPECT_EQ(3u, out.size());
  EXPECT_FALSE(c.over());
  EXPECT_EQ(0u, c.records());
}

TEST(FrontCache, DrainsByStreamAndByLargeSizeWithTheRightCounts) {
  FrontCache c;
  ASSERT_TRUE(c.adopt(stream(1), 0, 512));
  ASSERT_TRUE(c.adopt(stream(1), 1 << 20, 4 << 20));
  ASSERT_TRUE(c.adopt(stream(2), 16 << 20, 4 << 20));
  ASSERT_TRUE(c.adopt(stream(2), 4096, 512));
  std::vector<FrontCache::Drained> out;
  c.drain(stream(1), uint64_t{1} << 20, &out);  // stream 1's large ones
  ASSERT_EQ(1u, out.size());
  EXPECT_EQ(stream(1), out[0].stream);
  EXPECT_EQ(1u << 20, out[0].addr);
  EXPECT_EQ(4u << 20, out[0].size);
  EXPECT_EQ(std::nullopt, c.find(1 << 20));
  EXPECT_EQ(3u, c.cached_blocks());
  EXPECT_EQ(1024u + (4 << 20), c.cached_bytes());
  out.clear();
  c.drain(stream(2), std::nullopt, &out);
  EXPECT_EQ(2u, out.size());
  EXPECT_EQ(1u, c.cached_blocks());
  EXPECT_EQ(0u, c.take(stream(1), 512, 512));  // what stays still serves
  out.clear();
  c.drain(&out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(0u, c.cached_bytes());
}

// Limits::large_above: draining the large blocks finds at once when no
// large block has a record, and still finds every cached one after takes,
// puts and drains.
TEST(FrontCache, LargeBlocksCountedApartAreDrainedWhenThereAreSome) {
  FrontCache::Limits limits;
  limits.large_above = 1 << 20;
  FrontCache c(limits);
  std::vector<FrontCache::Drained> out;
  ASSERT_TRUE(c.adopt(stream(1), 0, 512));
  ASSERT_TRUE(c.adopt(stream(1), 1 << 20, 1 << 20));  // not above: small
  c.drain(stream(1), uint64_t{1} << 20, &out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(2u, c.cached_blocks());
  ASSERT_TRUE(c.adopt(stream(1), 8 << 20, 4 << 20));
  ASSERT_EQ(uint64_t{8} << 20, c.take(stream(1), 4 << 20, 100));  // live again: not cached
  c.drain(stream(1), uint64_t{1} << 20, &out);
  EXPECT_TRUE(out.empty());
  ASSERT_EQ(FrontCache::Put::kCached, c.put(8 << 20, stream(2)));  // freed on another stream
  c.drain(stream(1), uint64_t{1} << 20, &out);
  EXPECT_TRUE(out.empty());
  c.drain(stream(2), uint64_t{1} << 20, &out);
  ASSERT_EQ(1u, out.size());
  EXPECT_EQ(uint64_t{8} << 20, out[0].addr);
  out.clear();
  ASSERT_TRUE(c.adopt(stream(2), 16 << 20, 4 << 20));  // counted again after the drain
  c.drain(stream(2), uint64_t{2} << 20, &out);  // a larger bound: looked for as before
  ASSERT_EQ(1u, out.size());
  EXPECT_EQ(uint64_t{16} << 20, out[0].addr);
  EXPECT_EQ(2u, c.cached_blocks());
}

TEST(FrontCache, LowWaterIsTheLeastCachedSinceTheLastLook) {
  FrontCache c;
  ASSERT_TRUE(c.adopt(stream(1), 0, 1024));
  ASSERT_TRUE(c.adopt(stream(1), 1024, 1024));
  EXPECT_EQ(0u, c.take_low_water());  // nothing cached when it began
  EXPECT_EQ(2048u, c.take_low_water());
  ASSERT_TRUE(c.take(stream(1), 1024, 1024));
  ASSERT_TRUE(c.take(stream(1), 1024, 1024));
  EXPECT_EQ(FrontCache::Put::kCached, c.put(0, stream(1)));
  EXPECT_EQ(FrontCache::Put::kCached, c.put(1024, stream(1)));
  EXPECT_EQ(2048u, c.cached_bytes());
  EXPECT_EQ(0u, c.take_low_water());  // both were live at one moment
  EXPECT_EQ(2048u, c.take_low_water());
}

TEST(FrontCache, DetachAllEmptiesItSayingWhatWasCachedAndLive) {
  FrontCache c;
  ASSERT_TRUE(c.adopt(stream(1), 0, 512));
  ASSERT_TRUE(c.adopt(stream(1), 512, 512));
  ASSERT_EQ(512u, c.take(stream(1), 512, 100));
  std::vector<FrontCache::Drained> cached;
  std::vector<FrontCache::Record> live;
  c.detach_all(&cached, &live);
  ASSERT_EQ(1u, cached.size());
  EXPECT_EQ(0u, cached[0].addr);
  ASSERT_EQ(1u, live.size());
  EXPECT_EQ(512u, live[0].addr);
  EXPECT_EQ(100u, live[0].requested);
  EXPECT_EQ(0u, c.records());
  EXPECT_EQ(0u, c.cached_bytes());
  // Usable again after.
  ASSERT_TRUE(c.adopt(stream(1), 0, 512));
  EXPECT_EQ(0u, c.take(stream(1), 512, 512));
}

}  // namespace
}  // namespace alloc
}  // namespace gpuslack

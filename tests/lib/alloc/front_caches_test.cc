// FrontCaches alone, no allocator: the cached pair is the calling thread's
// own front; a block's record is found, detached and drained through the
// front that has it; a front past its limits says so; the room adopt()
// is given; a thread's exit hands its front to the owner once, and not
// after orphan(); a new FrontCaches never finds an old one's front.
#include "alloc/front_caches.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace gpuslack {
namespace alloc {
namespace {

cudaStream_t stream(uintptr_t v) { return reinterpret_cast<cudaStream_t>(v); }

constexpr uint64_t kNoRoomLimit = UINT64_MAX;

// The owner: its lock, and what the threads' exits handed it.
struct Owner {
  std::mutex mu;
  FrontCaches* fronts = nullptr;
  int exits = 0;
  std::vector<FrontCache::Drained> cached;
  std::vector<FrontCache::Record> live;
  FrontCache::Counts counts;
  static void exited(void* self, FrontCaches::Front* f) {
    auto* o = static_cast<Owner*>(self);
    std::lock_guard<std::mutex> lock(o->mu);
    ++o->exits;
    o->fronts->retire(f, &o->cached, &o->live, &o->counts);
  }
};

std::vector<uint64_t> addrs(const std::vector<FrontCache::Drained>& d) {
  std::vector<uint64_t> out;
  for (const FrontCache::Drained& x : d) out.push_back(x.addr);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(FrontCaches, TheCachedPairIsTheCallingThreadsOwnFront) {
  Owner o;
  FrontCaches fronts(FrontCache::Limits{}, &Owner::exited, &o);
  o.fronts = &fronts;
  FrontCaches::Front* over = nullptr;
  EXPECT_EQ(std::nullopt, fronts.take(stream(1), 512, 100));  // no front yet
  EXPECT_EQ(FrontCache::Put::kNoRecord, fronts.put(0x1000, stream(1), &over));
  EXPECT_FALSE(fronts.any());
  ASSERT_TRUE(fronts.adopt(stream(1), 0x1000, 512, kNoRoomLimit));
  EXPECT_TRUE(fronts.any());
  EXPECT_FALSE(fronts.empty());
  EXPECT_TRUE(fronts.has_record(0x1000));
  EXPECT_EQ(0x1000u, fronts.take(stream(1), 512, 100));
  EXPECT_EQ(FrontCache::Put::kCached, fronts.put(0x1000, stream(1), &over));
  EXPECT_EQ(nullptr, over);
  EXPECT_EQ(FrontCache::Put::kFreedAlready, fronts.put(0x1000, stream(1), &over));
  // Another thread has no front here: neither its take nor its put sees the block.
  std::thread([&] {
    FrontCaches::Front* other = nullptr;
    EXPECT_EQ(std::nullopt, fronts.take(stream(1), 512, 100));
    EXPECT_EQ(FrontCache::Put::kNoRecord, fronts.put(0x1000, stream(1), &other));
  }).join();
  EXPECT_EQ(0, o.exits);  // that thread had no front
  EXPECT_EQ(0x1000u, fronts.take(stream(1), 512, 100));  // still ours
  FrontCaches::Totals t = fronts.totals(true);
  EXPECT_EQ(0u, t.cached_blocks);
  EXPECT_EQ(2u, t.counts.allocations);  // the two takes
  EXPECT_EQ(1u, t.counts.frees);        // the put that cached it
  EXPECT_EQ(0u, fronts.totals(true).counts.allocations);  // taken once
}

TEST(FrontCaches, ARecordIsFoundAndDetachedThroughItsFront) {
  Owner o;
  FrontCaches fronts(FrontCache::Limits{}, &Owner::exited, &o);
  o.fronts = &fronts;
  ASSERT_TRUE(fronts.adopt(stream(1), 0x1000, 512, kNoRoomLimit));
  ASSERT_TRUE(fronts.adopt(stream(1), 0x2000, 512, kNoRoomLimit));
  ASSERT_EQ(0x2000u, fronts.take(stream(1), 512, 300));
  FrontCache::Record r;
  ASSERT_TRUE(fronts.find(0x2000, &r));
  EXPECT_FALSE(r.cached);
  EXPECT_EQ(300u, r.requested);
  ASSERT_TRUE(fronts.find(0x1000, &r));
  EXPECT_TRUE(r.cached);
  EXPECT_FALSE(fronts.find(0x3000, &r));
  uint64_t requested = 0;
  EXPECT_EQ(FrontCaches::Detach::kCached, fronts.detach(0x1000, &requested));  // freed: stays
  EXPECT_TRUE(fronts.has_record(0x1000));
  EXPECT_EQ(FrontCaches::Detach::kDetached, fronts.detach(0x2000, &requested));
  EXPECT_EQ(300u, requested);
  EXPECT_FALSE(fronts.has_record(0x2000));
  EXPECT_EQ(FrontCaches::Detach::kNoRecord, fronts.detach(0x2000, &requested));
  FrontCaches::Front* over = nullptr;
  EXPECT_EQ(FrontCache::Put::kNoRecord, fronts.put(0x2000, stream(1), &over));  // the allocator's now
}

TEST(FrontCaches, DrainsByStreamAndSizeAndTheRecordsGo) {
  Owner o;
  FrontCaches fronts(FrontCache::Limits{}, &Owner::exited, &o);
  o.fronts = &fronts;
  std::vector<FrontCache::Drained> out;
  fronts.drain(std::nullopt, std::nullopt, &out);  // nothing to drain
  EXPECT_TRUE(out.empty());
  ASSERT_TRUE(fronts.adopt(stream(1), 0x1000, 512, kNoRoomLimit));
  ASSERT_TRUE(fronts.adopt(stream(1), 0x400000, 4 << 20, kNoRoomLimit));
  ASSERT_TRUE(fronts.adopt(stream(2), 0x2000, 512, kNoRoomLimit));
  ASSERT_TRUE(fronts.adopt(stream(2), 0x800000, 4 << 20, kNoRoomLimit));
  fronts.drain(stream(1), uint64_t{1} << 20, &out);  // stream 1's large ones
  EXPECT_EQ(std::vector<uint64_t>{0x400000}, addrs(out));
  EXPECT_FALSE(fronts.has_record(0x400000));
  EXPECT_TRUE(fronts.has_record(0x1000));
  out.clear();
  fronts.drain(stream(2), std::nullopt, &out);
  EXPECT_EQ((std::vector<uint64_t>{0x2000, 0x800000}), addrs(out));
  out.clear();
  fronts.drain(std::nullopt, std::nullopt, &out);
  EXPECT_EQ(std::vector<uint64_t>{0x1000}, addrs(out));
  EXPECT_TRUE(fronts.empty());
  EXPECT_TRUE(fronts.any());  // the thread keeps its front
}

TEST(FrontCaches, AFrontPastItsLimitsSaysSoAndAdoptKeepsToTheRoomGiven) {
  Owner o;
  FrontCaches fronts(FrontCache::Limits{2, 1 << 20, 16}, &Owner::exited, &o);
  o.fronts = &fronts;
  ASSERT_TRUE(fronts.adopt(stream(1), 0x1000, 512, kNoRoomLimit));
  EXPECT_FALSE(fronts.adopt(stream(1), 0x2000, 512, 512));  // 512 cached: no room left
  EXPECT_FALSE(fronts.has_record(0x2000));
  ASSERT_TRUE(fronts.adopt(stream(1), 0x2000, 512, 513));
  EXPECT_FALSE(fronts.adopt(stream(1), 0x3000, 512, kNoRoomLimit));  // a third block would pass the limit
  ASSERT_EQ(0x2000u, fronts.take(stream(1), 512, 512));
  ASSERT_EQ(0x1000u, fronts.take(stream(1), 512, 512));
  ASSERT_TRUE(fronts.adopt(stream(1), 0x3000, 512, kNoRoomLimit));
  FrontCaches::Front* over = nullptr;
  ASSERT_EQ(FrontCache::Put::kCached, fronts.put(0x1000, stream(1), &over));
  EXPECT_EQ(nullptr, over);  // two cached: at the limit, not past it
  ASSERT_EQ(FrontCache::Put::kCached, fronts.put(0x2000, stream(1), &over));
  ASSERT_NE(nullptr, over);
  std::vector<FrontCache::Drained> out;
  fronts.drain(over, &out);
  EXPECT_EQ((std::vector<uint64_t>{0x1000, 0x2000, 0x3000}), addrs(out));
  EXPECT_TRUE(fronts.empty());
  EXPECT_EQ(0u, fronts.totals(false).cached_bytes);
}

TEST(FrontCaches, AThreadsExitHandsItsFrontToTheOwnerOnce) {
  Owner o;
  FrontCaches fronts(FrontCache::Limits{}, &Owner::exited, &o);
  o.fronts = &fronts;
  std::thread([&] {
    {
      std::lock_guard<std::mutex> lock(o.mu);  // adopt() runs under the owner's lock
      ASSERT_TRUE(fronts.adopt(stream(1), 0x1000, 512, kNoRoomLimit));
      ASSERT_TRUE(fronts.adopt(stream(1), 0x2000, 1024, kNoRoomLimit));
    }
    ASSERT_EQ(0x2000u, fronts.take(stream(1), 1024, 1000));
  }).join();
  std::lock_guard<std::mutex> lock(o.mu);
  EXPECT_EQ(1, o.exits);
  EXPECT_EQ(std::vector<uint64_t>{0x1000}, addrs(o.cached));
  ASSERT_EQ(1u, o.live.size());
  EXPECT_EQ(0x2000u, o.live[0].addr);
  EXPECT_EQ(1000u, o.live[0].requested);
  EXPECT_EQ(1u, o.counts.allocations);
  EXPECT_FALSE(fronts.any());
  EXPECT_TRUE(fronts.empty());
}

TEST(FrontCaches, AfterOrphanAnExitingThreadCallsNothing) {
  Owner o;
  FrontCaches fronts(FrontCache::Limits{}, &Owner::exited, &o);
  o.fronts = &fronts;
  std::mutex step;  // held until orphan() ran
  std::atomic<bool> adopted{false};
  std::thread t;
  {
    std::unique_lock<std::mutex> hold(step);
    t = std::thread([&] {
      {
        std::lock_guard<std::mutex> lock(o.mu);  // adopt() runs under the owner's lock
        EXPECT_TRUE(fronts.adopt(stream(1), 0x1000, 512, kNoRoomLimit));
      }
      adopted = true;
      std::lock_guard<std::mutex> wait(step);  // exits once orphaned
    });
    while (!adopted) std::this_thread::yield();
    std::lock_guard<std::mutex> lock(o.mu);
    EXPECT_TRUE(fronts.any());
    fronts.orphan();
  }
  t.join();
  EXPECT_EQ(0, o.exits);
}

TEST(FrontCaches, ANewOneNeverFindsAnOldOnesFront) {
  Owner o;
  std::optional<FrontCaches> fronts;
  fronts.emplace(FrontCache::Limits{}, &Owner::exited, &o);
  ASSERT_TRUE(fronts->adopt(stream(1), 0x1000, 512, kNoRoomLimit));
  fronts.reset();
  fronts.emplace(FrontCache::Limits{}, &Owner::exited, &o);  // very likely at the same address
  EXPECT_EQ(std::nullopt, fronts->take(stream(1), 512, 512));
  EXPECT_FALSE(fronts->has_record(0x1000));
  EXPECT_FALSE(fronts->any());
  ASSERT_TRUE(fronts->adopt(stream(1), 0x1000, 512, kNoRoomLimit));  // a front of its own
  EXPECT_EQ(0x1000u, fronts->take(stream(1), 512, 512));
}

}  // namespace
}  // namespace alloc
}  // namespace gpuslack

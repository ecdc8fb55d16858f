// GranuleMap on the simulated driver: granules mapped on demand and only
// where asked, physical memory accounted by the device, released granules
// given back, and every failure undone (no mapping, no handle left behind).
#include "alloc/granule_map.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "sim_driver.h"
#include "gpusim.h"

namespace gpuslack {
namespace alloc {
namespace {

using test_support::api;
using test_support::kMiB;

TEST(GranuleMap, MapsOnlyTheGranulesAskedFor) {
  GranuleMap m(api(), 0, 64 * kMiB);
  ASSERT_TRUE(m.ok()) << m.why();
  EXPECT_EQ(2 * kMiB, m.granularity());
  EXPECT_EQ(64 * kMiB, m.size());
  size_t before = gpusim_device_used(0);
  ASSERT_EQ(CUDA_SUCCESS, m.map(3 * kMiB, 2 * kMiB));  // spans granules 1 and 2
  EXPECT_EQ(2u, m.mapped_granules());
  EXPECT_EQ(before + 4 * kMiB, gpusim_device_used(0));  // physical memory, per granule
  EXPECT_FALSE(m.mapped(0));
  EXPECT_TRUE(m.mapped(2 * kMiB));
  EXPECT_TRUE(m.mapped(5 * kMiB));
  EXPECT_FALSE(m.mapped(6 * kMiB));
  // The mapped range is usable memory (the simulated device is host memory).
  char* p = reinterpret_cast<char*>(m.base() + 2 * kMiB);
  std::memset(p, 0x5a, 4 * kMiB);
  EXPECT_EQ(0x5a, p[4 * kMiB - 1]);
  ASSERT_EQ(CUDA_SUCCESS, m.map(2 * kMiB, 1));  // already mapped: nothing new
  EXPECT_EQ(2u, m.granules_mapped_total());
}

TEST(GranuleMap, UnmappedBytesCountsTheGranulesAMapWouldBack) {
  GranuleMap m(api(), 0, 32 * kMiB);
  ASSERT_TRUE(m.ok()) << m.why();
  ASSERT_EQ(CUDA_SUCCESS, m.map(2 * kMiB, 4 * kMiB));  // granules 1 and 2
  EXPECT_EQ(0u, m.unmapped_bytes(2 * kMiB, 4 * kMiB));
  EXPECT_EQ(0u, m.unmapped_bytes(3 * kMiB, 1));
  EXPECT_EQ(2 * kMiB, m.unmapped_bytes(1 * kMiB, 2 * kMiB));  // granule 0 partly, 1
  EXPECT_EQ(4 * kMiB, m.unmapped_bytes(5 * kMiB, 4 * kMiB));  // 2 mapped; 3, 4 not
  EXPECT_EQ(28 * kMiB, m.unmapped_bytes(0, 32 * kMiB));
  // Counting stops at `enough`: at least that much, not the whole.
  EXPECT_EQ(2 * kMiB, m.unmapped_bytes(0, 32 * kMiB, 1));
  EXPECT_EQ(4 * kMiB, m.unmapped_bytes(0, 32 * kMiB, 3 * kMiB));
  // Outside the reservation: never the cheapest.
  EXPECT_EQ(~0ull, m.unmapped_bytes(31 * kMiB, 2 * kMiB));
  EXPECT_EQ(~0ull, m.unmapped_bytes(0, 0));
}

TEST(GranuleMap, UnmapsOnlyWholeGranulesAndGivesTheMemoryBack) {
  GranuleMap m(api(), 0, 32 * kMiB);
  ASSERT_TRUE(m.ok()) << m.why();
  size_t before = gpusim_device_used(0);
  ASSERT_EQ(CUDA_SUCCESS, m.map(0, 8 * kMiB));
  EXPECT_EQ(0u, m.unmap(1 * kMiB, 2 * kMiB));  // no granule wholly inside
  EXPECT_EQ(2u, m.unmap(2 * kMiB, 5 * kMiB));  // granules 1 and 2 (3 only half)
  EXPECT_FALSE(m.mapped(2 * kMiB));
  EXPECT_TRUE(m.mapped(6 * kMiB));
  EXPECT_EQ(before + 4 * kMiB, gpusim_device_used(0));
  EXPECT_EQ(2u, m.unmap(0, 32 * kMiB));
  EXPECT_EQ(before, gpusim_device_used(0));
  EXPECT_EQ(4u, m.granules_unmapped_total());
}

TEST(GranuleMap, DestructionReleasesEverything) {
  size_t before = gpusim_device_used(0);
  {
    GranuleMap m(api(), 0, 16 * kMiB);
    ASSERT_TRUE(m.ok());
    ASSERT_EQ(CUDA_SUCCESS, m.map(0, 16 * kMiB));
    EXPECT_EQ(before + 16 * kMiB, gpusim_device_used(0));
  }
  EXPECT_EQ(before, gpusim_device_used(0));
}

TEST(GranuleMap, OutOfMemoryUndoesThePartialMap) {
  // GPUSIM_DEVICE_MEMORY is 16M for this test binary: a 10-granule map
  // fails on the 9th and leaves nothing behind.
  GranuleMap m(api(), 0, 64 * kMiB);
  ASSERT_TRUE(m.ok());
  size_t before = gpusim_device_used(0);
  EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, m.map(0, 20 * kMiB));
  EXPECT_EQ(0u, m.mapped_granules());
  EXPECT_EQ(before, gpusim_device_used(0));
  EXPECT_EQ(CUDA_SUCCESS, m.map(0, 16 * kMiB));  // what fits still maps
}

TEST(GranuleMap, BadArgumentsAreRefused) {
  GranuleMap m(api(), 0, 8 * kMiB);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, m.map(0, 0));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, m.map(6 * kMiB, 4 * kMiB));  // past the end
  EXPECT_EQ(0u, m.unmap(100 * kMiB, kMiB));
  GranuleMap none(api(), 7, 8 * kMiB);  // no device 7
  EXPECT_FALSE(none.ok());
  EXPECT_NE("", none.why());
  GranuleMap no_driver(nullptr, 0, 8 * kMiB);
  EXPECT_FALSE(no_driver.ok());
}

TEST(GranuleMap, RunsAreBackedByChunksReleasedOnlyWhole) {
  // The binary's device has 16 MiB: all of it is used below.
  GranuleMap m(api(), 0, 64 * kMiB, 4 * kMiB);  // chunks of up to 2 granules
  ASSERT_TRUE(m.ok()) << m.why();
  size_t before = gpusim_device_used(0);
  ASSERT_EQ(CUDA_SUCCESS, m.map(0, 10 * kMiB));  // 5 granules: 2 + 2 + 1
  EXPECT_EQ(5u, m.mapped_granules());
  EXPECT_EQ(3u, m.chunks_mapped_total());
  EXPECT_EQ(before + 10 * kMiB, gpusim_device_used(0));
  std::memset(reinterpret_cast<void*>(m.base()), 1, 10 * kMiB);  // all of it usable
  // A run around a mapped granule stops at it: 10-12 and 14-16, one each.
  ASSERT_EQ(CUDA_SUCCESS, m.map(12 * kMiB, 2 * kMiB));
  ASSERT_EQ(CUDA_SUCCESS, m.map(10 * kMiB, 6 * kMiB));
  EXPECT_EQ(6u, m.chunks_mapped_total());
  EXPECT_EQ(8u, m.mapped_granules());
  // A range that cuts chunks releases nothing of them.
  EXPECT_EQ(0u, m.unmap(2 * kMiB, 4 * kMiB));
  EXPECT_TRUE(m.mapped(2 * kMiB));
  // Whole chunks inside the range go, with their physical memory.
  EXPECT_EQ(4u, m.unmap(0, 8 * kMiB));
  EXPECT_FALSE(m.mapped(0));
  EXPECT_FALSE(m.mapped(6 * kMiB));
  EXPECT_TRUE(m.mapped(8 * kMiB));
  EXPECT_EQ(2u, m.chunks_unmapped_total());
  EXPECT_EQ(before + 8 * kMiB, gpusim_device_used(0));
}

// See Note [Calls that may synchronize]: every cuMemUnmap and cuMemSetAccess the
// map makes is counted (the simulated driver's own count agrees), and a
// driver that refuses nothing drops nothing at creation.
TEST(GranuleMap, CountsTheCallsThatMaySynchronize) {
  GranuleMap m(api(), 0, 64 * kMiB, 4 * kMiB);  // chunks of up to 2 granules
  ASSERT_TRUE(m.ok()) << m.why();
  long unmaps = gpusim_calls("cuMemUnmap"), accesses = gpusim_calls("cuMemSetAccess");
  ASSERT_EQ(CUDA_SUCCESS, m.map(0, 6 * kMiB));  // 2 + 1 granules: two chunks
  EXPECT_EQ(0u, m.unmap_calls());
  EXPECT_EQ(1u, m.set_access_calls());  // Note [Access once per mapped range]
  ASSERT_EQ(CUDA_SUCCESS, m.map(10 * kMiB, 2 * kMiB));  // another range: its own call
  EXPECT_EQ(2u, m.set_access_calls());
  // See Note [One unmap per run]: the two adjacent chunks go in one call.
  EXPECT_EQ(3u, m.unmap(0, 6 * kMiB));
  EXPECT_EQ(1u, m.unmap_calls());
  EXPECT_EQ(2u, m.chunks_unmapped_total());
  EXPECT_EQ(2u, m.set_access_calls());
  EXPECT_EQ(1, gpusim_calls("cuMemUnmap") - unmaps);
  EXPECT_EQ(2, gpusim_calls("cuMemSetAccess") - accesses);
  EXPECT_EQ(0u, m.refused());
}

// See Note [One unmap per run]: a run of adjacent whole chunks is one
// cuMemUnmap; a gap, or a chunk the range only cuts, ends the run; the
// memory of every chunk unmapped is given back, and a handle kept in the
// run moves to the next map.
TEST(GranuleMap, OneUnmapPerRunOfAdjacentChunks) {
  GranuleMap m(api(), 0, 64 * kMiB, 4 * kMiB);  // chunks of up to 2 granules
  ASSERT_TRUE(m.ok()) << m.why();
  size_t before = gpusim_device_used(0);
  ASSERT_EQ(CUDA_SUCCESS, m.map(0, 8 * kMiB));           // chunks 0-4, 4-8
  ASSERT_EQ(CUDA_SUCCESS, m.map(10 * kMiB, 4 * kMiB));   // 10-12, 12-14: a gap at 8-10
  ASSERT_EQ(CUDA_SUCCESS, m.map(16 * kMiB, 4 * kMiB));   // 16-20
  EXPECT_EQ(5u, m.chunks_mapped_total());
  long unmaps = gpusim_calls("cuMemUnmap");
  // 0-8 is one run, 10-14 another; 16-20 is cut by the range's end.
  EXPECT_EQ(6u, m.unmap(0, 18 * kMiB));
  EXPECT_EQ(2u, m.unmap_calls());
  EXPECT_EQ(2, gpusim_calls("cuMemUnmap") - unmaps);
  EXPECT_EQ(4u, m.chunks_unmapped_total());
  EXPECT_FALSE(m.mapped(0));
  EXPECT_FALSE(m.mapped(12 * kMiB));
  EXPECT_TRUE(m.mapped(16 * kMiB));
  EXPECT_EQ(before + 4 * kMiB, gpusim_device_used(0));
  // Kept, a run's handles move: a map of the same chunk size creates none.
  ASSERT_EQ(CUDA_SUCCESS, m.map(24 * kMiB, 8 * kMiB));
  long creates = gpusim_calls("cuMemCreate");
  EXPECT_EQ(8u, m.unmap(24 * kMiB, 8 * kMiB, true) * 2);
  EXPECT_EQ(3u, m.unmap_calls());
  ASSERT_EQ(CUDA_SUCCESS, m.map(40 * kMiB, 8 * kMiB));
  EXPECT_EQ(0, gpusim_calls("cuMemCreate") - creates);
  EXPECT_EQ(2u, m.handles_moved_total());
  m.release_kept();
  std::memset(reinterpret_cast<void*>(m.base() + 40 * kMiB), 1, 8 * kMiB);  // usable
}

// See Note [Moving a page instead of making one]: a page unmapped with its
// handle kept is mapped again elsewhere with no cuMemCreate and no new
// memory; what no map takes is released; an exported handle is never kept.
TEST(GranuleMap, AKeptHandleMovesToTheNextMap) {
  GranuleMap m(api(), 0, 64 * kMiB, 4 * kMiB);  // pages of 2 granules
  ASSERT_TRUE(m.ok()) << m.why();
  size_t before = gpusim_device_used(0);
  ASSERT_EQ(CUDA_SUCCESS, m.map(0, 8 * kMiB));  // two pages
  long creates = gpusim_calls("cuMemCreate"), releases = gpusim_calls("cuMemRelease");
  EXPECT_EQ(4u, m.unmap(0, 8 * kMiB, true));
  EXPECT_EQ(0u, m.mapped_granules());
  EXPECT_EQ(before + 8 * kMiB, gpusim_device_used(0));  // still held
  ASSERT_EQ(CUDA_SUCCESS, m.map(16 * kMiB, 4 * kMiB));  // one page: a kept handle
  EXPECT_EQ(0, gpusim_calls("cuMemCreate") - creates);
  EXPECT_EQ(1u, m.handles_moved_total());
  std::memset(reinterpret_cast<void*>(m.base() + 16 * kMiB), 7, 4 * kMiB);
  m.release_kept();  // the other one
  EXPECT_EQ(1, gpusim_calls("cuMemRelease") - releases);
  EXPECT_EQ(before + 4 * kMiB, gpusim_device_used(0));
  // Exported (chunks(), as IPC asks): released at unmap even when keeping.
  std::vector<GranuleMap::Chunk> chunks;
  ASSERT_TRUE(m.chunks(16 * kMiB, 4 * kMiB, &chunks));
  EXPECT_EQ(2u, m.unmap(16 * kMiB, 4 * kMiB, true));
  EXPECT_EQ(before, gpusim_device_used(0));
  EXPECT_EQ(2, gpusim_calls("cuMemRelease") - releases);
}

TEST(GranuleMap, KeptHandlesOfAnotherSizeAreReleasedBeforeCreating) {
  GranuleMap m(api(), 0, 64 * kMiB, 4 * kMiB);
  ASSERT_TRUE(m.ok()) << m.why();
  size_t before = gpusim_device_used(0);
  ASSERT_EQ(CUDA_SUCCESS, m.map(0, 12 * kMiB));  // three pages, fills the 16 MiB device but 4
  EXPECT_EQ(6u, m.unmap(0, 12 * kMiB, true));
  // A one-granule chunk (a page's last granule) matches no kept handle:
  // they go back first, so the device has room for it.
  ASSERT_EQ(CUDA_SUCCESS, m.map(22 * kMiB, 2 * kMiB));
  EXPECT_EQ(before + 2 * kMiB, gpusim_device_used(0));
  EXPECT_EQ(0u, m.handles_moved_total());
}

// Reservation's Note [Releasing what a miss needs]: an unmap with `most`
// takes whole chunks from the range's start until they hold that much.
TEST(GranuleMap, UnmapTakesChunksFromTheStartUpToWhatIsAskedFor) {
  GranuleMap m(api(), 0, 64 * kMiB, 4 * kMiB);  // chunks of up to 2 granules
  ASSERT_TRUE(m.ok()) << m.why();
  size_t before = gpusim_device_used(0);
  ASSERT_EQ(CUDA_SUCCESS, m.map(0, 16 * kMiB));  // four chunks
  EXPECT_EQ(4u, m.unmap(0, 16 * kMiB, false, 5 * kMiB));  // 3 granules asked: two chunks
  EXPECT_EQ(1u, m.unmap_calls());
  EXPECT_FALSE(m.mapped(6 * kMiB));
  EXPECT_TRUE(m.mapped(8 * kMiB));
  EXPECT_EQ(before + 8 * kMiB, gpusim_device_used(0));
  EXPECT_EQ(2u, m.unmap(0, 16 * kMiB, false, 1));  // at least one chunk
  EXPECT_TRUE(m.mapped(12 * kMiB));
  EXPECT_EQ(2u, m.unmap(0, 16 * kMiB));  // no bound: the rest
  EXPECT_EQ(before, gpusim_device_used(0));
}

// See Note [Moving a page instead of making one]: kept handles smaller than
// the run fill it, the largest first, with no cuMemCreate.
TEST(GranuleMap, SmallerKeptHandlesFillARun) {
  GranuleMap m(api(), 0, 64 * kMiB, 8 * kMiB);  // pages of 4 granules
  ASSERT_TRUE(m.ok()) << m.why();
  size_t before = gpusim_device_used(0);
  ASSERT_EQ(CUDA_SUCCESS, m.map(0, 4 * kMiB));           // one chunk of 2 granules
  ASSERT_EQ(CUDA_SUCCESS, m.map(10 * kMiB, 2 * kMiB));   // one of 1
  EXPECT_EQ(2u, m.chunks_mapped_total());
  EXPECT_EQ(2u, m.unmap(0, 4 * kMiB, true));
  EXPECT_EQ(1u, m.unmap(8 * kMiB, 8 * kMiB, true));
  long creates = gpusim_calls("cuMemCreate"), maps = gpusim_calls("cuMemMap");
  ASSERT_EQ(CUDA_SUCCESS, m.map(16 * kMiB, 6 * kMiB));  // 3 granules: 2 + 1, both kept
  EXPECT_EQ(0, gpusim_calls("cuMemCreate") - creates);
  EXPECT_EQ(2, gpusim_calls("cuMemMap") - maps);
  EXPECT_EQ(2u, m.handles_moved_total());
  EXPECT_EQ(before + 6 * kMiB, gpusim_device_used(0));
  std::memset(reinterpret_cast<void*>(m.base() + 16 * kMiB), 3, 6 * kMiB);  // usable
  std::vector<GranuleMap::Chunk> chunks;
  ASSERT_TRUE(m.chunks(16 * kMiB, 6 * kMiB, &chunks));
  ASSERT_EQ(2u, chunks.size());
  EXPECT_EQ(4 * kMiB, chunks[0].bytes);  // the largest first
  EXPECT_EQ(2 * kMiB, chunks[1].bytes);
}

// See Note [One handle for a long run]: a run of at least kLongRunPages
// unmapped pages, within the bytes allowed, is one handle (one cuMemCreate,
// one cuMemMap), released only whole; past the bytes allowed, or shorter,
// it is mapped in pages.
TEST(GranuleMap, ALongRunIsOneHandleWithinTheBytesAllowed) {
  GranuleMap m(api(), 0, 64 * kMiB, 4 * kMiB);  // pages of two granules
  ASSERT_TRUE(m.ok()) << m.why();
  const uint64_t run = GranuleMap::kLongRunPages * m.page_bytes();
  ASSERT_LE(run, 16 * kMiB);  // the binary's device has 16 MiB
  size_t before = gpusim_device_used(0);
  long creates = gpusim_calls("cuMemCreate"), maps = gpusim_calls("cuMemMap");
  ASSERT_EQ(CUDA_SUCCESS, m.map(0, run, true, run));
  EXPECT_EQ(1, gpusim_calls("cuMemCreate") - creates);
  EXPECT_EQ(1, gpusim_calls("cuMemMap") - maps);
  EXPECT_EQ(1u, m.chunks_mapped_total());
  EXPECT_EQ(before + run, gpusim_device_used(0));
  std::memset(reinterpret_cast<void*>(m.base()), 5, run);
  EXPECT_EQ(0u, m.unmap(0, run - m.page_bytes()));  // released only whole
  EXPECT_EQ(run / m.granularity(), m.unmap(0, run));
  EXPECT_EQ(before, gpusim_device_used(0));
  // One byte short of the run's bytes allowed: pages.
  ASSERT_EQ(CUDA_SUCCESS, m.map(0, run, true, run - 1));
  EXPECT_EQ(1 + GranuleMap::kLongRunPages, m.chunks_mapped_total());
  EXPECT_EQ(run / m.granularity(), m.unmap(0, run));
  // A page short of kLongRunPages: pages, whatever is allowed.
  ASSERT_EQ(CUDA_SUCCESS, m.map(0, run - m.page_bytes(), true, run));
  EXPECT_EQ(2 * GranuleMap::kLongRunPages, m.chunks_mapped_total());
  // Granule by granule (in_pages false): never one handle.
  EXPECT_EQ((run - m.page_bytes()) / m.granularity(), m.unmap(0, run));
  ASSERT_EQ(CUDA_SUCCESS, m.map(0, run, false, run));
  EXPECT_EQ(2 * GranuleMap::kLongRunPages + run / m.granularity(), m.chunks_mapped_total());
}

// Pages of one granule (map_chunk_mb:0 or 2) promise one handle per
// granule: no run of them is ever one handle, whatever is allowed.
TEST(GranuleMap, PagesOfOneGranuleNeverMakeALongRun) {
  GranuleMap m(api(), 0, 64 * kMiB, 0);
  ASSERT_TRUE(m.ok()) << m.why();
  ASSERT_EQ(m.granularity(), m.page_bytes());
  const uint64_t run = 4 * m.page_bytes();
  ASSERT_LE(run, 16 * kMiB);  // the binary's device has 16 MiB
  long creates = gpusim_calls("cuMemCreate");
  ASSERT_EQ(CUDA_SUCCESS, m.map(0, run, true, run));
  EXPECT_EQ(4, gpusim_calls("cuMemCreate") - creates);
  EXPECT_EQ(4u, m.chunks_mapped_total());
  EXPECT_EQ(run / m.granularity(), m.unmap(0, run));
}

// See Note [Two pages make a long run]: a run of two pages is one handle
// (two calls, not four), and a release that keeps it moves it with one
// cuMemMap into a run that fits it.
TEST(GranuleMap, ARunOfTwoPagesIsOneHandleMovedWithOneMap) {
  GranuleMap m(api(), 0, 64 * kMiB, 4 * kMiB);  // pages of two granules
  ASSERT_TRUE(m.ok()) << m.why();
  const uint64_t run = 2 * m.page_bytes();
  ASSERT_LE(run, 16 * kMiB);  // the binary's device has 16 MiB
  long creates = gpusim_calls("cuMemCreate"), maps = gpusim_calls("cuMemMap");
  ASSERT_EQ(CUDA_SUCCESS, m.map(0, run, true, run));
  EXPECT_EQ(1, gpusim_calls("cuMemCreate") - creates);
  EXPECT_EQ(1, gpusim_calls("cuMemMap") - maps);
  std::memset(reinterpret_cast<void*>(m.base()), 3, run);
  // Moved: unmapped with its handle kept, mapped a page further on.
  ASSERT_EQ(run / m.granularity(), m.unmap(0, run, true));
  creates = gpusim_calls("cuMemCreate");
  maps = gpusim_calls("cuMemMap");
  ASSERT_EQ(CUDA_SUCCESS, m.map(3 * m.page_bytes(), run, true, run));
  m.release_kept();
  EXPECT_EQ(0, gpusim_calls("cuMemCreate") - creates);
  EXPECT_EQ(1, gpusim_calls("cuMemMap") - maps);
  EXPECT_EQ(1u, m.handles_moved_total());
  std::memset(reinterpret_cast<void*>(m.base() + 3 * m.page_bytes()), 4, run);
}

// (Grants that succeed, over chunks: DeviceAllocatorStreams.
// PeersGetEveryMappingNowAndLater, on two simulated devices.)
TEST(GranuleMap, AFailedGrantLeavesTheMapUsable) {
  GranuleMap m(api(), 0, 64 * kMiB, 8 * kMiB);
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(CUDA_SUCCESS, m.map(0, 12 * kMiB));
  // With one simulated device, a peer grant names an invalid device: the
  // failure is reported, and the map stays usable.
  EXPECT_NE(CUDA_SUCCESS, m.grant(5));
  std::memset(reinterpret_cast<void*>(m.base()), 2, 12 * kMiB);
}

}  // namespace
}  // namespace alloc
}  // namespace gpuslack

// PinnedHeap when the runtime's cudaHostAlloc fails (GPUSIM_FAIL=
// cudaHostAlloc:1, set by CMake: the heap's first chunk): nullptr, so that
// the caller makes the runtime's own call; no error left behind; the next
// allocation pins a chunk and serves.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "pin/pinned_heap.h"

namespace gpuslack {
namespace pin {
namespace {

TEST(PinnedHeapFaults, AFailedChunkFallsBackCleanlyAndTheHeapRecovers) {
  PinnedHeap heap(4 << 20, 64 << 20);
  EXPECT_EQ(nullptr, heap.allocate(4096, 0));
  EXPECT_EQ(cudaSuccess, cudaGetLastError());
  EXPECT_EQ(1u, heap.stats().fallbacks);
  EXPECT_EQ(0u, heap.stats().cap_hits);
  void* p = heap.allocate(4096, 0);
  ASSERT_NE(nullptr, p);
  cudaPointerAttributes a{};
  ASSERT_EQ(cudaSuccess, cudaPointerGetAttributes(&a, p));
  EXPECT_EQ(cudaMemoryTypeHost, a.type);
  EXPECT_TRUE(heap.free(p));
  EXPECT_EQ(cudaSuccess, cudaGetLastError());
}

}  // namespace
}  // namespace pin
}  // namespace gpuslack

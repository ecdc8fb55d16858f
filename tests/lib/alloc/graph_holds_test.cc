// GraphHolds on the simulated runtime's graphs and user objects: a block a
// captured graph may touch is held until the graph and every instance of it
// are destroyed, then handed back once; blocks no capture touched are not
// held; a graph that cannot get a user object holds its blocks for good.
#include "alloc/graph_holds.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace gpuslack {
namespace alloc {
namespace {

std::vector<uint64_t> released(GraphHolds& holds) {
  std::vector<uint64_t> out;
  holds.release_destroyed([&](uint64_t addr) { out.push_back(addr); });
  std::sort(out.begin(), out.end());
  return out;
}

cudaGraph_t new_graph() {
  cudaGraph_t g = nullptr;
  EXPECT_EQ(cudaSuccess, cudaGraphCreate(&g, 0));
  return g;
}

TEST(GraphHolds, ABlockFreedWhileItsGraphLivesIsHeldUntilTheGraphIsDestroyed) {
  GraphHolds holds(0);
  cudaGraph_t g = new_graph();
  holds.allocated(0x1000, 7, g);
  holds.allocated(0x2000, 7, g);  // the same capture: the same hold
  EXPECT_FALSE(holds.empty());
  EXPECT_TRUE(holds.free_held(0x1000));
  EXPECT_EQ(1u, holds.held_blocks());
  EXPECT_TRUE(released(holds).empty());  // the graph lives
  ASSERT_EQ(cudaSuccess, cudaGraphDestroy(g));
  EXPECT_EQ(std::vector<uint64_t>{0x1000}, released(holds));
  EXPECT_TRUE(holds.empty());
  EXPECT_EQ(0u, holds.held_blocks());
  EXPECT_TRUE(released(holds).empty());  // handed back once
  // Its graph gone, the other block is freed as any block is.
  EXPECT_FALSE(holds.free_held(0x2000));
}

TEST(GraphHolds, AnInstanceKeepsTheBlocksHeldAfterItsGraphIsDestroyed) {
  GraphHolds holds(0);
  cudaGraph_t g = new_graph();
  holds.allocated(0x1000, 1, g);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaSuccess, cudaGraphInstantiate(&exec, g, 0));
  EXPECT_TRUE(holds.free_held(0x1000));
  ASSERT_EQ(cudaSuccess, cudaGraphDestroy(g));
  EXPECT_TRUE(released(holds).empty());  // a replay may still write there
  ASSERT_EQ(cudaSuccess, cudaGraphExecDestroy(exec));
  EXPECT_EQ(std::vector<uint64_t>{0x1000}, released(holds));
}

TEST(GraphHolds, BlocksFreedDuringACaptureAreHeldByThatCapturesGraph) {
  GraphHolds holds(0);
  cudaGraph_t first = new_graph(), second = new_graph();
  holds.allocated(0x1000, 1, first);
  // Allocated in the first capture, freed in the second: the second holds it.
  holds.freed_in_capture(0x1000, 2, second);
  holds.freed_in_capture(0x3000, 2, second);  // allocated before any capture
  EXPECT_EQ(2u, holds.held_blocks());
  ASSERT_EQ(cudaSuccess, cudaGraphDestroy(first));
  EXPECT_TRUE(released(holds).empty());
  ASSERT_EQ(cudaSuccess, cudaGraphDestroy(second));
  EXPECT_EQ((std::vector<uint64_t>{0x1000, 0x3000}), released(holds));
  EXPECT_TRUE(holds.empty());
}

TEST(GraphHolds, ABlockNoCaptureAllocatedIsNotHeld) {
  GraphHolds holds(0);
  EXPECT_FALSE(holds.free_held(0x1000));
  EXPECT_TRUE(holds.empty());
  EXPECT_EQ(0u, holds.held_blocks());
}

TEST(GraphHolds, WithoutAUserObjectTheBlocksStayHeld) {
  GraphHolds holds(0);
  // No graph: cudaGraphRetainUserObject refuses, so nothing will say when
  // the graph is gone; memory is lost, never data.
  holds.allocated(0x1000, 3, nullptr);
  EXPECT_TRUE(holds.free_held(0x1000));
  EXPECT_TRUE(released(holds).empty());
  EXPECT_EQ(1u, holds.held_blocks());
  EXPECT_FALSE(holds.empty());
}

}  // namespace
}  // namespace alloc
}  // namespace gpuslack

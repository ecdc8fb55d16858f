// GranuleMap on a driver that offers fabric handles but refuses them at
// cuMemCreate (GPUSIM_FABRIC_HANDLES=1 GPUSIM_VMM_REFUSE=fabric, set by
// CMake: the attribute says 1, creation asking for the type answers
// CUDA_ERROR_NOT_PERMITTED, as without an IMEX channel). Note [What the
// driver refuses at creation] in alloc/granule_map.h: the map asks for the
// fabric type where offered (Note [Fabric handles where the driver offers
// them] in alloc/block_ipc.cc), the first refused creation is retried
// without it first and succeeds with the POSIX type and the RDMA flag kept;
// later chunks go straight to what works. Without the retry every map
// would fail (the control).
#include <cuda.h>
#include <gtest/gtest.h>

#include <vector>

#include "alloc/granule_map.h"
#include "gpusim.h"
#include "sim_driver.h"

namespace gpuslack {
namespace alloc {
namespace {

using test_support::api;
using test_support::kMiB;

TEST(GranuleMapFabricRefused, DropsTheFabricTypeFirstAndKeepsTheRest) {
  ASSERT_NE(nullptr, api());
  // The control: the properties the map asks for are refused.
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.requestedHandleTypes =
      static_cast<CUmemAllocationHandleType>(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC);
  prop.allocFlags.gpuDirectRDMACapable = 1;
  CUmemGenericAllocationHandle h = 0;
  EXPECT_EQ(CUDA_ERROR_NOT_PERMITTED, api()->mem_create(&h, 2 * kMiB, &prop, 0));

  GranuleMap m(api(), 0, 32 * kMiB);
  ASSERT_TRUE(m.ok()) << m.why();
  long creates = gpusim_calls("cuMemCreate");
  ASSERT_EQ(CUDA_SUCCESS, m.map(0, 2 * kMiB));
  EXPECT_EQ(2, gpusim_calls("cuMemCreate") - creates);  // refused, then without the fabric type
  EXPECT_EQ(0u, m.refused());  // the POSIX type and the RDMA flag stand
  std::vector<GranuleMap::Chunk> chunks;
  ASSERT_TRUE(m.chunks(0, 2 * kMiB, &chunks));
  ASSERT_EQ(1u, chunks.size());
  CUmemAllocationProp made{};
  ASSERT_EQ(CUDA_SUCCESS, cuMemGetAllocationPropertiesFromHandle(&made, chunks[0].handle));
  EXPECT_EQ(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, made.requestedHandleTypes);
  EXPECT_EQ(1, made.allocFlags.gpuDirectRDMACapable);
  creates = gpusim_calls("cuMemCreate");
  ASSERT_EQ(CUDA_SUCCESS, m.map(4 * kMiB, 2 * kMiB));
  EXPECT_EQ(1, gpusim_calls("cuMemCreate") - creates);
  EXPECT_EQ(2u, m.unmap(0, 32 * kMiB));
}

}  // namespace
}  // namespace alloc
}  // namespace gpuslack

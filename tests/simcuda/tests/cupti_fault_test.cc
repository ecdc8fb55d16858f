// Fault injection in the simulated CUPTI (GPUSIM_FAIL=cuptiBufferRequest:1,
// cuptiRecord:3): the first buffer request is refused (as if the client had
// declined it) and the third record is lost as if CUPTI's own buffers had
// overflowed; both are counted as dropped, the rest arrive.
#include "cupti_test_util.h"

using namespace cuptitest;

namespace {

using C = Collector<0>;

TEST(CuptiFault, RefusedRequestsAndLostRecordsAreCountedAsDropped) {
  CUPTI_OK(C::register_legacy());
  CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  for (int i = 0; i < 5; ++i) ASSERT_EQ(cudaSuccess, launch(nullptr, 1));
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  CUPTI_OK(cuptiActivityFlushAll(0));
  size_t dropped = 0;
  CUPTI_OK(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped));
  EXPECT_EQ(2u, dropped);
  EXPECT_EQ(3u, C::kernel_count());
}

}  // namespace

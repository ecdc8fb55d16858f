// Subscribers where only one is allowed: run once with an r580 driver
// (GPUSIM_DRIVER_VERSION=580) and once with CUPTI 13.0 (GPUSIM_CUPTI_VERSION=
// 130001). A request for several subscribers cannot be fulfilled
// (cupti_callbacks.h: "cuptiSubscribe_v2 will return
// CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED if the request cannot be
// fulfilled"); whoever subscribes first holds CUPTI alone, and the second
// tool keeps its records whichever order.
#include "cupti_test_util.h"
#include "gpusim_cupti_tool.h"

using namespace cuptitest;

namespace {

using Mine = Collector<1>;

void launch_and_wait(int n) {
  for (int i = 0; i < n; ++i) ASSERT_EQ(cudaSuccess, launch(nullptr, 1));
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
}

TEST(CuptiSingle, TheVersionIsTheConfiguredOne) {
  uint32_t v = 0;
  CUPTI_OK(cuptiGetVersion(&v));
  const char* env = std::getenv("GPUSIM_CUPTI_VERSION");
  EXPECT_EQ(env ? static_cast<uint32_t>(std::strtoul(env, nullptr, 10)) : CUPTI_API_VERSION, v);
}

TEST(CuptiSingle, ARequestForSeveralFailsEvenAlone) {
  CUpti_SubscriberHandle h;
  std::string old;
  EXPECT_EQ(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, subscribe_v2(&h, "gpuslack", true, &old));
  EXPECT_EQ("", old);  // no one holds it
  CUPTI_OK(subscribe_v2(&h, "gpuslack", false, &old));
  CUPTI_OK(cuptiUnsubscribe(h));
}

TEST(CuptiSingle, TheFirstSubscriberHoldsCuptiAlone) {
  CUpti_SubscriberHandle h, h2;
  std::string old;
  CUPTI_OK(subscribe_v2(&h, "gpuslack", false, &old));
  EXPECT_EQ(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, subscribe_v2(&h2, "Kineto", false, &old));
  EXPECT_EQ("CUPTI for gpuslack", old);
  EXPECT_EQ(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, cuptiSubscribe(&h2, nullptr, nullptr));
  // Per-subscriber attributes are for several subscribers only.
  uint8_t v = 1;
  size_t size = sizeof(v);
  EXPECT_EQ(CUPTI_ERROR_NOT_SUPPORTED,
            cuptiActivitySetAttribute_v2(h, CUPTI_ACTIVITY_ATTR_ENABLE_KERNEL_LATENCY_TIMESTAMPS, &size, &v));
  CUPTI_OK(cuptiUnsubscribe(h));
  CUPTI_OK(cuptiSubscribe(&h2, nullptr, nullptr));
  EXPECT_EQ(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, subscribe_v2(&h, "gpuslack", false, &old));
  EXPECT_EQ("CUPTI (unnamed subscriber)", old);
}

TEST(CuptiSingle, ALegacyToolFirstKeepsItsRecordsAndWeStepAside) {
  ASSERT_EQ(0, gpusim_cupti_tool_start(GPUSIM_CUPTI_TOOL_LEGACY, nullptr));
  CUpti_SubscriberHandle h;
  std::string old;
  EXPECT_EQ(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, subscribe_v2(&h, "gpuslack", true, &old));
  EXPECT_EQ("CUPTI (unnamed subscriber)", old);
  launch_and_wait(4);
  EXPECT_EQ(0, gpusim_cupti_tool_stop());
  EXPECT_EQ(4, gpusim_cupti_tool_records());
}

TEST(CuptiSingle, WhenWeHoldCuptiTheToolIsRefusedAndOurRecordsGoOn) {
  CUpti_SubscriberHandle h;
  CUPTI_OK(subscribe_v2(&h, "gpuslack", false, nullptr));
  CUPTI_OK(Mine::register_for(h));
  CUPTI_OK(cuptiActivityEnable_v2(h, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, nullptr));
  EXPECT_EQ(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, gpusim_cupti_tool_start(GPUSIM_CUPTI_TOOL_SHARED, "Kineto"));
  EXPECT_STREQ("CUPTI for gpuslack", gpusim_cupti_tool_holder());
  launch_and_wait(3);
  CUPTI_OK(cuptiActivityFlushAll(0));
  EXPECT_EQ(3u, Mine::kernel_count());
  // Stepping aside: once we unsubscribe, the tool can start.
  CUPTI_OK(cuptiUnsubscribe(h));
  ASSERT_EQ(0, gpusim_cupti_tool_start(GPUSIM_CUPTI_TOOL_EXCLUSIVE, "Kineto"));
  launch_and_wait(2);
  EXPECT_EQ(0, gpusim_cupti_tool_stop());
  EXPECT_EQ(2, gpusim_cupti_tool_records());
  EXPECT_EQ(3u, Mine::kernel_count());
}

TEST(CuptiSingle, FinalizeEndsTheSubscription) {
  CUpti_SubscriberHandle h;
  CUPTI_OK(subscribe_v2(&h, "gpuslack", false, nullptr));
  CUPTI_OK(cuptiFinalize());
  EXPECT_EQ(CUPTI_ERROR_INVALID_PARAMETER, cuptiUnsubscribe(h));
  CUPTI_OK(cuptiSubscribe(&h, nullptr, nullptr));
}

}  // namespace

// Subscribers where several are allowed (GPUSIM_DRIVER_VERSION=610, whose
// default CUPTI is 13.3: 13.2 and older allow one): cupti_callbacks.h's rules for cuptiSubscribe / cuptiSubscribe_v2,
// each subscriber's own buffers, and the simulated second tool left working
// whichever of the two subscribed first.
#include "cupti_test_util.h"
#include "gpusim_cupti_tool.h"

using namespace cuptitest;

namespace {

using Mine = Collector<1>;
using Other = Collector<2>;

void launch_and_wait(int n) {
  for (int i = 0; i < n; ++i) ASSERT_EQ(cudaSuccess, launch(nullptr, 1));
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
}

// Subscribes as gpuslack would where several are allowed, with its own
// buffers and kernel activity.
void start_shared(CUpti_SubscriberHandle* h, std::string* old = nullptr) {
  ASSERT_EQ(CUPTI_SUCCESS, subscribe_v2(h, "gpuslack", true, old));
  ASSERT_EQ(CUPTI_SUCCESS, Mine::register_for(*h));
  ASSERT_EQ(CUPTI_SUCCESS, cuptiActivityEnable_v2(*h, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, nullptr));
}

uint8_t state() {
  uint8_t v = 9;
  size_t size = sizeof(v);
  EXPECT_EQ(CUPTI_SUCCESS, cuptiActivityGetAttribute(CUPTI_ACTIVITY_ATTR_MULTIPLE_SUBSCRIBER_STATE, &size, &v));
  return v;
}

TEST(CuptiMulti, SharedSubscribersCoexistAndTheSecondLearnsTheFirstsName) {
  EXPECT_EQ(2, state());
  CUpti_SubscriberHandle a, b;
  std::string old;
  ASSERT_EQ(CUPTI_SUCCESS, subscribe_v2(&a, "Kineto", true, &old));
  EXPECT_EQ(1, state());
  ASSERT_EQ(CUPTI_SUCCESS, subscribe_v2(&b, "gpuslack", true, &old));
  EXPECT_EQ("CUPTI for Kineto", old);
  EXPECT_NE(a, b);
  CUPTI_OK(cuptiUnsubscribe(b));
  CUPTI_OK(cuptiUnsubscribe(a));
  EXPECT_EQ(CUPTI_ERROR_INVALID_PARAMETER, cuptiUnsubscribe(a));
  EXPECT_EQ(2, state());
}

TEST(CuptiMulti, AnExclusiveOrLegacyRequestIsRefusedWithTheHoldersName) {
  CUpti_SubscriberHandle a, b;
  std::string old;
  ASSERT_EQ(CUPTI_SUCCESS, subscribe_v2(&a, "Kineto", true, &old));
  EXPECT_EQ(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, subscribe_v2(&b, "gpuslack", false, &old));
  EXPECT_EQ("CUPTI for Kineto", old);
  EXPECT_EQ(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, cuptiSubscribe(&b, nullptr, nullptr));
  CUPTI_OK(cuptiUnsubscribe(a));
  // A legacy subscriber holds CUPTI alone; its name is a fixed one.
  CUPTI_OK(cuptiSubscribe(&a, nullptr, nullptr));
  EXPECT_EQ(0, state());
  EXPECT_EQ(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, subscribe_v2(&b, "gpuslack", true, &old));
  EXPECT_EQ("CUPTI (unnamed subscriber)", old);
  CUPTI_OK(cuptiUnsubscribe(a));
  CUPTI_OK(subscribe_v2(&b, "gpuslack", true, &old));
}

TEST(CuptiMulti, EachSubscriberGetsEveryRecordInItsOwnBuffers) {
  CUpti_SubscriberHandle mine, other;
  start_shared(&mine);
  ASSERT_EQ(CUPTI_SUCCESS, subscribe_v2(&other, "Kineto", true, nullptr));
  CUPTI_OK(Other::register_for(other));
  CUPTI_OK(cuptiActivityEnable_v2(other, CUPTI_ACTIVITY_KIND_KERNEL, nullptr));
  launch_and_wait(5);
  CUPTI_OK(cuptiActivityFlushAll(0));
  EXPECT_EQ(5u, Mine::kernel_count());
  EXPECT_EQ(5u, Other::kernel_count());
  std::lock_guard<std::mutex> l1(Mine::mu);
  std::lock_guard<std::mutex> l2(Other::mu);
  for (uint8_t* b : Mine::buffers_seen) EXPECT_EQ(0u, Other::buffers_seen.count(b));
  EXPECT_EQ(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, Mine::kernels[0].kind);
  EXPECT_EQ(CUPTI_ACTIVITY_KIND_KERNEL, Other::kernels[0].kind);  // as each enabled
  EXPECT_EQ(Mine::kernels[4].correlationId, Other::kernels[4].correlationId);
  EXPECT_EQ(Mine::kernels[4].start, Other::kernels[4].start);
}

TEST(CuptiMulti, OneSubscribersDisableLeavesTheOthersRecords) {
  CUpti_SubscriberHandle mine, other;
  start_shared(&mine);
  ASSERT_EQ(CUPTI_SUCCESS, subscribe_v2(&other, "Kineto", true, nullptr));
  CUPTI_OK(Other::register_for(other));
  CUPTI_OK(cuptiActivityEnable_v2(other, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, nullptr));
  CUPTI_OK(cuptiActivityDisable_v2(other, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, nullptr));
  launch_and_wait(3);
  CUPTI_OK(cuptiUnsubscribe(other));
  CUPTI_OK(cuptiActivityFlushAll(0));
  EXPECT_EQ(3u, Mine::kernel_count());
  EXPECT_EQ(0u, Other::kernel_count());
}

TEST(CuptiMulti, TheSecondToolKeepsWorkingWhenWeSubscribeAfterIt) {
  ASSERT_EQ(0, gpusim_cupti_tool_start(GPUSIM_CUPTI_TOOL_SHARED, "Kineto"));
  launch_and_wait(2);
  CUpti_SubscriberHandle mine;
  std::string old;
  start_shared(&mine, &old);
  EXPECT_EQ("CUPTI for Kineto", old);
  launch_and_wait(3);
  CUPTI_OK(cuptiActivityFlushAll(0));
  EXPECT_EQ(5, gpusim_cupti_tool_records());
  EXPECT_EQ(3u, Mine::kernel_count());
  CUPTI_OK(cuptiUnsubscribe(mine));
  launch_and_wait(1);
  EXPECT_EQ(0, gpusim_cupti_tool_stop());
  EXPECT_EQ(6, gpusim_cupti_tool_records());
}

TEST(CuptiMulti, TheSecondToolWorksWhenItSubscribesAfterUs) {
  CUpti_SubscriberHandle mine;
  start_shared(&mine);
  launch_and_wait(2);
  ASSERT_EQ(0, gpusim_cupti_tool_start(GPUSIM_CUPTI_TOOL_SHARED, "Kineto"));
  EXPECT_STREQ("CUPTI for gpuslack", gpusim_cupti_tool_holder());
  launch_and_wait(3);
  EXPECT_EQ(0, gpusim_cupti_tool_stop());  // its flush completes our buffers too
  EXPECT_EQ(3, gpusim_cupti_tool_records());
  EXPECT_EQ(5u, Mine::kernel_count());
  launch_and_wait(1);
  CUPTI_OK(cuptiActivityFlushAll(0));
  EXPECT_EQ(6u, Mine::kernel_count());
}

TEST(CuptiMulti, ALegacyToolAfterUsIsRefusedAndWeCarryOn) {
  CUpti_SubscriberHandle mine;
  start_shared(&mine);
  EXPECT_EQ(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, gpusim_cupti_tool_start(GPUSIM_CUPTI_TOOL_LEGACY, nullptr));
  launch_and_wait(2);
  CUPTI_OK(cuptiActivityFlushAll(0));
  EXPECT_EQ(2u, Mine::kernel_count());
}

TEST(CuptiMulti, AnotherSubscribersFinalizeLeavesOursRunning) {
  CUpti_SubscriberHandle mine;
  start_shared(&mine);
  ASSERT_EQ(0, gpusim_cupti_tool_start(GPUSIM_CUPTI_TOOL_SHARED, "Kineto"));
  CUPTI_OK(cuptiFinalize());
  launch_and_wait(2);
  CUPTI_OK(cuptiActivityFlushAll(0));
  EXPECT_EQ(2u, Mine::kernel_count());
}

TEST(CuptiMulti, UnsubscribingHandsBackEveryBufferHeld) {
  CUpti_SubscriberHandle mine;
  start_shared(&mine);
  launch_and_wait(1);
  CUPTI_OK(cuptiUnsubscribe(mine));
  std::lock_guard<std::mutex> l(Mine::mu);
  EXPECT_EQ(1, Mine::buffers);
  EXPECT_EQ(1u, Mine::kernels.size());
}

TEST(CuptiMulti, PerSubscriberCallsRefuseAHandleThatIsNotOne) {
  int x = 0;
  auto bogus = reinterpret_cast<CUpti_SubscriberHandle>(&x);
  EXPECT_EQ(CUPTI_ERROR_INVALID_PARAMETER, cuptiActivityEnable_v2(bogus, CUPTI_ACTIVITY_KIND_KERNEL, nullptr));
  EXPECT_EQ(CUPTI_ERROR_INVALID_PARAMETER, Mine::register_for(bogus));
  EXPECT_EQ(CUPTI_ERROR_INVALID_PARAMETER, cuptiEnableDomain(1, bogus, CUPTI_CB_DOMAIN_RUNTIME_API));
}

}  // namespace

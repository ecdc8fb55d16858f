// CUPTI held by a tool outside the process (GPUSIM_CUPTI_HELD_BY="Nsight
// Systems"): "this function returns the same error when application is
// launched using NVIDIA tools like Nsight Systems" (cupti_callbacks.h,
// cuptiSubscribe). Every subscription fails, naming the tool.
#include "cupti_test_util.h"
#include "gpusim_cupti_tool.h"

using namespace cuptitest;

namespace {

TEST(CuptiHeld, EverySubscriptionFailsNamingTheTool) {
  CUpti_SubscriberHandle h;
  std::string old;
  EXPECT_EQ(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, subscribe_v2(&h, "gpuslack", true, &old));
  EXPECT_EQ("Nsight Systems", old);
  EXPECT_EQ(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, subscribe_v2(&h, "gpuslack", false, &old));
  EXPECT_EQ("Nsight Systems", old);
  EXPECT_EQ(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, cuptiSubscribe(&h, nullptr, nullptr));
  EXPECT_EQ(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, gpusim_cupti_tool_start(GPUSIM_CUPTI_TOOL_SHARED, "x"));
  EXPECT_STREQ("Nsight Systems", gpusim_cupti_tool_holder());
}

TEST(CuptiHeld, AShortNameBufferGetsATruncatedName) {
  char buf[7] = "xxxxxx";
  CUpti_SubscriberParams p;
  std::memset(&p, 0, sizeof(p));
  p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  p.oldSubscriberName = buf;
  p.oldSubscriberSize = sizeof(buf);
  CUpti_SubscriberHandle h;
  EXPECT_EQ(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, cuptiSubscribe_v2(&h, nullptr, nullptr, &p));
  EXPECT_STREQ("Nsight", buf);
}

}  // namespace

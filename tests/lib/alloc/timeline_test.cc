// Timeline: bounded samples, whatever the run's length; no peak lost
// between samples.
#include "alloc/timeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace gpuslack {
namespace alloc {
namespace {

TEST(Timeline, KeepsPeaksAndStaysBounded) {
  Timeline t;
  uint64_t peak = 0;
  for (int i = 0; i < 200000; ++i) {
    uint64_t v = (i * 7919u) % 100000;
    if (i == 123456) v = 5000000;  // one spike
    peak = std::max(peak, v);
    t.note(v, v + 1);
    if (i % 20000 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  Timeline::Samples s = t.samples();
  ASSERT_FALSE(s.t_s.empty());
  EXPECT_LE(s.t_s.size(), Timeline::kMaxSamples + 1);
  EXPECT_EQ(s.t_s.size(), s.allocated.size());
  EXPECT_EQ(s.t_s.size(), s.reserved.size());
  EXPECT_EQ(peak, *std::max_element(s.allocated.begin(), s.allocated.end()));
  EXPECT_EQ(peak + 1, *std::max_element(s.reserved.begin(), s.reserved.end()));
  EXPECT_TRUE(std::is_sorted(s.t_s.begin(), s.t_s.end()));
}

TEST(Timeline, NothingNotedIsNoSample) {
  Timeline t;
  EXPECT_TRUE(t.samples().t_s.empty());
}

}  // namespace
}  // namespace alloc
}  // namespace gpuslack

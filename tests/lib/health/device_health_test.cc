#include "health/device_health.h"

#include <gtest/gtest.h>

namespace gpuslack {
namespace health {
namespace {

constexpr uint64_t kGpuIdle = 0x1, kAppClocks = 0x2, kSwPowerCap = 0x4, kHwSlowdown = 0x8, kSwThermal = 0x20;

Reading reading(double t, unsigned mhz, uint64_t reasons, unsigned celsius) {
  Reading r;
  r.t_s = t;
  r.has_clock = true;
  r.sm_mhz = mhz;
  r.sm_max_mhz = 2000;
  r.has_reasons = true;
  r.reasons = reasons;
  r.has_temperature = true;
  r.temperature_c = celsius;
  r.has_power = true;
  r.power_mw = 500000;
  r.power_limit_mw = 700000;
  r.has_memory = true;
  r.memory_used_bytes = static_cast<uint64_t>(t * 1000);
  return r;
}

TEST(DeviceHealth, ReasonNamesFollowNvmlBits) {
  EXPECT_EQ(reason_names(kGpuIdle | kSwThermal), (std::vector<std::string>{"gpu_idle", "sw_thermal"}));
  EXPECT_EQ(reason_names(0x100), (std::vector<std::string>{"display_clocks"}));
  EXPECT_TRUE(reason_names(1ull << 40).empty());  // unknown bits are left out
}

TEST(DeviceHealth, IdleAndApplicationClocksAreNotThrottling) {
  EXPECT_FALSE(is_throttled(0));
  EXPECT_FALSE(is_throttled(kGpuIdle | kAppClocks));
  EXPECT_TRUE(is_throttled(kSwPowerCap));
  EXPECT_TRUE(is_throttled(kGpuIdle | kHwSlowdown));
  EXPECT_FALSE(is_throttled(1ull << 40));
}

TEST(DeviceHealth, AggregatesClocksReasonsTemperaturePowerAndMemory) {
  DeviceAggregate a;
  a.add(reading(0.5, 2000, 0, 60));
  a.add(reading(1.5, 1700, kSwThermal, 86));
  a.add(reading(2.5, 1700, kSwThermal | kHwSlowdown, 84));
  a.add(reading(3.5, 2000, kGpuIdle, 70));
  a.add(reading(4.5, 1600, kSwThermal, 80));
  DeviceHealth d = a.row(1, "NVIDIA H200", "GPU-x");
  EXPECT_EQ(d.device, 1);
  EXPECT_EQ(d.name, "NVIDIA H200");
  EXPECT_EQ(d.samples, 5u);
  EXPECT_EQ(d.throttled_samples, 3u);
  EXPECT_EQ(d.throttle_reasons, (std::vector<std::string>{"gpu_idle", "hw_slowdown", "sw_thermal"}));
  EXPECT_DOUBLE_EQ(d.sm_clock_mhz_mean, 1800.0);
  EXPECT_DOUBLE_EQ(d.sm_clock_mhz_min, 1600.0);
  EXPECT_DOUBLE_EQ(d.sm_clock_max_mhz, 2000.0);
  EXPECT_DOUBLE_EQ(d.clock_ratio_mean, 0.9);
  EXPECT_DOUBLE_EQ(d.temperature_c_mean, 76.0);
  EXPECT_DOUBLE_EQ(d.temperature_c_max, 86.0);
  EXPECT_DOUBLE_EQ(d.power_w_mean, 500.0);
  EXPECT_DOUBLE_EQ(d.power_limit_w, 700.0);
  EXPECT_EQ(d.memory_used_bytes_max, 4500u);
  // The series: one bucket a second.
  ASSERT_EQ(d.clock_ratio.size(), 5);
  EXPECT_DOUBLE_EQ(d.clock_ratio.value(1), 0.85);
  EXPECT_DOUBLE_EQ(d.memory_used.value(4), 4500.0);
  EXPECT_EQ(throttle_line(d), "GPU 1 throttled 60% of samples: hw_slowdown, sw_thermal; SM clock 90% of max; 86 \xC2\xB0""C max");
}

TEST(DeviceHealth, FiguresNvmlDidNotAnswerStayOut) {
  DeviceAggregate a;
  Reading r;
  r.t_s = 1;
  a.add(r);  // nothing answered
  r.has_temperature = true;
  r.temperature_c = 50;
  a.add(r);
  DeviceHealth d = a.row(0, "", "");
  EXPECT_EQ(d.samples, 2u);
  EXPECT_EQ(d.sm_clock_mhz_mean, 0);
  EXPECT_EQ(d.clock_ratio_mean, 0);
  EXPECT_EQ(d.clock_ratio.size(), 0);
  EXPECT_EQ(d.memory_used.size(), 0);
  EXPECT_DOUBLE_EQ(d.temperature_c_mean, 50.0);
  EXPECT_EQ(d.throttled_samples, 0u);
  EXPECT_EQ(throttle_line(d), "");  // no line for a GPU that did not throttle
}

TEST(DeviceHealth, ALongRunKeepsItsSeriesBounded) {
  DeviceAggregate a;
  for (int t = 0; t < 3600; ++t) a.add(reading(t + 0.5, 1900, 0, 60));
  DeviceHealth d = a.row(0, "", "");
  EXPECT_EQ(d.samples, 3600u);
  EXPECT_LE(d.clock_ratio.size(), TimeBuckets::kMaxBuckets);
  EXPECT_DOUBLE_EQ(d.clock_ratio.interval_s(), 16.0);  // 1, 2, 4, 8, 16: 3600 s in 225 buckets
  EXPECT_DOUBLE_EQ(d.clock_ratio.value(0), 0.95);
}

}  // namespace
}  // namespace health
}  // namespace gpuslack

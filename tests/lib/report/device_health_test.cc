// device_health and series in the whole summary's JSON, read back, and the
// device health's text (report/device_health.h; their writers and readers:
// device_health_json.h, series_json.h).
#include "report/device_health.h"

#include <gtest/gtest.h>

#include "report/json.h"
#include "report/summary_reader.h"
#include "report/text.h"
#include "report/wrap.h"
#include "sample_summary.h"

namespace gpuslack {
namespace report {
namespace {

using testing_sample::sample_summary;
using testing_sample::sample_summary_with_gpu_timeline;

TEST(HealthSeriesJson, AlwaysPresentEvenWhenOff) {
  const std::string json = format_json(sample_summary());
  EXPECT_NE(std::string::npos, json.find("\"device_health\": {\n    \"status\": \"off\",\n    \"detail\": \"\",\n"
                                         "    \"devices\": []\n  },"))
      << json;
  EXPECT_NE(std::string::npos, json.find("\"series\": {\n    \"interval_s\": 1,\n    \"t0_s\": 0,\n    \"devices\": [],\n"
                                         "    \"reserved_bytes\": [],\n    \"allocated_bytes\": []\n  }"))
      << json;
}

TEST(HealthSeriesJson, RoundTripsByteForByte) {
  const Summary original = sample_summary_with_gpu_timeline();
  const std::string json = format_json(original);
  EXPECT_NE(std::string::npos, json.find("\"throttle_reasons\": [\"gpu_idle\", \"sw_thermal\"]")) << json;
  EXPECT_NE(std::string::npos, json.find("\"gpu_idle_share\": [0.5, 0.25, 1]")) << json;
  EXPECT_NE(std::string::npos, json.find("\"memory_used_bytes\": [1000000000, 2000000000, 2000000000]")) << json;
  Summary back;
  std::string error;
  ASSERT_TRUE(summary_from_json(json, &back, &error)) << error;
  EXPECT_EQ(json, format_json(back));
  EXPECT_EQ(format_text(original), format_text(back));
}

TEST(HealthSeriesJson, AnOlderFileWithoutThemReadsAsOff) {
  std::string json = format_json(sample_summary());
  const size_t at = json.find(",\n  \"device_health\"");
  ASSERT_NE(std::string::npos, at);
  json = json.substr(0, at) + "\n}\n";
  Summary back;
  std::string error;
  ASSERT_TRUE(summary_from_json(json, &back, &error)) << error;
  EXPECT_EQ(back.device_health.status, health::Status::kOff);
  EXPECT_TRUE(back.series.devices.empty());
}

TEST(HealthSeriesJson, AnUnknownStatusIsRefusedInOneLine) {
  std::string json = format_json(sample_summary());
  const std::string from = "\"status\": \"off\",\n    \"detail\"";
  json.replace(json.find(from), from.size(), "\"status\": \"hot\",\n    \"detail\"");
  Summary back;
  std::string error;
  EXPECT_FALSE(summary_from_json(json, &back, &error));
  EXPECT_NE(std::string::npos, error.find("device_health.status: expected one of measured, unavailable, off")) << error;
}

TEST(HealthSeriesText, OneLinePerThrottledDeviceAndOneWhenUnavailable) {
  const std::string text = format_text(sample_summary_with_gpu_timeline());
  EXPECT_NE(std::string::npos,
            text.find(wrap_line("gpuslack: ",  // wrapped at 80 columns
                                "GPU 1 throttled 40% of samples: sw_thermal; SM clock 92% of max; 86 \xC2\xB0""C max")))
      << text;
  Summary s = sample_summary();
  const std::string quiet = format_text(s);
  s.device_health.status = health::Status::kMeasured;  // measured, no throttling: no line
  s.device_health.devices.push_back(DeviceHealthRow());
  s.device_health.devices.back().samples = 5;
  EXPECT_EQ(quiet, format_text(s));
  s.device_health.status = health::Status::kUnavailable;
  s.device_health.detail = "libnvidia-ml.so.1 not found";
  const std::string text2 = format_text(s);
  EXPECT_NE(std::string::npos, text2.find("gpuslack: device health: not measured: libnvidia-ml.so.1 not found\n"))
      << text2;
  EXPECT_EQ(quiet.size() + std::string("gpuslack: device health: not measured: libnvidia-ml.so.1 not found\n").size(),
            text2.size());
}

}  // namespace
}  // namespace report
}  // namespace gpuslack

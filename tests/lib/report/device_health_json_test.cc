// The summary's "device_health" on its own (report/device_health_json.h):
// every member set, written, read back and written again the same. The
// whole summary's round trip, an older file and the text are
// device_health_test.cc's.
#include "report/device_health_json.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "report/json.h"
#include "report/json_fields.h"
#include "report/json_writer.h"
#include "section_round_trip.h"

namespace gpuslack {
namespace report {
namespace {

using detail::Fields;
using json_detail::Writer;
using testing_round_trip::document;
using testing_round_trip::expect_round_trip;
using testing_round_trip::parsed;

TEST(SectionsJson, DeviceHealthRoundTrips) {
  DeviceHealthSection h;
  h.status = health::Status::kMeasured;
  h.detail = "d";
  DeviceHealthRow r;
  r.device = 1;
  r.name = "H100";
  r.uuid = "GPU-1";
  r.nvml_handle = "mig";
  r.samples = 2;
  r.sm_clock_mhz_mean = 1500.5;
  r.sm_clock_mhz_min = 1200;
  r.sm_clock_max_mhz = 1980;
  r.clock_ratio_mean = 0.75;
  r.throttled_samples = 3;
  r.throttle_reasons = {"gpu_idle", "sw_thermal"};
  r.temperature_c_mean = 70.5;
  r.temperature_c_max = 86;
  r.power_w_mean = 350.25;
  r.power_limit_w = 700;
  r.memory_used_bytes_max = 4;
  h.devices.push_back(r);
  h.devices.push_back(DeviceHealthRow());
  const auto write = [](const DeviceHealthSection& x, Writer* w) {
    w->key("device_health");
    write_device_health(x, w);
  };
  const auto read = [](const Fields& f) {
    return read_device_health(Fields(*f.get("device_health"), "device_health"));
  };
  const std::string json = document([&](Writer* w) { write(h, w); });
  expect_round_trip<DeviceHealthSection>(json, read, write);
  const DeviceHealthSection back = read(Fields(parsed(json), ""));
  EXPECT_EQ(health::Status::kMeasured, back.status);
  EXPECT_EQ("d", back.detail);
  ASSERT_EQ(2u, back.devices.size());
  EXPECT_EQ("mig", back.devices[0].nvml_handle);
  EXPECT_EQ(3u, back.devices[0].throttled_samples);
  EXPECT_EQ(4u, back.devices[0].memory_used_bytes_max);
  EXPECT_EQ(std::vector<std::string>({"gpu_idle", "sw_thermal"}), back.devices[0].throttle_reasons);
}

}  // namespace
}  // namespace report
}  // namespace gpuslack

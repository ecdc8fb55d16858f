// The summary's "series" on its own (report/series_json.h): every member
// set, written, read back and written again the same. The whole summary's
// round trip is device_health_test.cc's; the builder is series_test.cc's.
#include "report/series_json.h"

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

TEST(SectionsJson, SeriesRoundTrips) {
  SeriesSection s;
  s.interval_s = 2;
  s.t0_s = 0.5;
  SeriesDevice d;
  d.device = 1;
  d.gpu_idle_share = {0.5, 0.25, 1};
  d.memory_used_bytes = {1000, 2000};
  d.sm_clock_ratio = {0.9};
  s.devices.push_back(d);
  s.devices.push_back(SeriesDevice());
  s.reserved_bytes = {3000, 4000};
  s.allocated_bytes = {5000};
  const auto write = [](const SeriesSection& x, Writer* w) {
    w->key("series");
    write_series(x, w);
  };
  const auto read = [](const Fields& f) { return read_series(Fields(*f.get("series"), "series")); };
  const std::string json = document([&](Writer* w) { write(s, w); });
  expect_round_trip<SeriesSection>(json, read, write);
  const SeriesSection back = read(Fields(parsed(json), ""));
  EXPECT_EQ(2, back.interval_s);
  EXPECT_EQ(0.5, back.t0_s);
  ASSERT_EQ(2u, back.devices.size());
  EXPECT_EQ(std::vector<double>({0.5, 0.25, 1}), back.devices[0].gpu_idle_share);
  EXPECT_EQ(std::vector<double>({1000, 2000}), back.devices[0].memory_used_bytes);
  EXPECT_EQ(std::vector<double>({3000, 4000}), back.reserved_bytes);
  EXPECT_EQ(std::vector<double>({5000}), back.allocated_bytes);
}

}  // namespace
}  // namespace report
}  // namespace gpuslack

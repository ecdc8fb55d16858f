// The summary's "device_health" and "series" (summary.h: DeviceHealthSection,
// SeriesSection; docs/summary.schema.json) as JSON, read back, and as text.
//
// The writers are templates over json.cc's Writer (its key/begin_*/end_*
// and number forms), so that json.cc only calls them; the readers follow
// summary_reader.h's rules (a missing member reads as its default, one of
// another type is Malformed). Round trip: write(read(write(s))) == write(s).
//
// Text: one line when NVML was unavailable, one per device that throttled
// (health::throttle_line), nothing otherwise.
//
// Thread safety: pure.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "report/json_fields.h"
#include "report/summary.h"

namespace gpuslack {
namespace report {

template <typename Writer>
void write_device_health(const DeviceHealthSection& h, Writer* w) {
  w->begin_object();
  w->key("status").string(health::status_name(h.status));
  w->key("detail").string(h.detail);
  w->key("devices").begin_array();
  for (const DeviceHealthRow& d : h.devices) {
    w->begin_object();
    w->key("device").integer(d.device);
    w->key("name").string(d.name);
    w->key("uuid").string(d.uuid);
    w->key("nvml_handle").string(d.nvml_handle);
    w->key("samples").unsigned_integer(d.samples);
    w->key("sm_clock_mhz_mean").seconds(d.sm_clock_mhz_mean);
    w->key("sm_clock_mhz_min").seconds(d.sm_clock_mhz_min);
    w->key("sm_clock_max_mhz").seconds(d.sm_clock_max_mhz);
    w->key("clock_ratio_mean").share(d.clock_ratio_mean);
    w->key("throttled_samples").unsigned_integer(d.throttled_samples);
    w->key("throttle_reasons").begin_array(true);
    for (const std::string& r : d.throttle_reasons) w->string(r);
    w->end_array();
    w->key("temperature_c_mean").seconds(d.temperature_c_mean);
    w->key("temperature_c_max").seconds(d.temperature_c_max);
    w->key("power_w_mean").seconds(d.power_w_mean);
    w->key("power_limit_w").seconds(d.power_limit_w);
    w->key("memory_used_bytes_max").unsigned_integer(d.memory_used_bytes_max);
    w->end_object();
  }
  w->end_array();
  w->end_object();
}

template <typename Writer>
void write_series(const SeriesSection& s, Writer* w) {
  const auto bytes = [w](const char* key, const std::vector<double>& v) {
    w->key(key).begin_array(true);
    for (double x : v) w->unsigned_integer(x > 0 ? static_cast<uint64_t>(std::llround(x)) : 0);
    w->end_array();
  };
  const auto shares = [w](const char* key, const std::vector<double>& v) {
    w->key(key).begin_array(true);
    for (double x : v) w->share(x);
    w->end_array();
  };
  w->begin_object();
  w->key("interval_s").seconds(s.interval_s);
  w->key("t0_s").seconds(s.t0_s);
  w->key("devices").begin_array();
  for (const SeriesDevice& d : s.devices) {
    w->begin_object();
    w->key("device").integer(d.device);
    shares("gpu_idle_share", d.gpu_idle_share);
    bytes("memory_used_bytes", d.memory_used_bytes);
    shares("sm_clock_ratio", d.sm_clock_ratio);
    w->end_object();
  }
  w->end_array();
  bytes("reserved_bytes", s.reserved_bytes);
  bytes("allocated_bytes", s.allocated_bytes);
  w->end_object();
}

DeviceHealthSection read_device_health(const detail::Fields& f);
SeriesSection read_series(const detail::Fields& f);

// The text summary's lines (without the "gpuslack: " prefix).
std::vector<std::string> device_health_lines(const DeviceHealthSection& h);

}  // namespace report
}  // namespace gpuslack

// See device_health_json.h.
#include "report/device_health_json.h"

#include <string>

#include "report/json.h"
#include "report/json_fields.h"
#include "report/json_reader.h"
#include "report/json_writer.h"

namespace gpuslack {
namespace report {
namespace {

using detail::Fields;

health::Status status_from(const Fields& f) {
  const std::string key = f.text("status");
  if (key.empty()) return health::Status::kOff;  // an older writer
  for (health::Status s : {health::Status::kOff, health::Status::kUnavailable, health::Status::kMeasured})
    if (key == health::status_name(s)) return s;
  f.bad("status", "one of measured, unavailable, off");
}

}  // namespace

void write_device_health(const DeviceHealthSection& h, json_detail::Writer* w) {
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

DeviceHealthSection read_device_health(const Fields& f) {
  DeviceHealthSection h;
  h.status = status_from(f);
  h.detail = f.text("detail");
  f.each("devices", [&](const JsonValue& item, const std::string& at) {
    Fields d(item, at);
    DeviceHealthRow r;
    r.device = d.whole("device");
    r.name = d.text("name");
    r.uuid = d.text("uuid");
    if (d.get("nvml_handle")) r.nvml_handle = d.text("nvml_handle");
    r.samples = d.count("samples");
    r.sm_clock_mhz_mean = d.number("sm_clock_mhz_mean");
    r.sm_clock_mhz_min = d.number("sm_clock_mhz_min");
    r.sm_clock_max_mhz = d.number("sm_clock_max_mhz");
    r.clock_ratio_mean = d.number("clock_ratio_mean");
    r.throttled_samples = d.count("throttled_samples");
    r.throttle_reasons = d.strings("throttle_reasons");
    r.temperature_c_mean = d.number("temperature_c_mean");
    r.temperature_c_max = d.number("temperature_c_max");
    r.power_w_mean = d.number("power_w_mean");
    r.power_limit_w = d.number("power_limit_w");
    r.memory_used_bytes_max = d.count("memory_used_bytes_max");
    h.devices.push_back(std::move(r));
  });
  return h;
}

}  // namespace report
}  // namespace gpuslack

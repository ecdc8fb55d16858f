#include "report/health_series.h"

namespace gpuslack {
namespace report {
namespace {

using detail::Fields;
using detail::Malformed;

health::Status status_from(const Fields& f) {
  const std::string key = f.text("status");
  if (key.empty()) return health::Status::kOff;  // an older writer
  for (health::Status s : {health::Status::kOff, health::Status::kUnavailable, health::Status::kMeasured})
    if (key == health::status_name(s)) return s;
  f.bad("status", "one of measured, unavailable, off");
}

std::vector<double> numbers(const Fields& f, const char* key) {
  std::vector<double> out;
  f.each(key, [&](const JsonValue& item, const std::string& at) {
    double v = 0;
    if (!item.to_double(&v)) throw Malformed{at + ": expected a finite number"};
    out.push_back(v);
  });
  return out;
}

}  // namespace

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

SeriesSection read_series(const Fields& f) {
  SeriesSection s;
  if (f.get("interval_s")) s.interval_s = f.number("interval_s");
  s.t0_s = f.number("t0_s");
  f.each("devices", [&](const JsonValue& item, const std::string& at) {
    Fields d(item, at);
    SeriesDevice r;
    r.device = d.whole("device");
    r.gpu_idle_share = numbers(d, "gpu_idle_share");
    r.memory_used_bytes = numbers(d, "memory_used_bytes");
    r.sm_clock_ratio = numbers(d, "sm_clock_ratio");
    s.devices.push_back(std::move(r));
  });
  s.reserved_bytes = numbers(f, "reserved_bytes");
  s.allocated_bytes = numbers(f, "allocated_bytes");
  return s;
}

std::vector<std::string> device_health_lines(const DeviceHealthSection& h) {
  std::vector<std::string> out;
  if (h.status == health::Status::kUnavailable) {
    out.push_back("device health: not measured: " + h.detail);
    return out;
  }
  for (const DeviceHealthRow& d : h.devices) {
    std::string text = health::throttle_line(health_figures(d));
    if (!text.empty()) out.push_back(text);
  }
  return out;
}

}  // namespace report
}  // namespace gpuslack

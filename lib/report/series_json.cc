// See series_json.h.
#include "report/series_json.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "report/json.h"
#include "report/json_fields.h"
#include "report/json_reader.h"
#include "report/json_writer.h"

namespace gpuslack {
namespace report {
namespace {

using detail::Fields;
using detail::Malformed;

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

void write_series(const SeriesSection& s, json_detail::Writer* w) {
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

}  // namespace report
}  // namespace gpuslack

// See units.h.
#include "report/units.h"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace gpuslack {
namespace report {
namespace {

std::string printed(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

std::string printed(const char* format, double v, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v, unit);
  return buf;
}

}  // namespace

std::string seconds_text(double s) {
  if (!std::isfinite(s)) return "-";
  if (s < 0) return "-" + seconds_text(-s);
  if (s == 0) return "0";
  if (s < 1e-6) return printed("%.0f ns", s * 1e9);
  if (s < 1e-3) return printed("%.1f us", s * 1e6);
  if (s < 1) return printed("%.1f ms", s * 1e3);
  return printed("%.2f s", s);
}

std::string percent_text(double share) {
  if (!std::isfinite(share)) return "-";
  return printed("%.1f%%", share * 100);
}

std::string bytes_text(double bytes) {
  if (!std::isfinite(bytes) || bytes < 0) return "-";
  if (bytes < 1024) return printed("%.0f B", bytes);
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = bytes / 1024;
  int unit = 0;
  while (v >= 1024 && unit < 5) {
    v /= 1024;
    ++unit;
  }
  return printed("%.1f %s", v, kUnits[unit]);
}

std::string gbps_text(double gbps) {
  if (!std::isfinite(gbps) || gbps <= 0) return "-";
  return printed("%.2f", gbps);
}

std::string size_bucket_text(double exponent) {
  if (!std::isfinite(exponent) || exponent < 0 || exponent > 62) return "-";
  return ">=" + bytes_text(std::ldexp(1.0, static_cast<int>(exponent)));
}

std::string link_gbps_text(double gbps) {
  if (!std::isfinite(gbps) || gbps <= 0) return "unknown";
  return printed("%.4g GB/s", gbps);
}

std::string link_gbits_text(double gbit_s) {
  if (!std::isfinite(gbit_s) || gbit_s <= 0) return "unknown";
  return printed("%.4g Gb/s", gbit_s);
}

std::string waves_text(double waves) {
  if (!std::isfinite(waves) || waves < 0) return "-";
  return printed("%.2f", waves);
}

bool format_figure(const char* unit, double value, std::string* out) {
  if (unit == nullptr) return false;
  if (std::strcmp(unit, "seconds") == 0) *out = seconds_text(value);
  else if (std::strcmp(unit, "percent") == 0) *out = percent_text(value);
  else if (std::strcmp(unit, "bytes") == 0) *out = bytes_text(value);
  else if (std::strcmp(unit, "gbps") == 0) *out = gbps_text(value);
  else if (std::strcmp(unit, "size_bucket") == 0) *out = size_bucket_text(value);
  else if (std::strcmp(unit, "link_gbps") == 0) *out = link_gbps_text(value);
  else if (std::strcmp(unit, "link_gbits") == 0) *out = link_gbits_text(value);
  else if (std::strcmp(unit, "waves") == 0) *out = waves_text(value);
  else return false;
  return true;
}

}  // namespace report
}  // namespace gpuslack

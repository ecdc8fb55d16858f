#include "health/device_health.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gpuslack {
namespace health {
namespace {

// nvmlClocksEventReason* bits, in order (nvml.h).
constexpr const char* kReasonNames[] = {"gpu_idle",   "applications_clocks", "sw_power_cap",
                                        "hw_slowdown", "sync_boost",          "sw_thermal",
                                        "hw_thermal",  "hw_power_brake",      "display_clocks"};
constexpr int kReasonCount = sizeof(kReasonNames) / sizeof(kReasonNames[0]);
// gpu_idle (bit 0) and applications_clocks (bit 1) are not throttling.
constexpr uint64_t kNotThrottling = 0x3;
constexpr uint64_t kKnown = (1ull << kReasonCount) - 1;

}  // namespace

std::vector<std::string> reason_names(uint64_t reasons) {
  std::vector<std::string> out;
  for (int i = 0; i < kReasonCount; ++i)
    if (reasons & (1ull << i)) out.emplace_back(kReasonNames[i]);
  return out;
}

bool is_throttled(uint64_t reasons) { return (reasons & kKnown & ~kNotThrottling) != 0; }

std::vector<std::string> throttling_names(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& n : names)
    if (n != kReasonNames[0] && n != kReasonNames[1]) out.push_back(n);
  return out;
}

void DeviceAggregate::add(const Reading& r) {
  ++samples_;
  if (r.has_clock) {
    const double mhz = r.sm_mhz;
    clock_min_ = clock_n_ == 0 ? mhz : std::min(clock_min_, mhz);
    clock_sum_ += mhz;
    ++clock_n_;
    if (r.sm_max_mhz > 0) {
      clock_max_ = r.sm_max_mhz;
      const double ratio = std::min(1.0, mhz / r.sm_max_mhz);
      ratio_sum_ += ratio;
      clock_ratio_.add(r.t_s, ratio);
    } else {
      ratio_sum_ += 1.0;  // no maximum: nothing to compare with
    }
  }
  if (r.has_reasons) {
    reasons_seen_ |= r.reasons & kKnown;
    if (is_throttled(r.reasons)) ++throttled_;
  }
  if (r.has_temperature) {
    temperature_sum_ += r.temperature_c;
    temperature_max_ = temperature_n_ == 0 ? r.temperature_c : std::max<double>(temperature_max_, r.temperature_c);
    ++temperature_n_;
  }
  if (r.has_power) {
    power_sum_w_ += r.power_mw / 1000.0;
    ++power_n_;
    if (r.power_limit_mw) power_limit_w_ = r.power_limit_mw / 1000.0;
  }
  if (r.has_memory) {
    memory_max_ = std::max(memory_max_, r.memory_used_bytes);
    memory_used_.add(r.t_s, static_cast<double>(r.memory_used_bytes));
  }
}

DeviceHealth DeviceAggregate::row(int device, const std::string& name, const std::string& uuid) const {
  DeviceHealth d;
  d.device = device;
  d.name = name;
  d.uuid = uuid;
  d.samples = samples_;
  if (clock_n_) {
    d.sm_clock_mhz_mean = clock_sum_ / clock_n_;
    d.sm_clock_mhz_min = clock_min_;
    d.clock_ratio_mean = ratio_sum_ / clock_n_;
  }
  d.sm_clock_max_mhz = clock_max_;
  d.throttled_samples = throttled_;
  d.throttle_reasons = reason_names(reasons_seen_);
  if (temperature_n_) {
    d.temperature_c_mean = temperature_sum_ / temperature_n_;
    d.temperature_c_max = temperature_max_;
  }
  if (power_n_) d.power_w_mean = power_sum_w_ / power_n_;
  d.power_limit_w = power_limit_w_;
  d.memory_used_bytes_max = memory_max_;
  d.memory_used = memory_used_;
  d.clock_ratio = clock_ratio_;
  return d;
}

std::string throttle_line(const DeviceHealth& d) {
  if (d.throttled_samples == 0 || d.samples == 0) return std::string();
  std::string reasons;
  for (const std::string& n : throttling_names(d.throttle_reasons)) reasons += (reasons.empty() ? "" : ", ") + n;
  char line[256];
  int n = std::snprintf(line, sizeof(line), "GPU %d throttled %.0f%% of samples: %s", d.device,
                        100.0 * static_cast<double>(d.throttled_samples) / static_cast<double>(d.samples),
                        reasons.c_str());
  std::string out(line, static_cast<size_t>(std::max(0, std::min(n, static_cast<int>(sizeof(line)) - 1))));
  if (d.clock_ratio_mean > 0) {
    std::snprintf(line, sizeof(line), "; SM clock %.0f%% of max", 100.0 * d.clock_ratio_mean);
    out += line;
  }
  if (d.temperature_c_max > 0) {
    std::snprintf(line, sizeof(line), "; %.0f \xC2\xB0""C max", d.temperature_c_max);
    out += line;
  }
  return out;
}

}  // namespace health
}  // namespace gpuslack

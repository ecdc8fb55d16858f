// Device health: one device's NVML readings over the run (SM clock against
// its maximum, clock event reasons, temperature, power, memory used), folded
// into the figures the summary's "device_health" prints
// (docs/summary.schema.json) and two of its "series".
//
// A GPU that throttles makes its rank the straggler of a synchronous job:
// the job report (python -m gpuslack merge) ties the two together. The
// readings come from the sampler (health/sampler.h); this file is the pure
// part: no NVML, no clock, no lock.
//
// Throttled: a sample whose clock event reasons hold any bit but gpu_idle
// and applications_clocks (nvmlClocksEventReason* in nvml.h): those two say
// the clock is where the user or an idle GPU put it, not that the GPU was
// held back.
//
// Thread safety: none (the sampler serializes). DeviceAggregate::add
// allocates nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/time_buckets.h"

namespace gpuslack {
namespace health {

// One reading of one device; a figure NVML did not answer has its has_ flag
// false.
struct Reading {
  double t_s = 0;  // seconds after the session's start
  bool has_clock = false;
  unsigned sm_mhz = 0, sm_max_mhz = 0;
  bool has_reasons = false;
  uint64_t reasons = 0;  // nvmlClocksEventReason* bits
  bool has_temperature = false;
  unsigned temperature_c = 0;
  bool has_power = false;
  unsigned power_mw = 0, power_limit_mw = 0;  // limit 0: not answered
  bool has_memory = false;
  uint64_t memory_used_bytes = 0;
};

// The summary's row of one device (schema: device_health.devices[]).
struct DeviceHealth {
  int device = 0;  // CUDA ordinal in this process
  std::string name, uuid;
  // Which NVML handle was read (health/sampler.cc, Note [A MIG device's own
  // handle]): "gpu"; "mig": a MIG instance's own (memory; clocks and
  // temperature its GPU's; no power); "mig_parent": its GPU's, every
  // tenant's, the instance's own not found.
  std::string nvml_handle = "gpu";
  uint64_t samples = 0;
  double sm_clock_mhz_mean = 0, sm_clock_mhz_min = 0, sm_clock_max_mhz = 0;
  double clock_ratio_mean = 0;  // mean of sm clock / max; 0 when no clock was read
  uint64_t throttled_samples = 0;
  std::vector<std::string> throttle_reasons;  // every reason seen (idle and app clocks too), bit order
  double temperature_c_mean = 0, temperature_c_max = 0;
  double power_w_mean = 0, power_limit_w = 0;
  uint64_t memory_used_bytes_max = 0;
  // The series (schema: series.devices[]): memory used at the end of each
  // bucket, and the mean SM clock / max.
  TimeBuckets memory_used{TimeBuckets::Reduce::kLast};
  TimeBuckets clock_ratio{TimeBuckets::Reduce::kMean};
};

// The reasons' names, in bit order (gpu_idle, applications_clocks,
// sw_power_cap, hw_slowdown, sync_boost, sw_thermal, hw_thermal,
// hw_power_brake, display_clocks); unknown bits are left out.
std::vector<std::string> reason_names(uint64_t reasons);
// Whether `reasons` holds a throttling bit (anything but gpu_idle and
// applications_clocks).
bool is_throttled(uint64_t reasons);
// Only the throttling reasons of a list of names.
std::vector<std::string> throttling_names(const std::vector<std::string>& names);

class DeviceAggregate {
 public:
  void add(const Reading& r);
  // The row, with `device`, `name` and `uuid` as given.
  DeviceHealth row(int device, const std::string& name, const std::string& uuid) const;

 private:
  uint64_t samples_ = 0;
  uint64_t clock_n_ = 0;
  double clock_sum_ = 0, clock_min_ = 0, ratio_sum_ = 0;
  unsigned clock_max_ = 0;
  uint64_t throttled_ = 0;
  uint64_t reasons_seen_ = 0;
  uint64_t temperature_n_ = 0;
  double temperature_sum_ = 0, temperature_max_ = 0;
  uint64_t power_n_ = 0;
  double power_sum_w_ = 0, power_limit_w_ = 0;
  uint64_t memory_max_ = 0;
  TimeBuckets memory_used_{TimeBuckets::Reduce::kLast};
  TimeBuckets clock_ratio_{TimeBuckets::Reduce::kMean};
};

// The text summary's line for a device that throttled, "" for one that did
// not: "GPU 0 throttled 40% of samples: sw_thermal; SM clock 85% of max;
// 86 °C max".
std::string throttle_line(const DeviceHealth& d);

}  // namespace health
}  // namespace gpuslack

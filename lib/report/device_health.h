// The summary's device health section ("device_health"): NVML's view of
// each device (health/sampler.h), each row copied from health::DeviceHealth
// (DeviceHealthRow, Note [Counters copied at the boundary] in
// report/feature_counters.h). Its report-side type, its builder and its
// text; the JSON is device_health_json.h's.
//
// Text: one line when NVML was unavailable, one per device that throttled
// (health::throttle_line), nothing otherwise.
//
// Thread safety: plain data; pure functions.
#pragma once

#include <string>
#include <vector>

#include "health/sampler.h"
#include "report/feature_counters.h"

namespace gpuslack {
namespace report {

struct DeviceHealthSection {
  health::Status status = health::Status::kOff;
  std::string detail;  // why unavailable
  std::vector<DeviceHealthRow> devices;
};

// From the session's health::snapshot() (RunInfo::device_health).
DeviceHealthSection build_device_health(const health::Snapshot& snapshot);

// The text summary's lines (without the "gpuslack: " prefix).
std::vector<std::string> device_health_lines(const DeviceHealthSection& h);

}  // namespace report
}  // namespace gpuslack

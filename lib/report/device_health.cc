// See device_health.h.
#include "report/device_health.h"

namespace gpuslack {
namespace report {

DeviceHealthSection build_device_health(const health::Snapshot& snapshot) {
  DeviceHealthSection h;
  h.status = snapshot.status;
  h.detail = snapshot.detail;
  for (const health::DeviceHealth& d : snapshot.devices) h.devices.push_back(device_health_row(d));
  return h;
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

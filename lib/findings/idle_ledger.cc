// See idle_ledger.h (Note [Each idle second charged once]).
#include "findings/idle_ledger.h"

#include <algorithm>

namespace gpuslack {
namespace findings {

IdleLedger::IdleLedger(const report::Summary& s) {
  measured_ = s.gpu_timeline.status == timeline::Status::kMeasured && !s.gpu_timeline.devices.empty();
  if (!measured_) return;
  for (const report::GpuDeviceRow& d : s.gpu_timeline.devices) {
    std::array<double, timeline::kIdleCount> row{};
    for (int i = 0; i < timeline::kIdleCount; ++i) row[i] = std::max(0.0, d.idle_by[i]);
    left_.push_back(row);
  }
}

double IdleLedger::left(size_t index, timeline::Idle cause) const {
  return index < left_.size() ? left_[index][static_cast<int>(cause)] : 0;
}

double IdleLedger::left(timeline::Idle cause) const {
  if (!measured_) return -1;
  double total = 0;
  for (size_t i = 0; i < left_.size(); ++i) total += left(i, cause);
  return total;
}

double IdleLedger::charge(size_t index, timeline::Idle cause, double seconds) {
  if (index >= left_.size() || seconds <= 0) return 0;
  double& left = left_[index][static_cast<int>(cause)];
  const double charged = std::min(left, seconds);
  left -= charged;
  return charged;
}

double IdleLedger::charge_all(timeline::Idle cause) {
  if (!measured_) return -1;
  double total = 0;
  for (size_t i = 0; i < left_.size(); ++i) total += charge(i, cause, left(i, cause));
  return total;
}

}  // namespace findings
}  // namespace gpuslack

#include "stage/copy_chooser.h"

namespace gpuslack {
namespace stage {

int CopyChooser::class_of(size_t bytes) {
  int c = bytes ? 63 - __builtin_clzll(bytes) : 0;
  return c < kClasses ? c : kClasses - 1;
}

CopyWay CopyChooser::pick(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  Class& c = classes_[class_of(bytes)];
  uint64_t n = c.calls++;
  int nat = static_cast<int>(CopyWay::kNative), stg = static_cast<int>(CopyWay::kStaged);
  if (c.samples[nat] < kProbes || c.samples[stg] < kProbes)
    return c.samples[nat] <= c.samples[stg] ? CopyWay::kNative : CopyWay::kStaged;
  CopyWay best = c.ns_per_byte[stg] < c.ns_per_byte[nat] ? CopyWay::kStaged : CopyWay::kNative;
  if (n % kReprobeEvery == kReprobeEvery - 1) return best == CopyWay::kStaged ? CopyWay::kNative : CopyWay::kStaged;
  return best;
}

void CopyChooser::record(CopyWay way, size_t bytes, uint64_t ns) {
  if (bytes == 0) return;
  double v = static_cast<double>(ns) / static_cast<double>(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  Class& c = classes_[class_of(bytes)];
  int w = static_cast<int>(way);
  c.ns_per_byte[w] = c.samples[w] == 0 ? v : 0.75 * c.ns_per_byte[w] + 0.25 * v;
  ++c.samples[w];
}

double CopyChooser::estimate_ns(CopyWay way, size_t bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Class& c = classes_[class_of(bytes)];
  int w = static_cast<int>(way);
  return c.samples[w] ? c.ns_per_byte[w] * static_cast<double>(bytes) : 0;
}

void CopyChooser::while_locked(absl::FunctionRef<void()> during) {
  std::lock_guard<std::mutex> lock(mu_);
  during();
}

}  // namespace stage
}  // namespace gpuslack

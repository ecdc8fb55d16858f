// The kernels by GPU time (kernel_table.h).
#include "timeline/kernel_table.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>

namespace gpuslack {
namespace timeline {

std::string demangled_kernel_name(const char* name) {
  if (name == nullptr) return "(unnamed kernel)";
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (d == nullptr || status != 0) {
    std::free(d);
    return name;
  }
  std::string out(d);
  std::free(d);
  return out;
}

void KernelTable::fill(size_t n, double tick_seconds, std::vector<KernelRow>* out) const {
  out->clear();
  absl::flat_hash_map<std::string, Entry> merged;
  for (const auto& [name, e] : by_name_) {
    Entry& m = merged[demangled_kernel_name(name)];
    m.count += e.count;
    m.ticks += e.ticks;
  }
  std::vector<std::pair<std::string, Entry>> rows(merged.begin(), merged.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.ticks != b.second.ticks ? a.second.ticks > b.second.ticks : a.first < b.first;
  });
  if (rows.size() > n) rows.resize(n);
  for (auto& [name, e] : rows) {
    KernelRow row;
    row.name = std::move(name);
    row.count = e.count;
    row.total_s = static_cast<double>(e.ticks) * tick_seconds;
    row.mean_s = e.count > 0 ? row.total_s / static_cast<double>(e.count) : 0;
    out->push_back(std::move(row));
  }
}

}  // namespace timeline
}  // namespace gpuslack

// The kernels one device ran, by GPU time (timeline.h's top_kernels).
//
// add() counts a kernel under its name's address: CUPTI's name strings live
// as long as the process (gpu_activity.h), so one hash lookup of a pointer
// per record. fill() merges the entries whose names demangle alike (one
// kernel may reach us under several addresses), demangled with
// abi::__cxa_demangle (a name that does not demangle is kept as given;
// nullptr reads "(unnamed kernel)"), and keeps the largest by total time.
//
// Every kernel record counts, whatever window it falls in: this table is
// about what the GPU ran, not when.
//
// Thread safety: none; owned by one device's analysis.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/absl_containers.h"
#include "timeline/timeline.h"

namespace gpuslack {
namespace timeline {

// A name as a person reads it: demangled when it is a mangled C++ name.
std::string demangled_kernel_name(const char* name);

class KernelTable {
 public:
  void add(const char* name, uint64_t duration_ticks) {
    Entry& e = by_name_[name];
    ++e.count;
    e.ticks += duration_ticks;
  }
  size_t distinct_names() const { return by_name_.size(); }
  // Kernel records counted, all names.
  uint64_t count() const {
    uint64_t n = 0;
    for (const auto& entry : by_name_) n += entry.second.count;
    return n;
  }
  // The `n` kernels with the most GPU time, most first (ties by name).
  void fill(size_t n, double tick_seconds, std::vector<KernelRow>* out) const;

 private:
  struct Entry {
    uint64_t count = 0;
    uint64_t ticks = 0;
  };
  absl::flat_hash_map<const char*, Entry> by_name_;
};

}  // namespace timeline
}  // namespace gpuslack

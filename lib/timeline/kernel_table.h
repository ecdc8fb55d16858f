// The kernels one device ran, by GPU time (timeline.h's top_kernels), and
// how their launches filled the device (KernelLaunches).
//
// add() counts a kernel under its name's address: CUPTI's name strings live
// as long as the process (gpu_activity.h), so one hash lookup of a pointer
// per record. fill() merges the entries whose names demangle alike (one
// kernel may reach us under several addresses), demangled with
// abi::__cxa_demangle (a name that does not demangle is kept as given;
// nullptr reads "(unnamed kernel)"), and keeps the largest by total time.
//
// Launch shapes: each name keeps its distinct shapes (kMaxShapes at most;
// later new shapes count as the name's time but not in its shape figures),
// the last one matched first: a name launches in one or a few shapes, so a
// record costs a compare. A shape's theoretical blocks per SM
// (occupancy.h) is computed once, when it is first seen, from the limits
// set_limits gave; waves and efficiency at fill().
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
#include "timeline/occupancy.h"
#include "timeline/timeline.h"

namespace gpuslack {
namespace timeline {

// A name as a person reads it: demangled when it is a mangled C++ name.
std::string demangled_kernel_name(const char* name);

class KernelTable {
 public:
  static constexpr size_t kMaxShapes = 32;  // per name address
  static constexpr size_t kTopShapes = 4;   // per row of fill()

  // The device's limits (before the first add: shapes seen earlier keep
  // blocks_per_sm 0).
  void set_limits(const DeviceLimits& limits) { limits_ = limits; }
  const DeviceLimits& limits() const { return limits_; }

  void add(const char* name, uint64_t duration_ticks, const LaunchShape& shape = LaunchShape{}) {
    Entry& e = by_name_[name];
    ++e.count;
    e.ticks += duration_ticks;
    if (shape.blocks == 0) return;
    if (e.last < e.shapes.size() && e.shapes[e.last].shape == shape) {
      ++e.shapes[e.last].count;
      e.shapes[e.last].ticks += duration_ticks;
      return;
    }
    add_shape(&e, duration_ticks, shape);
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
  struct Shape {
    LaunchShape shape;
    int blocks_per_sm = 0;
    uint64_t count = 0;
    uint64_t ticks = 0;
  };
  struct Entry {
    uint64_t count = 0;
    uint64_t ticks = 0;
    size_t last = 0;  // the shape matched last
    std::vector<Shape> shapes;
  };
  void add_shape(Entry* e, uint64_t duration_ticks, const LaunchShape& shape);

  DeviceLimits limits_;
  absl::flat_hash_map<const char*, Entry> by_name_;
};

}  // namespace timeline
}  // namespace gpuslack

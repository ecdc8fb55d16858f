// The summary's allocator section: "allocator", one row per device the VMM
// allocator served (allocator:vmm), its counters copied from
// alloc::DeviceStats (Note [Counters copied at the boundary] in
// report/feature_counters.h), and "allocator_status", what the
// configuration selected and where it is off. Its report-side types, its
// builder and its text; the JSON is allocator_json.h's.
//
// Thread safety: plain data; pure functions.
#pragma once

#include <string>
#include <vector>

#include "alloc/device_stats.h"
#include "alloc/timeline.h"
#include "report/feature_counters.h"

namespace gpuslack {
namespace report {

// The VMM allocator of one device, plus utilization = peak allocated /
// peak reserved.
struct AllocatorRow {
  int device = 0;
  AllocatorCounters stats;  // frees: each a device sync cudaFree would have done
  double utilization = 0;
  AllocatorSamples timeline;  // allocated/reserved over the run
};

// What the configuration selected (allocator: native or vmm) and, under
// vmm, the devices it is off on and why (alloc::refusals(): Note [Saying
// the allocator is off] in alloc/process_allocators.h).
struct AllocatorOff {
  int device = 0;
  std::string why;
};
struct AllocatorStatus {
  std::string selected = "native";
  std::vector<AllocatorOff> off;
};

// One device's VMM allocator as the session read it, in the feature's own
// types (RunInfo::allocator): build_allocator copies them into an
// AllocatorRow.
struct AllocatorRun {
  int device = 0;
  alloc::DeviceStats stats;
  alloc::Timeline::Samples timeline;  // its origin_ticks places it in the series
};

std::vector<AllocatorRow> build_allocator(const std::vector<AllocatorRun>& runs);

// The text: one line per device it is off on, one per device it served
// (and what may synchronize the device, what the driver refused).
void allocator_text(const std::vector<AllocatorRow>& rows, const AllocatorStatus& status, std::string* out);

}  // namespace report
}  // namespace gpuslack

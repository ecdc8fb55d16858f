// One GPU operation as the timeline sees it: what CUPTI's activity records
// become once decoded (timeline/cupti_session.h) and the analysis consumes
// (timeline/device_analysis.h). Times are the host's clock ticks
// (base/clock.h), already aligned from CUPTI's timestamps, so that GPU
// intervals and host intervals (ledger/host_activity.h) compare directly.
//
// Plain data; no thread safety of its own.
#pragma once

#include <cstdint>

#include "timeline/occupancy.h"
#include "timeline/timeline.h"

namespace gpuslack {
namespace timeline {

struct GpuActivity {
  uint64_t start_ticks = 0;
  uint64_t end_ticks = 0;      // >= start_ticks
  int device = 0;
  Busy kind = Busy::kCompute;  // NCCL kernels: kCommunication
  // Kernels: the name as CUPTI gives it (mangled), owned by CUPTI and valid
  // for the life of the process, so that it can be counted by address;
  // nullptr for copies and memsets.
  const char* name = nullptr;
  // Kernels: the launch's shape from the record (grid, block, registers,
  // static + dynamic shared memory); blocks 0 for copies, memsets and
  // records that carry no grid.
  LaunchShape shape;
};

}  // namespace timeline
}  // namespace gpuslack

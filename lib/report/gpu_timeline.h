// The summary's GPU timeline section (summary.h, GpuTimelineSection): the
// timeline's snapshot with each idle call site symbolized and the top
// `top_call_sites` of them kept. Report time only.
//
// Thread safety: a pure function of its inputs (symbolizing takes the
// loader's lock).
#pragma once

#include "report/summary.h"
#include "timeline/timeline.h"

namespace gpuslack {
namespace report {

GpuTimelineSection build_gpu_timeline(const timeline::Snapshot& snapshot, int top_call_sites);

namespace detail {
class Fields;
}
// The section as json.cc wrote it (throws detail::Malformed, json_fields.h).
GpuTimelineSection read_gpu_timeline(const detail::Fields& f);

// The idle cause an IdleSiteRow's call falls under (its category's).
timeline::Idle idle_cause_of(Category category);

}  // namespace report
}  // namespace gpuslack

// The summary's collectives section (summary.h, CollectivesSection), built
// from the collectives ledger's snapshot and the run's facts. Report time
// only: allocates and reads the environment (the NCCL_* tuning variables,
// nccl_env.h).
//
// The bandwidth check: a row of 64 MiB or more per call with timed calls
// whose busbw is below half of expected_busbw_gbps gets one warning line,
// "all-reduce ran at X GB/s bus bandwidth, expected Y" (per operation, the
// largest such bucket). No check when expected_busbw_gbps is 0. The advice
// is the collective_bandwidth finding (findings/collective_rules.cc), over
// the same rows with the same threshold and also from the fabric knob; the
// warning stays as the section's raw flag, which the job report merges.
//
// Thread safety: a pure function of its inputs and the environment.
#pragma once

#include "report/summary.h"

namespace gpuslack {
namespace report {

inline constexpr int kLargeBucket = 26;  // 64 MiB

CollectivesSection build_collectives(const RunInfo& run, double tick_s, double wall_s);

}  // namespace report
}  // namespace gpuslack

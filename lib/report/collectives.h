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
// Note [Captured collectives]: a call issued into a CUDA graph being
// captured runs when the graph is launched, later and maybe many times;
// gpuslack records no event around it and never times it (captured). A row
// whose calls were mostly captured (captured > count / 2: a benchmark
// launching its collectives from graphs, issue 17: 80 of 86 untimed, algbw
// 0.70 GB/s from the warm-ups against ~3.2 measured by the benchmark) gives
// no algbw/busbw (mostly_captured; 0 in the JSON, "-" in the text, with
// "N of M calls captured in CUDA graphs, not timed"), and is left out of
// the bandwidth check: the few uncaptured calls, often warm-ups, do not
// stand for it.
//
// Thread safety: a pure function of its inputs and the environment.
#pragma once

#include "report/summary.h"

namespace gpuslack {
namespace report {

inline constexpr int kLargeBucket = 26;  // 64 MiB

CollectivesSection build_collectives(const RunInfo& run, double tick_s, double wall_s);

// NCCL's choices from its profiler plugin (algorithms.cc): the section's
// algorithms, profiler status and counts, and on each row the algorithm and
// protocol of most of its calls (the records of its op and size bucket on
// communicators of its size), mean channels and nodes. build_collectives
// calls it.
void add_algorithms(const RunInfo& run, CollectivesSection* c);

}  // namespace report
}  // namespace gpuslack

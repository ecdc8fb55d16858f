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
// Note [Estimated GPU time]: one call in timing_every is timed, so the
// collectives' GPU time is an estimate, made per row (size bucket) from
// what was timed there: the timed calls count for what they measured, and
// each uncaptured call not timed counts as a typical timed call of the row,
// the mean of the timed calls less the slow outliers, those in a gpu_ns
// bucket three or more above the median's (every call past 8x the row's
// median, none under 4x). The plain mean scaled to every call let a few
// slow timed calls stand for the many untimed ones: nccl-tests-like runs on
// two devices read 2.0-2.5x wall time, 4.0x for a 16 MiB send/recv run,
// with p99 up to 8x p50 (issue 26; the first call of an op, the one a
// connection is set up in, is always timed). The median alone would drop a
// row's real spread (calls 2-4x apart as messages queue behind others);
// the mean of the rest keeps it, and the outliers still count once, as
// measured. Per-bucket sums (CollectiveFigures::gpu_ns_sums) make the mean
// exact, not the histogram's sqrt(2). The section's total (and with it
// each row, scaled alike) never passes gpu_estimate_devices × wall time,
// the devices being those of this process's communicators: more would be
// more GPU time than the devices had. The JSON and the text say it is an
// estimate and from how many timed calls.
//
// Note [Bandwidth without the outliers]: a row's algbw and busbw leave out
// the same slow outliers, their share of the bandwidth time and of the
// timed calls and bytes, as nccl-tests leaves out its warm-up calls. A first
// call that waits for the slowest rank to start (473 ms against 1.1 ms a
// call in issue 26's field report, 8 processes on two cores) otherwise
// reads as a link running at a fifth of its rate, and collective_bandwidth
// fires on a healthy fabric.
//
// Thread safety: a pure function of its inputs and the environment.
#pragma once

#include "report/summary.h"

namespace gpuslack {
namespace report {

inline constexpr int kLargeBucket = 26;  // 64 MiB

CollectivesSection build_collectives(const RunInfo& run, double tick_s, double wall_s);

// A row's GPU time over all its uncaptured calls, before the section's cap
// (Note [Estimated GPU time]); 0 when none was timed.
double estimate_gpu_s(const nccl::CollectiveFigures& f);
// One timed call's mean GPU time less the slow outliers (the same rule): a
// call as it usually runs, without a first call's setup or a late peer's
// wait; 0 when none was timed.
double typical_call_s(const nccl::CollectiveFigures& f);

// NCCL's choices from its profiler plugin (algorithms.cc): the section's
// algorithms, profiler status and counts, and on each row the algorithm and
// protocol of most of its calls (the records of its op and size bucket on
// communicators of its size), mean channels and nodes. build_collectives
// calls it.
void add_algorithms(const RunInfo& run, CollectivesSection* c);

}  // namespace report
}  // namespace gpuslack

// The summary's collectives section (CollectivesSection): its report-side
// types, its builder (from the collectives ledger's snapshot and the run's
// facts) and its text; the JSON is collectives_json.h's. Report time
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

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "nccl/collectives.h"

namespace gpuslack {
namespace report {

struct RunInfo;

// One (operation, datatype, log2 size bucket, communicator size) of NCCL
// calls. GPU figures come from the timed calls only (collective_timing_every);
// algbw = their bytes / the time of the timed calls and groups they were in,
// busbw = their bus bytes (nccl::bus_bytes: nccl-tests' definitions) over
// that time (Note [Charged time and bandwidth time] in nccl/collectives.h).
struct CollectiveRow {
  std::string op;        // "all-reduce", ...
  std::string datatype;  // "float32", ...
  int bucket = 0;        // bytes per call in [2^bucket, 2^(bucket+1))
  int nranks = 0;        // 0: unknown
  uint64_t count = 0;
  uint64_t captured = 0;  // of count: issued into a CUDA graph, never timed
  uint64_t timed = 0;     // of count: with GPU time resolved
  // Most calls were captured (Note [Captured collectives] in
  // collectives.h): algbw/busbw are not given (0), as the few uncaptured
  // calls (often warm-ups) do not stand for the row.
  bool mostly_captured = false;
  uint64_t bytes = 0;     // all calls, nccl-tests' S summed
  double host_s = 0;      // all calls
  double gpu_s = 0;       // timed calls (a group member: its share by bytes)
  // Every uncaptured call, an estimate (Note [Estimated GPU time] in
  // report/collectives.h); the one figure findings read for a row's GPU time.
  double gpu_s_estimated = 0;
  // One timed call as it usually runs: their mean less the slow outliers
  // (report/collectives.h, typical_call_s); 0 when none was timed.
  double gpu_typical_s = 0;
  double gpu_p50_s = 0, gpu_p99_s = 0;
  double algbw_gbps = 0, busbw_gbps = 0;  // 0 when none timed
  // NCCL's own choice, from its profiler plugin (nccl/profiler_records.h):
  // the algorithm and protocol of most of the row's calls ("" unknown: the
  // plugin is off, or recorded none of these calls), the mean channels NCCL
  // used (0 unknown) and the communicator's nodes per NCCL (0 unknown).
  std::string algo, proto;
  double channels = 0;
  int nnodes = 0;
  // The cost model's expectation (report/collective_expectations.h, Note
  // [Where the expected bandwidth comes from]); per call of the row's mean
  // size.
  double expected_busbw_gbps = 0;  // the model's for NCCL's choice (algo/proto) on this shape; 0 unknown
  std::string expected_from;       // where the links came from
  std::string best_algo, best_proto;  // the model's fastest choice; "" unknown
  double best_time_s = 0;             // one call by best_algo/best_proto, per the model
  int best_channels = 0;              // the channels best_time_s assumed (the model's own count)
  double chosen_time_s = 0;           // one call by NCCL's choice (algo/proto, channels), per the model
};

// One (communicator, op, size bucket, algorithm, protocol) of NCCL's
// profiler plugin records: calls, mean channels, and where the interface
// gives GPU timestamps (v4+), the kernel's GPU time and busbw (0 unknown).
struct AlgoProtoRow {
  uint64_t comm_hash = 0;
  int nranks = 0, nnodes = 0;  // 0 unknown
  std::string op;              // "all-reduce", ...
  int bucket = 0;
  std::string algo, proto;     // NCCL_ALGO / NCCL_PROTO spelling: "Ring", "Simple", ...
  uint64_t calls = 0;
  double channels = 0;
  double gpu_s = 0;
  double busbw_gbps = 0;
};

struct CommunicatorRow {
  int nranks = 0, rank = -1, device = -1;
  bool alive = true, aborted = false;
};

struct CollectivesSection {
  bool present = false;    // any NCCL call or communicator seen
  int nccl_version = 0;    // NCCL_VERSION_CODE of the loaded library; 0 unknown
  int timing_every = 1;    // one call in this many is timed
  double host_s = 0;       // host time in collectives, all threads
  double host_share = 0;   // of wall time
  // Note [Estimated GPU time] in report/collectives.h: the rows' estimates
  // summed, never past gpu_estimate_devices × wall time.
  double gpu_s_estimated = 0;
  double gpu_share = 0;               // gpu_s_estimated / wall time (up to gpu_estimate_devices)
  uint64_t gpu_estimate_timed = 0;    // the timed calls the estimate rests on
  int gpu_estimate_devices = 1;       // devices this process drives (its communicators'), at least 1
  bool gpu_estimate_capped = false;   // the rows summed past devices × wall and were scaled down
  uint64_t pending = 0;    // timed calls still running on the GPU
  uint64_t dropped = 0;    // timed calls whose events failed (aborted comms)
  std::vector<CollectiveRow> rows;  // most host + GPU time first
  std::vector<CommunicatorRow> communicators;
  std::vector<std::pair<std::string, std::string>> env;  // NCCL_* in effect, by name
  std::vector<std::string> warnings;  // "all-reduce ran at X GB/s bus bandwidth, expected Y"
  // NCCL's profiler plugin: its records, most calls first; what became of
  // it ("on (v5)", "off: <why>", "stepped aside: <whose>"), the collectives
  // it recorded and the events it had no room for.
  std::vector<AlgoProtoRow> algorithms;
  std::string profiler;
  uint64_t profiler_records = 0, profiler_dropped = 0;
};

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

// The text (when present): the headline line, the warnings, the rows' table
// (the GPU columns come from one call in timing_every: docs/collectives.md),
// captured calls, the cost model's expectations, communicators, NCCL's
// choices (algorithms_text.h), the NCCL variables and what is pending.
void collectives_text(const CollectivesSection& c, std::string* out);

}  // namespace report
}  // namespace gpuslack

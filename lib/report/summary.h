// The end-of-run summary, as data: what the text and JSON writers print.
// Its sections' types are in their own headers (sections.h lists them):
// the calls (calls.h), allocator (allocator.h), staging (staging.h), GPU
// timeline (gpu_timeline.h), pinned heap (pinned.h), topology (topology.h)
// and job (job.h); the collectives, device health and series below.
//
// Built from the ledger's per-thread figures (ledger::snapshot()) and the
// session's facts (wall time, host, pid, rank), with every duration turned
// into seconds and call sites symbolized. Everything a reader sees is here,
// so the two writers cannot disagree.
//
// The JSON form of this struct is the versioned schema in
// docs/summary.schema.json; bump kSchemaVersion when a field changes meaning
// (adding a field is compatible; a field removed because it misled is
// listed in the schema's description: the reader takes it as 0).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "health/sampler.h"
#include "ledger/api_call.h"
#include "nccl/collectives.h"
#include "nccl/communicators.h"
#include "nccl/profiler_records.h"
#include "ledger/ledger.h"
#include "pin/pinned_stats.h"
#include "report/allocator.h"
#include "report/calls.h"
#include "report/feature_counters.h"
#include "report/finding.h"
#include "report/gpu_timeline.h"
#include "report/job.h"
#include "report/pinned.h"
#include "report/staging.h"
#include "report/topology.h"
#include "stage/staging_stats.h"
#include "timeline/timeline.h"
#include "topology/topology.h"

namespace gpuslack {
namespace report {

inline constexpr int kSchemaVersion = 1;

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

// NVML's view of each device (health/sampler.h): "device_health", each
// row copied from health::DeviceHealth (report/feature_counters.h).
struct DeviceHealthSection {
  health::Status status = health::Status::kOff;
  std::string detail;  // why unavailable
  std::vector<DeviceHealthRow> devices;
};

// Figures over time, all in buckets of interval_s from t0_s after
// started_utc (report/series.h): "series".
struct SeriesDevice {
  int device = 0;
  std::vector<double> gpu_idle_share;     // [] when the GPU timeline did not measure it
  std::vector<double> memory_used_bytes;  // NVML, end of each bucket; [] when unavailable
  std::vector<double> sm_clock_ratio;     // NVML, mean per bucket; [] when unavailable
};
struct SeriesSection {
  double interval_s = 1.0;
  double t0_s = 0;
  std::vector<SeriesDevice> devices;
  std::vector<double> reserved_bytes;   // allocator:vmm, all devices; [] when native
  std::vector<double> allocated_bytes;
};

struct Summary {
  int schema_version = kSchemaVersion;
  std::string gpuslack_version;
  std::string build_info;
  std::string reason;  // "exit", "periodic", "signal SIGTERM", ...
  std::string host;
  int pid = 0;
  int rank = -1;        // job.rank; -1 if none
  int local_rank = -1;  // job.local_rank
  JobIdentity job;      // the launcher's rank, node and job id (report/job.h)
  double wall_s = 0;    // first CUDA call seen to now
  std::string started_utc;  // ISO 8601, when the first CUDA call was seen

  // Summed over threads: thread-seconds, and lost_share may exceed 1 when
  // several threads block at once. The text never shows a share above 100%
  // (Note [Thread-seconds] in text_parts.h): it says thread-seconds and the
  // worst thread's share instead.
  double lost_s = 0;     // all threads, allocation + copies + collectives
  double lost_share = 0;  // lost_s / wall_s (may exceed 1 with many threads)
  std::vector<CategoryTime> categories;  // all threads, every category in enum order
  // What leaks and how to fix it, most costly first (lib/findings/; the
  // session fills it after build_summary).
  std::vector<Finding> findings;
  ThreadRow worst_thread;                // the thread that lost most
  // Every live thread with a hooked call and the exited ones that lost most
  // (at most ledger::kListedExitedThreads), most lost first; the other
  // exited threads are summed in other_threads.
  std::vector<ThreadRow> threads;
  OtherThreadsRow other_threads;
  std::vector<CallRow> calls;            // every hooked call made, most time first
  std::vector<CopyRow> copies;           // copy kinds seen, most time first
  std::vector<CallSiteRow> call_sites;   // top call sites per category: categories in enum
                                         // order, most blocked first within each
  CollectivesSection collectives;
  std::vector<AllocatorRow> allocator;  // empty unless allocator:vmm served a device
  AllocatorStatus allocator_status;     // selected, and where it is off ("allocator_status" in the JSON)
  StagingSection staging;
  PinnedSection pinned;                 // "pinned" in the JSON only when present
  GpuTimelineSection gpu_timeline;
  DeviceHealthSection device_health;
  TopologySection topology;
  SeriesSection series;
};

// Facts about the process that the ledger does not hold, in the features'
// own types: build_summary and its builders copy them into the summary's
// (Note [Counters copied at the boundary] in report/feature_counters.h).
struct RunInfo {
  std::string reason;
  double wall_s = 0;
  std::string started_utc;
  double tick_seconds = 0;     // clock::tick_seconds()
  int top_call_sites = 5;      // per category
  // Call sites whose longest call was shorter are left out: the ledger may
  // have recorded some before the clock was calibrated (session.h).
  double call_site_threshold_s = 0;
  // The collectives ledger and communicators (session.cc fills them).
  nccl::CollectiveSnapshot collectives;
  std::vector<nccl::CommRow> communicators;
  nccl::profiler::Snapshot profiler;  // session.cc fills these (nccl/profiler_*.h)
  std::string profiler_status;
  int nccl_version = 0;
  int collective_timing_every = 1;
  double expected_busbw_gbps = 0;  // 0: no check
  std::string fabric = "auto";     // the fabric knob (report/collective_expectations.h)
  std::vector<AllocatorRun> allocator;  // session.cc fills it
  AllocatorStatus allocator_status;     // session.cc fills it
  bool staging_present = false;         // session.cc fills these from stage::existing_stager()
  stage::StagingStats staging;
  bool pinned_present = false;          // session.cc fills these: the heap was made
  pin::PinnedStats pinned;
  timeline::Snapshot gpu_timeline;      // session.cc fills it (timeline::snapshot())
  health::Snapshot device_health;       // session.cc fills it (health::snapshot())
  topology::Snapshot topology;          // session.cc fills it (topology::snapshot())
  uint64_t series_origin_ticks = 0;     // the series' origin (base/time_buckets.h)
};

// Builds the summary from ledger figures. Symbolizes call-site frames.
Summary build_summary(const std::vector<ledger::ThreadFigures>& threads, const RunInfo& run);

}  // namespace report
}  // namespace gpuslack

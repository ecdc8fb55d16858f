// The end-of-run summary, as data: what the text and JSON writers print.
// Its sections' types are in their own headers (sections.h lists them):
// the calls (calls.h), collectives (collectives.h), allocator (allocator.h), staging (staging.h), GPU
// timeline (gpu_timeline.h), pinned heap (pinned.h), device health
// (device_health.h), topology (topology.h), series (series.h) and job
// (job.h).
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
#include "report/collectives.h"
#include "report/device_health.h"
#include "report/feature_counters.h"
#include "report/finding.h"
#include "report/gpu_timeline.h"
#include "report/job.h"
#include "report/pinned.h"
#include "report/series.h"
#include "report/staging.h"
#include "report/topology.h"
#include "stage/staging_stats.h"
#include "timeline/timeline.h"
#include "topology/topology.h"

namespace gpuslack {
namespace report {

inline constexpr int kSchemaVersion = 1;

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

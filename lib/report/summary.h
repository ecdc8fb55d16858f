// The end-of-run summary, as data: what the text and JSON writers print.
//
// Built from the ledger's per-thread figures (ledger::snapshot()) and the
// session's facts (wall time, host, pid, rank), with every duration turned
// into seconds and call sites symbolized. Everything a reader sees is here,
// so the two writers cannot disagree.
//
// The JSON form of this struct is the versioned schema in
// docs/summary.schema.json; bump kSchemaVersion when a field changes meaning
// or goes away (adding a field is compatible).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ledger/api_call.h"
#include "ledger/ledger.h"

namespace gpuslack {
namespace report {

inline constexpr int kSchemaVersion = 1;

struct CategoryTime {
  Category category = Category::kOther;
  double seconds = 0;
  double share = 0;  // of wall time
};

struct CallRow {
  std::string name;
  Category category = Category::kOther;
  uint64_t count = 0;
  double total_s = 0;
  double max_s = 0;
  double p50_s = 0;
  double p99_s = 0;
  uint64_t bytes = 0;
};

struct CopyRow {
  CopyKind copy = CopyKind::kNone;
  HostMemory host = HostMemory::kNone;
  uint64_t count = 0;
  uint64_t bytes = 0;
  double total_s = 0;
  double gbps = 0;  // bytes / host time, GB/s; 0 when no time
};

struct CallSiteRow {
  Category category = Category::kOther;
  std::string api;                  // the hooked call
  double blocked_s = 0;
  uint64_t count = 0;
  std::vector<std::string> frames;  // symbolized, innermost first, gpuslack's own dropped
};

struct ThreadRow {
  int tid = 0;
  std::string name;
  double lost_s = 0;                       // allocation + copies + collectives
  double lost_share = 0;                   // lost_s / wall time
  std::vector<CategoryTime> categories;    // every category, in enum order
};

struct Summary {
  int schema_version = kSchemaVersion;
  std::string gpuslack_version;
  std::string build_info;
  std::string reason;  // "exit", "periodic", "signal SIGTERM", ...
  std::string host;
  int pid = 0;
  int rank = -1;        // RANK / SLURM_PROCID / OMPI_COMM_WORLD_RANK; -1 if none
  int local_rank = -1;  // LOCAL_RANK / SLURM_LOCALID / OMPI_COMM_WORLD_LOCAL_RANK
  double wall_s = 0;    // first CUDA call seen to now
  std::string started_utc;  // ISO 8601, when the first CUDA call was seen

  double lost_s = 0;     // all threads, allocation + copies + collectives
  double lost_share = 0;  // lost_s / wall_s (may exceed 1 with many threads)
  std::vector<CategoryTime> categories;  // all threads, every category in enum order
  ThreadRow worst_thread;                // the thread that lost most
  std::vector<ThreadRow> threads;        // every thread with a hooked call, most lost first
  std::vector<CallRow> calls;            // every hooked call made, most time first
  std::vector<CopyRow> copies;           // copy kinds seen, most time first
  std::vector<CallSiteRow> call_sites;   // top call sites per category: categories in enum
                                         // order, most blocked first within each
};

// Facts about the process that the ledger does not hold.
struct RunInfo {
  std::string reason;
  double wall_s = 0;
  std::string started_utc;
  double tick_seconds = 0;     // clock::tick_seconds()
  int top_call_sites = 5;      // per category
  // Call sites whose longest call was shorter are left out: the ledger may
  // have recorded some before the clock was calibrated (session.h).
  double call_site_threshold_s = 0;
};

// Builds the summary from ledger figures. Symbolizes call-site frames.
Summary build_summary(const std::vector<ledger::ThreadFigures>& threads, const RunInfo& run);

}  // namespace report
}  // namespace gpuslack

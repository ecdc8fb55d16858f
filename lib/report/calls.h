// The summary's calls section: the time lost and to what ("lost_s",
// "lost_share", "categories"), per thread ("worst_thread", "threads",
// "other_threads"), per hooked call ("calls"), per copy kind ("copies") and
// per call site ("call_sites"). Its report-side types, its builder (from
// the ledger's per-thread figures) and its text; the JSON is
// calls_json.h's (sections.h: the rule for which file does what).
//
// Merging rules, in one place:
//   - calls are merged across threads by ApiCall id; percentiles come from
//     the merged histograms and are capped at the merged maximum (a log2
//     bucket's middle can lie above every sample in it);
//   - copies are merged by (kind, host memory, asynchronous call);
//   - call sites are merged by (api id, frames as captured), then the top
//     `run.top_call_sites` of each category by blocked time are kept and only
//     those are symbolized.
// Every ordering breaks ties on a stable key, so equal inputs give equal
// summaries.
//
// Thread safety: plain data; the builder is report time only (symbolizing
// takes the loader's lock); the text is pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ledger/api_call.h"
#include "ledger/ledger.h"

namespace gpuslack {
namespace report {

struct RunInfo;
struct Summary;

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
  // Of total_s, the calls past the call-site threshold that began in the
  // middle of the run: after its first kSteadyFrom and before its last
  // kSteadyFrom of wall time, counting only time buckets wholly inside
  // (ledger::CallFigures::slow_time), less the costliest of those buckets,
  // so that one event (a checkpoint, the last wait for queued work) is
  // not taken for a habit. What tells a call that kept blocking in steady
  // state from a burst at start-up, mid-run or teardown (findings/).
  double steady_s = 0;
};

// The share of wall time at each end of the run that steady_s leaves out.
inline constexpr double kSteadyFrom = 0.1;

// Note [Copy rates]: a rate is bytes over the time the copy took. Host
// time inside the call is that time only when the call returns once the
// copy is done: a synchronous call (not ApiCall::async_api) between device
// and host memory or host and host. (A pageable host-to-device cudaMemcpy
// returns once the buffer is in the driver's staging memory, and its host
// time includes the stream drain before it: a lower bound of the transfer
// rate.) An asynchronous call returns once its copy is enqueued, and a
// synchronous device-to-device copy, peer copy or memset does not wait for
// the device either (Runtime API, "API synchronization behavior"): bytes
// over their host time is an enqueue rate, not a transfer rate (issue 17
// found "179,204 GB/s" device-to-device). Those rows give no rate. The GPU
// timeline's copy records (timeline/gpu_activity.h) carry no byte counts,
// so there is no GPU-side rate either.
struct CopyRow {
  CopyKind copy = CopyKind::kNone;
  HostMemory host = HostMemory::kNone;
  bool async_api = false;  // made by asynchronous calls (cudaMemcpyAsync, ...)
  uint64_t count = 0;
  uint64_t bytes = 0;
  double total_s = 0;
  // bytes / host time, GB/s, where that is a transfer rate (Note [Copy
  // rates]: copy_host_time_is_transfer()); 0 otherwise or when no time.
  double host_time_gbps = 0;
};

// Whether a row's host time is its copies' transfer time (Note [Copy rates]).
bool copy_host_time_is_transfer(CopyKind copy, bool async_api);

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
  bool exited = false;                     // one of the exited threads that lost most
  double lost_s = 0;                       // allocation + copies + collectives
  double lost_share = 0;                   // lost_s / wall time
  std::vector<CategoryTime> categories;    // every category, in enum order
};

// The exited threads not listed by name (Note [Exited threads] in
// ledger/ledger.h), summed.
struct OtherThreadsRow {
  uint64_t threads = 0;                    // 0: none
  double lost_s = 0;
  double lost_share = 0;
  std::vector<CategoryTime> categories;    // every category, in enum order
};

// Fills the section's members of `s` (lost_s, lost_share, categories,
// worst_thread, threads, other_threads, calls, copies, call_sites) from
// the ledger's figures; `s->wall_s` is set.
void build_calls(const std::vector<ledger::ThreadFigures>& threads, const RunInfo& run, Summary* s);

// `c`'s time in the run (zero when the summary has no row of it).
CategoryTime category_time(const Summary& s, Category c);

// The text. "allocation 2.1 s (16.8%)": one category in the headline and
// over its table (a share above 100% reads in thread-seconds).
std::string category_part(const Summary& s, Category c);
// Per category with calls, its table; then the copy table.
void call_tables_text(const Summary& s, std::string* out);
void copy_table_text(const Summary& s, std::string* out);
// The thread that lost most; the top call sites of each category.
void worst_thread_text(const Summary& s, std::string* out);
void call_sites_text(const Summary& s, std::string* out);

}  // namespace report
}  // namespace gpuslack

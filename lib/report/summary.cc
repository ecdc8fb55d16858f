// See summary.h. Report time only: allocates, reads the environment and
// symbolizes (the loader's lock); never on a hooked call's path. The run's
// own fields here, then each section's builder in turn (sections.h); the
// calls' merging rules are calls.h's.
#include "report/summary.h"

#include <unistd.h>

#include <cmath>
#include <string>

#include "build_info.h"
#include "report/collective_expectations.h"
#include "report/collectives.h"
#include "report/device_health.h"
#include "report/gpu_timeline.h"
#include "report/series.h"
#include "report/staging.h"
#include "report/topology.h"

namespace gpuslack {
namespace report {
namespace {

// Non-finite or negative inputs (a clock that failed to calibrate) read as 0:
// the writers must never see NaN or Inf.
double finite_or_zero(double v) { return std::isfinite(v) && v > 0 ? v : 0; }

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  buf[sizeof(buf) - 1] = '\0';
  return buf[0] != '\0' ? std::string(buf) : std::string("unknown");
}

}  // namespace

Summary build_summary(const std::vector<ledger::ThreadFigures>& threads, const RunInfo& run) {
  const double tick_s = finite_or_zero(run.tick_seconds);
  Summary s;
  s.gpuslack_version = GPUSLACK_VERSION_STRING;
  s.build_info = build_info();
  s.reason = run.reason;
  s.host = host_name();
  s.pid = static_cast<int>(getpid());
  s.job = job_from_environment();
  s.job.node = s.host;
  s.job.nccl_ranks = nccl_ranks_of(run.communicators);
  s.rank = s.job.rank;
  s.local_rank = s.job.local_rank;
  s.wall_s = finite_or_zero(run.wall_s);
  s.started_utc = run.started_utc;

  build_calls(threads, run, &s);
  s.collectives = build_collectives(run, tick_s, s.wall_s);
  s.allocator = build_allocator(run.allocator);
  s.allocator_status = run.allocator_status;
  s.staging = build_staging(threads, run);
  s.pinned = build_pinned(run.pinned_present, run.pinned);
  s.gpu_timeline = build_gpu_timeline(run.gpu_timeline, run.top_call_sites);
  s.device_health = build_device_health(run.device_health);
  s.topology = build_topology_section(run.topology, s.job, run.communicators);
  s.series = build_series(run);
  // Last: the expectations read the topology and the collectives both.
  apply_collective_expectations(&s, {run.expected_busbw_gbps, run.fabric});
  return s;
}

}  // namespace report
}  // namespace gpuslack

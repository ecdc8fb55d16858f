// One finding: a leak gpuslack measured, what it cost, the evidence, where
// it happens and how to fix it. The summary holds them ranked by cost
// (Summary::findings); lib/findings/ decides them, the writers print them:
// text right after the headline (report/findings_text.h), JSON "findings"
// (docs/summary.schema.json), merged across ranks by the job report
// (python_shim/gpuslack/job).
//
// Note [A false finding is a bug]: a finding tells a person to change their
// program. Each rule fires only on figures that show the leak in steady
// state and cost at least a threshold of wall time; each has a scenario on
// the simulated device that fires it and a near miss that must not
// (tests/lib/findings, tests/findings).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace gpuslack {
namespace report {

struct Finding {
  // Stable identifier, the JSON's and the job report's key:
  //   allocator_sync, fragmentation, pageable_copies, sync_copies,
  //   host_bound, launch_bound, underfilled_kernels, collective_bandwidth, collective_algorithm,
  //   latency_bound_collectives
  // (job-level, from the job report only: nccl_env_mismatch, straggler).
  std::string rule;
  std::string title;       // what leaks, one short sentence, no trailing period
  double cost_s = 0;       // time this leak cost (host time blocked, or GPU idle)
  double cost_share = 0;   // cost_s / wall time, in [0, 1]
  double gpu_idle_s = -1;  // GPU idle charged to it when the timeline measured; -1: not measured
  // The figures that show it, as (name, value) with units in the value:
  // ("cudaFree calls that synchronized", "96"), ("reserved / allocated", "3.4x").
  std::vector<std::pair<std::string, std::string>> evidence;
  // Call sites, most costly first, each its frames innermost first (Python
  // frames first where captured); at most three sites.
  std::vector<std::vector<std::string>> where;
  std::string fix;         // the knob, environment variable or code change, one or two sentences
};

}  // namespace report
}  // namespace gpuslack

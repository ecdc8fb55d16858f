// Live metrics: the summary in the text format of node_exporter's textfile
// collector (the Prometheus exposition format, version 0.0.4), so that the
// monitoring a cluster already runs scrapes every rank's figures.
//
// When: output.cc writes it to prometheus_dir/<name>.prom (atomically: a
// temporary file in the same folder, then a rename) with every summary:
// each summary_interval_s, or each kMetricsIntervalS when that is 0 (the
// JSON is then written at exit only), at exit and on a signal.
//
// What (every name gpuslack_*, counters end in _total, units in the name):
//   gpuslack_wall_seconds_total                      time since the first CUDA call
//   gpuslack_lost_seconds_total                      allocation + copies + collectives, all threads
//   gpuslack_blocked_seconds_total{category}         host time in hooked calls by category_key()
//   gpuslack_gpu_timeline_measured                   1 when the GPU figures below are measured
//   gpuslack_gpu_wall_seconds_total{device}          per device, only when measured
//   gpuslack_gpu_busy_seconds_total{device,kind}     kind: busy_key()
//   gpuslack_gpu_idle_seconds_total{device,cause}    cause: idle_key()
//   gpuslack_collective_calls_total{op}              op: collective_op_name(), ops seen
//   gpuslack_collective_bytes_total{op}              nccl-tests' S, summed
//   gpuslack_collective_host_seconds_total{op}
//   gpuslack_collective_timed_calls_total{op}        calls with GPU time resolved
//   gpuslack_collective_gpu_seconds_total{op}        GPU time of the timed calls
//   gpuslack_collective_busbw_bytes_per_second{op}   gauge: the timed calls' bus bandwidth,
//                                                    mean of the rows weighted by GPU time
//   gpuslack_allocator_{allocated,reserved,peak_allocated,peak_reserved}_bytes{device}
//                                                    gauges, allocator:vmm only
//   gpuslack_pinned_heap_{pinned,live}_bytes         gauges, when the pinned heap exists
//   gpuslack_pageable_copies_total{direction}        direction: h2d, d2h
//   gpuslack_staged_copies_total{direction}
//   gpuslack_staged_bytes_total{direction}
// Every sample carries job_id, rank, local_rank, restart and host (from
// Summary::job; "" when unknown). The scrape's own "job" label is
// Prometheus's (the scrape job), so the launcher's job id is job_id: a
// "job" label in the file would be renamed exported_job. Label sets are
// bounded: categories, kinds, causes, ops and directions are fixed enums;
// devices are ordinals; no call site is a label. A pid label is added only
// when `with_pid` (the file took a -<pid> name because another process of
// the same job and rank held the plain one: the two must not be the same
// series). Label values are escaped; bytes outside printable ASCII become
// '_'. Numbers do not depend on the locale.
//
// Thread safety: a pure function of its arguments.
#pragma once

#include <string>

#include "report/summary.h"

namespace gpuslack {
namespace report {

// How often metrics are written when summary_interval_s is 0.
inline constexpr double kMetricsIntervalS = 15.0;

std::string format_prometheus(const Summary& summary, bool with_pid = false);

}  // namespace report
}  // namespace gpuslack

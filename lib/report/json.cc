// See json.h. The document itself (its writer is json_writer.h). Changing
// a field's name or meaning here means changing docs/summary.schema.json
// and bumping kSchemaVersion (summary.h); the ctest
// report.json_validates_against_schema holds the two together.
#include "report/json.h"

#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <vector>

#include "report/collectives_json.h"
#include "report/findings_json.h"
#include "report/health_series.h"
#include "report/idle_explained.h"
#include "report/topology_json.h"
#include "report/json_writer.h"
#include "report/utf8.h"

namespace gpuslack {
namespace report {
namespace {

using json_detail::append_escaped;
using json_detail::number;
using json_detail::Writer;

const char* copy_kind_key(CopyKind k) {
  const char* name = copy_kind_name(k);
  return name != nullptr && name[0] != '\0' ? name : "none";
}

const char* host_memory_key(HostMemory m) {
  const char* name = host_memory_name(m);
  return name != nullptr && name[0] != '\0' ? name : "none";
}

// {"allocation": {"seconds": s, "share": x}, ...}: every category, in enum
// order, even those the vector lacks.
void categories(const std::vector<CategoryTime>& times, Writer* w) {
  w->begin_object();
  for (int c = 0; c < kCategoryCount; ++c) {
    CategoryTime t;
    for (const CategoryTime& have : times)
      if (static_cast<int>(have.category) == c) t = have;
    w->key(category_key(static_cast<Category>(c))).begin_object(/*on_one_line=*/true);
    w->key("seconds").seconds(t.seconds);
    w->key("share").share(t.share);
    w->end_object();
  }
  w->end_object();
}

void thread(const ThreadRow& t, Writer* w) {
  w->begin_object();
  w->key("tid").integer(t.tid);
  w->key("name").string(t.name);
  w->key("exited").boolean(t.exited);
  w->key("lost_s").seconds(t.lost_s);
  w->key("lost_share").share(t.lost_share);
  w->key("categories");
  categories(t.categories, w);
  w->end_object();
}

void call(const CallRow& c, Writer* w) {
  w->begin_object();
  w->key("name").string(c.name);
  w->key("category").string(category_key(c.category));
  w->key("count").unsigned_integer(c.count);
  w->key("total_s").seconds(c.total_s);
  w->key("max_s").seconds(c.max_s);
  w->key("p50_s").seconds(c.p50_s);
  w->key("p99_s").seconds(c.p99_s);
  w->key("bytes").unsigned_integer(c.bytes);
  w->key("steady_s").seconds(c.steady_s);
  w->end_object();
}

void copy(const CopyRow& c, Writer* w) {
  w->begin_object();
  w->key("kind").string(copy_kind_key(c.copy));
  w->key("host").string(host_memory_key(c.host));
  w->key("count").unsigned_integer(c.count);
  w->key("bytes").unsigned_integer(c.bytes);
  w->key("total_s").seconds(c.total_s);
  w->key("async_api").boolean(c.async_api);
  w->key("host_time_gbps").share(c.host_time_gbps);
  w->end_object();
}

void call_site(const CallSiteRow& c, Writer* w) {
  w->begin_object();
  w->key("category").string(category_key(c.category));
  w->key("api").string(c.api);
  w->key("blocked_s").seconds(c.blocked_s);
  w->key("count").unsigned_integer(c.count);
  w->key("frames").begin_array();
  for (const std::string& f : c.frames) w->string(f);
  w->end_array();
  w->end_object();
}

void staging_direction(const StagingCounters::Direction& d, Writer* w) {
  w->begin_object();
  w->key("seen").unsigned_integer(d.seen);
  w->key("seen_bytes").unsigned_integer(d.seen_bytes);
  w->key("staged").unsigned_integer(d.staged);
  w->key("staged_bytes").unsigned_integer(d.staged_bytes);
  w->key("passed").unsigned_integer(d.passed);
  w->key("passed_bytes").unsigned_integer(d.passed_bytes);
  w->key("blocked_s").seconds(static_cast<double>(d.blocked_ns) * 1e-9);
  w->end_object();
}

void staging(const StagingSection& st, Writer* w) {
  const StagingCounters& s = st.stats;
  w->begin_object();
  w->key("enabled").boolean(s.enabled);
  w->key("exact_copy_semantics").boolean(s.exact);
  w->key("async_d2h").boolean(s.async_d2h);
  w->key("threshold_bytes").unsigned_integer(s.threshold_bytes);
  w->key("chunk_bytes").unsigned_integer(s.chunk_bytes);
  w->key("h2d");
  staging_direction(s.h2d, w);
  w->key("d2h");
  staging_direction(s.d2h, w);
  w->key("passed_because").begin_object();
  w->key("off").unsigned_integer(s.passed_off);
  w->key("small").unsigned_integer(s.passed_small);
  w->key("capture").unsigned_integer(s.passed_capture);
  w->key("capture_unknown").unsigned_integer(s.passed_capture_unknown);
  w->key("exact").unsigned_integer(s.passed_exact);
  w->key("error_pending").unsigned_integer(s.passed_error_pending);
  w->key("unsupported").unsigned_integer(s.passed_unsupported);
  w->key("measured_faster").unsigned_integer(s.passed_measured);
  w->key("unknown_work").unsigned_integer(s.passed_unknown_work);
  w->end_object();
  w->key("partial").unsigned_integer(s.partial);
  w->key("host_work_waits").unsigned_integer(s.host_work_waits);
  w->key("host_work_wait_s").seconds(static_cast<double>(s.host_work_wait_ns) * 1e-9);
  w->key("budget_waits").unsigned_integer(s.budget_waits);
  w->key("budget_wait_s").seconds(static_cast<double>(s.budget_wait_ns) * 1e-9);
  w->key("legacy_h2d").unsigned_integer(s.legacy_h2d);
  w->key("legacy_other_streams").unsigned_integer(s.legacy_other_streams);
  w->key("async_d2h_copies").unsigned_integer(s.async_d2h_copies);
  w->key("budget_bytes").unsigned_integer(s.budget_bytes);
  w->key("pinned_bytes").unsigned_integer(s.pinned_bytes);
  w->key("peak_in_use_bytes").unsigned_integer(s.peak_in_use_bytes);
  w->key("pin_failures").unsigned_integer(s.pin_failures);
  w->key("sites").begin_array();
  for (const PageableSiteRow& r : st.sites) {
    w->begin_object();
    w->key("api").string(r.api);
    w->key("bytes").unsigned_integer(r.bytes);
    w->key("copies").unsigned_integer(r.copies);
    w->key("samples").unsigned_integer(r.samples);
    w->key("frames").begin_array();
    for (const std::string& f : r.frames) w->string(f);
    w->end_array();
    w->end_object();
  }
  w->end_array();
  w->end_object();
}

// The GPU timeline: docs/summary.md, "The GPU timeline".
// A top kernel's launch shapes (timeline::KernelLaunches); the figures
// that need the device's limits only when they are known (sm_count > 0).
void launches_json(const timeline::KernelLaunches& l, Writer* w) {
  w->key("launch").begin_object(true);
  w->key("shapes").unsigned_integer(l.shapes);
  w->key("blocks_min").unsigned_integer(l.blocks_min);
  w->key("blocks_max").unsigned_integer(l.blocks_max);
  w->key("shaped_s").seconds(l.shaped_s);
  if (l.sm_count > 0) {
    w->key("sm_count").integer(l.sm_count);
    w->key("blocks_per_sm_min").integer(l.blocks_per_sm_min);
    w->key("blocks_per_sm_max").integer(l.blocks_per_sm_max);
    w->key("waves_min").share(l.waves_min);
    w->key("waves_max").share(l.waves_max);
    w->key("wave_efficiency").share(l.wave_efficiency);
    w->key("wave_efficiency_min").share(l.wave_efficiency_min);
    w->key("below_sms_s").seconds(l.below_sms_s);
    w->key("underfilled_s").seconds(l.underfilled_s);
    w->key("underfilled_idle_s").seconds(l.underfilled_idle_s);
  }
  w->key("top_shapes").begin_array(true);
  for (const timeline::KernelShapeRow& r : l.top_shapes) {
    w->begin_object(true);
    w->key("blocks").unsigned_integer(r.blocks);
    w->key("threads_per_block").unsigned_integer(r.threads_per_block);
    w->key("registers_per_thread").unsigned_integer(r.registers_per_thread);
    w->key("shared_bytes_per_block").unsigned_integer(r.shared_bytes_per_block);
    if (l.sm_count > 0) {
      w->key("blocks_per_sm").integer(r.blocks_per_sm);
      w->key("waves").share(r.waves);
      w->key("wave_efficiency").share(r.wave_efficiency);
    }
    w->key("count").unsigned_integer(r.count);
    w->key("total_s").seconds(r.total_s);
    w->end_object();
  }
  w->end_array();
  w->end_object();
}

void gpu_device(const GpuDeviceRow& d, Writer* w) {
  w->begin_object();
  w->key("device").integer(d.device);
  w->key("wall_s").seconds(d.wall_s);
  w->key("busy_s").seconds(d.busy_s);
  w->key("idle_s").seconds(d.idle_s);
  w->key("busy").begin_object();
  for (int i = 0; i < timeline::kBusyCount; ++i) w->key(timeline::busy_key(static_cast<timeline::Busy>(i))).seconds(d.busy_by[i]);
  w->end_object();
  w->key("idle").begin_object();
  for (int i = 0; i < timeline::kIdleCount; ++i) w->key(timeline::idle_key(static_cast<timeline::Idle>(i))).seconds(d.idle_by[i]);
  w->end_object();
  w->key("idle_sites").begin_array();
  for (const IdleSiteRow& site : d.idle_sites) {
    w->begin_object();
    w->key("cause").string(site.cause);
    w->key("api").string(site.api);
    w->key("idle_s").seconds(site.idle_s);
    w->key("frames").begin_array();
    for (const std::string& f : site.frames) w->string(f);
    w->end_array();
    w->end_object();
  }
  w->end_array();
  w->key("top_kernels").begin_array();
  for (const timeline::KernelRow& k : d.top_kernels) {
    w->begin_object(true);
    w->key("name").string(k.name);
    w->key("count").unsigned_integer(k.count);
    w->key("total_s").seconds(k.total_s);
    w->key("mean_s").seconds(k.mean_s);
    if (k.launches.shapes > 0) launches_json(k.launches, w);
    w->end_object();
  }
  w->end_array();
  w->key("short_kernel_busy_s").seconds(d.short_kernel_busy_s);
  w->key("kernels").unsigned_integer(d.kernels);
  w->key("launches").unsigned_integer(d.launches);
  const timeline::Steps& st = d.steps;
  w->key("steps").begin_object();
  w->key("from_marks").boolean(st.from_marks);
  w->key("count").unsigned_integer(st.count);
  w->key("busy_share_p50").share(st.busy_share_p50);
  w->key("busy_share_p99").share(st.busy_share_p99);
  w->key("wall_p50_s").seconds(st.wall_p50_s);
  w->key("wall_p99_s").seconds(st.wall_p99_s);
  w->key("worst").begin_array();
  for (const timeline::StepRow& r : st.worst) {
    w->begin_object(true);
    w->key("index").unsigned_integer(r.index);
    w->key("wall_s").seconds(r.wall_s);
    w->key("busy_s").seconds(r.busy_s);
    w->key("idle_s").seconds(r.idle_s);
    w->end_object();
  }
  w->end_array();
  w->end_object();
  w->end_object();
}

void gpu_timeline(const GpuTimelineSection& g, Writer* w) {
  w->begin_object();
  w->key("status").string(timeline::status_key(g.status));
  w->key("detail").string(g.detail);
  w->key("how_to_enable").string(g.how_to_enable);
  w->key("stopped_by").string(g.stopped_by);
  w->key("stopped_after_s").seconds(g.stopped_after_s);
  w->key("records").unsigned_integer(g.records);
  w->key("dropped_by_pool").unsigned_integer(g.dropped_by_pool);
  w->key("buffers_beyond_cap").unsigned_integer(g.buffers_beyond_cap);
  w->key("dropped_by_cupti").unsigned_integer(g.dropped_by_cupti);
  w->key("host_intervals_dropped").unsigned_integer(g.host_intervals_dropped);
  w->key("buffer_bytes_limit").unsigned_integer(g.buffer_bytes_limit);
  w->key("buffer_bytes_peak").unsigned_integer(g.buffer_bytes_peak);
  w->key("devices").begin_array();
  for (const GpuDeviceRow& d : g.devices) gpu_device(d, w);
  w->end_array();
  w->end_object();
}

// The pinned host heap: docs/summary.md, "The pinned heap".
void pinned(const PinnedCounters& p, Writer* w) {
  auto whole = [&](const char* key, uint64_t v) { w->key(key).integer(static_cast<int64_t>(v)); };
  w->begin_object();
  whole("pinned", p.pinned);
  whole("peak_pinned", p.peak_pinned);
  whole("live", p.live);
  whole("peak_live", p.peak_live);
  whole("cap", p.cap);
  whole("chunk_size", p.chunk_size);
  whole("chunks", p.chunks);
  whole("chunks_allocated", p.chunks_allocated);
  whole("chunks_released", p.chunks_released);
  whole("allocations", p.allocations);
  whole("frees", p.frees);
  whole("pending_free", p.pending_free);
  whole("epochs", p.epochs);
  whole("deferred_frees", p.deferred_frees);
  whole("cap_hits", p.cap_hits);
  whole("fallbacks", p.fallbacks);
  whole("passthrough", p.passthrough);
  whole("trimmed", p.trimmed);
  w->key("stall_s").seconds(p.stall_s);
  w->end_object();
}

// The launcher's identity (report/job.h); always written.
void job(const JobIdentity& j, Writer* w) {
  w->begin_object();
  w->key("id").string(j.id);
  w->key("id_from").string(j.id_from);
  w->key("rank").integer(j.rank < 0 ? -1 : j.rank);
  w->key("rank_from").string(j.rank_from);
  w->key("local_rank").integer(j.local_rank < 0 ? -1 : j.local_rank);
  w->key("world_size").integer(j.world_size < 0 ? -1 : j.world_size);
  w->key("node_rank").integer(j.node_rank < 0 ? -1 : j.node_rank);
  w->key("local_world_size").integer(j.local_world_size < 0 ? -1 : j.local_world_size);
  w->key("nodes").integer(j.nodes < 0 ? -1 : j.nodes);
  w->key("node").string(j.node);
  w->key("restart").integer(j.restart < 0 ? 0 : j.restart);
  w->key("launcher").string(j.launcher);
  w->key("nccl_ranks").begin_array();
  for (const NcclRank& r : j.nccl_ranks) {
    w->begin_object(true);
    w->key("nranks").integer(r.nranks);
    w->key("rank").integer(r.rank);
    w->end_object();
  }
  w->end_array();
  w->end_object();
}

}  // namespace

std::string json_string(const std::string& text) {
  std::string out = "\"";
  append_escaped(text, &out);
  out += '"';
  return out;
}

std::string format_json(const Summary& s) {
  Writer w;
  w.begin_object();
  w.key("schema_version").integer(s.schema_version);
  w.key("gpuslack_version").string(s.gpuslack_version);
  w.key("build_info").string(s.build_info);
  w.key("reason").string(s.reason);
  w.key("host").string(s.host);
  w.key("pid").integer(s.pid);
  w.key("rank").integer(s.rank < 0 ? -1 : s.rank);
  w.key("local_rank").integer(s.local_rank < 0 ? -1 : s.local_rank);
  w.key("job");
  job(s.job, &w);
  w.key("started_utc").string(s.started_utc);
  w.key("wall_s").seconds(s.wall_s);
  w.key("lost_s").seconds(s.lost_s);
  w.key("lost_share").share(s.lost_share);
  w.key("categories");
  categories(s.categories, &w);
  w.key("findings");
  write_findings(s.findings, &w);
  w.key("findings_explain");
  write_idle_explained(s, &w);
  w.key("worst_thread");
  if (s.threads.empty()) {
    w.null();
  } else {
    thread(s.worst_thread, &w);
  }
  w.key("threads").begin_array();
  for (const ThreadRow& t : s.threads) thread(t, &w);
  w.end_array();
  w.key("other_threads");
  if (s.other_threads.threads == 0) {
    w.null();
  } else {
    w.begin_object();
    w.key("threads").unsigned_integer(s.other_threads.threads);
    w.key("lost_s").seconds(s.other_threads.lost_s);
    w.key("lost_share").share(s.other_threads.lost_share);
    w.key("categories");
    categories(s.other_threads.categories, &w);
    w.end_object();
  }
  w.key("calls").begin_array();
  for (const CallRow& c : s.calls) call(c, &w);
  w.end_array();
  w.key("copies").begin_array();
  for (const CopyRow& c : s.copies) copy(c, &w);
  w.end_array();
  w.key("call_sites").begin_array();
  for (const CallSiteRow& c : s.call_sites) call_site(c, &w);
  w.end_array();
  w.key("collectives");
  if (s.collectives.present) {
    write_collectives(s.collectives, &w);
  } else {
    w.null();
  }
  w.key("allocator").begin_array();
  for (const AllocatorRow& a : s.allocator) {
    w.begin_object();
    w.key("device").integer(a.device);
    w.key("allocated").integer(static_cast<int64_t>(a.stats.allocated));
    w.key("peak_allocated").integer(static_cast<int64_t>(a.stats.peak_allocated));
    w.key("reserved").integer(static_cast<int64_t>(a.stats.reserved));
    w.key("peak_reserved").integer(static_cast<int64_t>(a.stats.peak_reserved));
    w.key("utilization").share(a.utilization);
    w.key("largest_free").integer(static_cast<int64_t>(a.stats.largest_free));
    w.key("pending_free").integer(static_cast<int64_t>(a.stats.pending_free));
    w.key("allocations").integer(static_cast<int64_t>(a.stats.allocations));
    w.key("frees").integer(static_cast<int64_t>(a.stats.frees));
    w.key("granules_mapped").integer(static_cast<int64_t>(a.stats.granules_mapped));
    w.key("granules_unmapped").integer(static_cast<int64_t>(a.stats.granules_unmapped));
    w.key("oom_retries").integer(static_cast<int64_t>(a.stats.oom_retries));
    w.key("stall_s").seconds(a.stats.stall_s);
    w.key("reservations").integer(static_cast<int64_t>(a.stats.reservations));
    w.key("chunks_mapped").integer(static_cast<int64_t>(a.stats.chunks_mapped));
    w.key("chunks_unmapped").integer(static_cast<int64_t>(a.stats.chunks_unmapped));
    w.key("failed_allocations").integer(static_cast<int64_t>(a.stats.failed_allocations));
    w.key("stream_reuses").integer(static_cast<int64_t>(a.stats.stream_reuses));
    w.key("deferred_frees").integer(static_cast<int64_t>(a.stats.deferred_frees));
    w.key("capture_fallbacks").integer(static_cast<int64_t>(a.stats.capture_fallbacks));
    w.key("unmap_calls").integer(static_cast<int64_t>(a.stats.unmap_calls));
    w.key("set_access_calls").integer(static_cast<int64_t>(a.stats.set_access_calls));
    w.key("created_without").begin_array();
    if (a.stats.created_without & kCreatedWithoutPosixFd) w.string("posix_fd_handle");
    if (a.stats.created_without & kCreatedWithoutRdma) w.string("gpu_direct_rdma");
    w.end_array();
    w.key("timeline").begin_object();
    w.key("t_s").begin_array();
    for (double t : a.timeline.t_s) w.seconds(t);
    w.end_array();
    w.key("allocated").begin_array();
    for (uint64_t v : a.timeline.allocated) w.integer(static_cast<int64_t>(v));
    w.end_array();
    w.key("reserved").begin_array();
    for (uint64_t v : a.timeline.reserved) w.integer(static_cast<int64_t>(v));
    w.end_array();
    w.end_object();
    w.end_object();
  }
  w.end_array();
  w.key("allocator_status").begin_object();
  w.key("selected").string(s.allocator_status.selected);
  w.key("off").begin_array();
  for (const AllocatorOff& o : s.allocator_status.off) {
    w.begin_object();
    w.key("device").integer(o.device);
    w.key("why").string(o.why);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  w.key("staging");
  if (s.staging.present) {
    staging(s.staging, &w);
  } else {
    w.null();
  }
  // Written once the session decided (measured, off, held by another
  // tool, unavailable); absent in a summary made before, as in older files.
  if (s.gpu_timeline.status != timeline::Status::kNotStarted) {
    w.key("gpu_timeline");
    gpu_timeline(s.gpu_timeline, &w);
  }
  if (s.pinned.present) {
    w.key("pinned");
    pinned(s.pinned.stats, &w);
  }
  w.key("device_health");
  write_device_health(s.device_health, &w);
  w.key("topology");
  if (s.topology.present) {
    write_topology(s.topology, &w);
  } else {
    w.null();
  }
  w.key("series");
  write_series(s.series, &w);
  w.end_object();
  return w.take();
}

}  // namespace report
}  // namespace gpuslack

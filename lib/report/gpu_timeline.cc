#include "report/gpu_timeline.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "report/json_fields.h"
#include "report/symbolize.h"

namespace gpuslack {
namespace report {
namespace {

double finite_or_zero(double v) { return std::isfinite(v) && v > 0 ? v : 0; }

}  // namespace

timeline::Idle idle_cause_of(Category category) {
  switch (category) {
    case Category::kAllocation: return timeline::Idle::kAllocation;
    case Category::kCopy: return timeline::Idle::kCopies;
    case Category::kCollective: return timeline::Idle::kCollectives;
    case Category::kSync: return timeline::Idle::kSync;
    case Category::kOther: break;
  }
  return timeline::Idle::kOther;
}

GpuTimelineSection build_gpu_timeline(const timeline::Snapshot& snap, int top_call_sites) {
  GpuTimelineSection g;
  g.status = snap.status;
  g.detail = snap.detail;
  g.how_to_enable = snap.how_to_enable;
  g.stopped_by = snap.stopped_by;
  g.stopped_after_s = finite_or_zero(snap.stopped_after_s);
  g.records = snap.records;
  g.dropped_by_pool = snap.dropped_by_pool;
  g.buffers_beyond_cap = snap.buffers_beyond_cap;
  g.dropped_by_cupti = snap.dropped_by_cupti;
  g.host_intervals_dropped = snap.host_intervals_dropped;
  g.buffer_bytes_limit = snap.buffer_bytes_limit;
  g.buffer_bytes_peak = snap.buffer_bytes_peak;
  for (const timeline::DeviceTimeline& d : snap.devices) {
    GpuDeviceRow row;
    row.device = d.device;
    row.wall_s = finite_or_zero(d.wall_s);
    row.busy_s = finite_or_zero(d.busy_s);
    row.idle_s = finite_or_zero(d.idle_s);
    for (int i = 0; i < timeline::kBusyCount; ++i) row.busy_by[i] = finite_or_zero(d.busy_by[i]);
    for (int i = 0; i < timeline::kIdleCount; ++i) row.idle_by[i] = finite_or_zero(d.idle_by[i]);
    row.top_kernels = d.top_kernels;
    row.short_kernel_busy_s = finite_or_zero(d.short_kernel_busy_s);
    row.kernels = d.kernels;
    row.launches = d.launches;
    row.steps = d.steps;
    // The timeline lists sites most idle first; only the kept ones are
    // symbolized.
    const size_t keep = static_cast<size_t>(std::max(top_call_sites, 0));
    for (const timeline::IdleSite& site : d.idle_sites) {
      if (row.idle_sites.size() >= keep) break;
      if (site.call == nullptr) continue;
      IdleSiteRow r;
      r.cause = timeline::idle_key(idle_cause_of(site.call->category));
      r.api = site.call->name != nullptr ? site.call->name : "?";
      r.idle_s = finite_or_zero(site.idle_s);
      r.frames = symbolize(site.frames);
      row.idle_sites.push_back(std::move(r));
    }
    g.devices.push_back(std::move(row));
  }
  return g;
}

namespace {

using detail::Fields;

timeline::Status status_from(const Fields& f) {
  const std::string key = f.text("status");
  for (timeline::Status s : {timeline::Status::kOff, timeline::Status::kNotStarted, timeline::Status::kMeasured,
                             timeline::Status::kHeldByOther, timeline::Status::kUnavailable})
    if (key == timeline::status_key(s)) return s;
  f.bad("status", "one of off, not_started, measured, held_by_other, unavailable");
}

GpuDeviceRow read_device(const Fields& f) {
  GpuDeviceRow d;
  d.device = f.whole("device");
  d.wall_s = f.number("wall_s");
  d.busy_s = f.number("busy_s");
  d.idle_s = f.number("idle_s");
  const JsonValue* v = nullptr;
  if (f.object("busy", &v)) {
    Fields b(*v, f.where("busy"));
    for (int i = 0; i < timeline::kBusyCount; ++i) d.busy_by[i] = b.number(timeline::busy_key(static_cast<timeline::Busy>(i)));
  }
  if (f.object("idle", &v)) {
    Fields b(*v, f.where("idle"));
    for (int i = 0; i < timeline::kIdleCount; ++i) d.idle_by[i] = b.number(timeline::idle_key(static_cast<timeline::Idle>(i)));
  }
  f.each("idle_sites", [&](const JsonValue& item, const std::string& at) {
    Fields s(item, at);
    IdleSiteRow r;
    r.cause = s.text("cause");
    r.api = s.text("api");
    r.idle_s = s.number("idle_s");
    r.frames = s.strings("frames");
    d.idle_sites.push_back(std::move(r));
  });
  f.each("top_kernels", [&](const JsonValue& item, const std::string& at) {
    Fields k(item, at);
    timeline::KernelRow r;
    r.name = k.text("name");
    r.count = k.count("count");
    r.total_s = k.number("total_s");
    r.mean_s = k.number("mean_s");
    if (k.object("launch", &v)) {
      Fields l(*v, k.where("launch"));
      timeline::KernelLaunches& o = r.launches;
      o.shapes = l.count("shapes");
      o.blocks_min = l.count("blocks_min");
      o.blocks_max = l.count("blocks_max");
      o.shaped_s = l.number("shaped_s");
      o.sm_count = l.whole("sm_count");
      o.blocks_per_sm_min = l.whole("blocks_per_sm_min");
      o.blocks_per_sm_max = l.whole("blocks_per_sm_max");
      o.waves_min = l.number("waves_min");
      o.waves_max = l.number("waves_max");
      o.wave_efficiency = l.number("wave_efficiency");
      o.wave_efficiency_min = l.number("wave_efficiency_min");
      o.below_sms_s = l.number("below_sms_s");
      o.underfilled_s = l.number("underfilled_s");
      o.underfilled_idle_s = l.number("underfilled_idle_s");
      l.each("top_shapes", [&](const JsonValue& shape_item, const std::string& shape_at) {
        Fields x(shape_item, shape_at);
        timeline::KernelShapeRow sr;
        sr.blocks = x.count("blocks");
        sr.threads_per_block = static_cast<uint32_t>(std::min<uint64_t>(x.count("threads_per_block"), UINT32_MAX));
        sr.registers_per_thread = static_cast<uint32_t>(std::min<uint64_t>(x.count("registers_per_thread"), UINT32_MAX));
        sr.shared_bytes_per_block =
            static_cast<uint32_t>(std::min<uint64_t>(x.count("shared_bytes_per_block"), UINT32_MAX));
        sr.blocks_per_sm = x.whole("blocks_per_sm");
        sr.waves = x.number("waves");
        sr.wave_efficiency = x.number("wave_efficiency");
        sr.count = x.count("count");
        sr.total_s = x.number("total_s");
        o.top_shapes.push_back(sr);
      });
    }
    d.top_kernels.push_back(std::move(r));
  });
  d.short_kernel_busy_s = f.number("short_kernel_busy_s");
  d.kernels = f.count("kernels");
  d.launches = f.count("launches");
  if (f.object("steps", &v)) {
    Fields st(*v, f.where("steps"));
    d.steps.from_marks = st.flag("from_marks");
    d.steps.count = st.count("count");
    d.steps.busy_share_p50 = st.number("busy_share_p50");
    d.steps.busy_share_p99 = st.number("busy_share_p99");
    d.steps.wall_p50_s = st.number("wall_p50_s");
    d.steps.wall_p99_s = st.number("wall_p99_s");
    st.each("worst", [&](const JsonValue& item, const std::string& at) {
      Fields w(item, at);
      timeline::StepRow r;
      r.index = w.count("index");
      r.wall_s = w.number("wall_s");
      r.busy_s = w.number("busy_s");
      r.idle_s = w.number("idle_s");
      d.steps.worst.push_back(r);
    });
  }
  return d;
}

}  // namespace

GpuTimelineSection read_gpu_timeline(const detail::Fields& f) {
  GpuTimelineSection g;
  g.status = status_from(f);
  g.detail = f.text("detail");
  g.how_to_enable = f.text("how_to_enable");
  g.stopped_by = f.text("stopped_by");
  g.stopped_after_s = f.number("stopped_after_s");
  g.records = f.count("records");
  g.dropped_by_pool = f.count("dropped_by_pool");
  g.buffers_beyond_cap = f.count("buffers_beyond_cap");
  g.dropped_by_cupti = f.count("dropped_by_cupti");
  g.host_intervals_dropped = f.count("host_intervals_dropped");
  g.buffer_bytes_limit = f.count("buffer_bytes_limit");
  g.buffer_bytes_peak = f.count("buffer_bytes_peak");
  f.each("devices", [&](const JsonValue& item, const std::string& at) { g.devices.push_back(read_device(Fields(item, at))); });
  return g;
}

}  // namespace report
}  // namespace gpuslack

// See gpu_timeline_json.h.
#include "report/gpu_timeline_json.h"

#include <algorithm>
#include <string>
#include <utility>

#include "report/json.h"
#include "report/json_fields.h"
#include "report/json_reader.h"
#include "report/json_writer.h"

namespace gpuslack {
namespace report {

using detail::Fields;
using json_detail::Writer;

namespace {

// The GPU timeline: docs/summary.md, "The GPU timeline".
// A top kernel's launch shapes (KernelLaunches); the figures
// that need the device's limits only when they are known (sm_count > 0).
void launches_json(const KernelLaunches& l, Writer* w) {
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
  for (const KernelShapeRow& r : l.top_shapes) {
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
  for (const KernelRow& k : d.top_kernels) {
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
  const Steps& st = d.steps;
  w->key("steps").begin_object();
  w->key("from_marks").boolean(st.from_marks);
  w->key("count").unsigned_integer(st.count);
  w->key("busy_share_p50").share(st.busy_share_p50);
  w->key("busy_share_p99").share(st.busy_share_p99);
  w->key("wall_p50_s").seconds(st.wall_p50_s);
  w->key("wall_p99_s").seconds(st.wall_p99_s);
  w->key("worst").begin_array();
  for (const StepRow& r : st.worst) {
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

}  // namespace

void write_gpu_timeline(const GpuTimelineSection& g, Writer* w) {
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

namespace {

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
    KernelRow r;
    r.name = k.text("name");
    r.count = k.count("count");
    r.total_s = k.number("total_s");
    r.mean_s = k.number("mean_s");
    if (k.object("launch", &v)) {
      Fields l(*v, k.where("launch"));
      KernelLaunches& o = r.launches;
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
        KernelShapeRow sr;
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
      StepRow r;
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

GpuTimelineSection read_gpu_timeline(const Fields& f) {
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

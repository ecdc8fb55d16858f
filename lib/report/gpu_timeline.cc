// See gpu_timeline.h.
#include "report/gpu_timeline.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "report/symbolize.h"
#include "report/text_parts.h"
#include "report/units.h"

namespace gpuslack {
namespace report {
namespace {

double finite_or_zero(double v) { return std::isfinite(v) && v > 0 ? v : 0; }

}  // namespace

KernelRow kernel_row(const timeline::KernelRow& k) {
  KernelRow r;
  r.name = k.name;
  r.count = k.count;
  r.total_s = k.total_s;
  r.mean_s = k.mean_s;
  const timeline::KernelLaunches& l = k.launches;
  KernelLaunches& o = r.launches;
  o.sm_count = l.sm_count;
  o.shapes = l.shapes;
  o.blocks_min = l.blocks_min;
  o.blocks_max = l.blocks_max;
  o.blocks_per_sm_min = l.blocks_per_sm_min;
  o.blocks_per_sm_max = l.blocks_per_sm_max;
  o.waves_min = l.waves_min;
  o.waves_max = l.waves_max;
  o.wave_efficiency = l.wave_efficiency;
  o.wave_efficiency_min = l.wave_efficiency_min;
  o.shaped_s = l.shaped_s;
  o.below_sms_s = l.below_sms_s;
  o.underfilled_s = l.underfilled_s;
  o.underfilled_idle_s = l.underfilled_idle_s;
  for (const timeline::KernelShapeRow& x : l.top_shapes)
    o.top_shapes.push_back(KernelShapeRow{x.blocks, x.threads_per_block, x.registers_per_thread,
                                          x.shared_bytes_per_block, x.blocks_per_sm, x.waves, x.wave_efficiency,
                                          x.count, x.total_s});
  return r;
}

Steps steps_of(const timeline::Steps& s) {
  Steps r;
  r.from_marks = s.from_marks;
  r.count = s.count;
  r.busy_share_p50 = s.busy_share_p50;
  r.busy_share_p99 = s.busy_share_p99;
  r.wall_p50_s = s.wall_p50_s;
  r.wall_p99_s = s.wall_p99_s;
  for (const timeline::StepRow& w : s.worst) r.worst.push_back(StepRow{w.index, w.wall_s, w.busy_s, w.idle_s});
  return r;
}

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
    for (const timeline::KernelRow& k : d.top_kernels) row.top_kernels.push_back(kernel_row(k));
    row.short_kernel_busy_s = finite_or_zero(d.short_kernel_busy_s);
    row.kernels = d.kernels;
    row.launches = d.launches;
    row.steps = steps_of(d.steps);
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

// The text.

namespace {

// "cudaFree+0x1a (train.so)" -> "cudaFree": the function, or the module
// when no symbol was found, for a headline.
std::string short_frame(const std::string& frame) {
  std::string f = frame.substr(0, frame.find(" ("));
  size_t plus = f.find("+0x");
  if (plus != std::string::npos && plus > 0) f.resize(plus);
  return f;
}

// The causes (or kinds) of one device with a share of at least 0.05%, most
// first; ties in enum order.
template <int N>
std::vector<int> by_share(const double (&seconds)[N]) {
  std::vector<int> order;
  for (int i = 0; i < N; ++i)
    if (seconds[i] > 0) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return seconds[a] > seconds[b]; });
  return order;
}

// "device 0: GPU idle 31.0% of 412 s: host-bound 22.0% (no CUDA call in
// flight), allocation 6.0% (cudaFree at train_step), copies 3.0%; busy
// 69.0%: compute 55.0%, communication 11.0%, copies 3.0%"
std::string gpu_device_headline(const GpuDeviceRow& d) {
  auto share = [&](double v) { return d.wall_s > 0 ? v / d.wall_s : 0; };
  std::string text = "device " + std::to_string(d.device) + ": GPU idle " + percent_text(share(d.idle_s)) + " of " +
                     headline_seconds(d.wall_s);
  std::string parts;
  for (int i : by_share(d.idle_by)) {
    if (share(d.idle_by[i]) < 0.0005) continue;
    const auto cause = static_cast<timeline::Idle>(i);
    std::string part = std::string(timeline::idle_name(cause)) + " " + percent_text(share(d.idle_by[i]));
    if (cause == timeline::Idle::kHostBound) part += " (no CUDA call in flight)";
    for (const IdleSiteRow& site : d.idle_sites) {
      if (site.cause != timeline::idle_key(cause)) continue;
      part += " (" + printable(site.api);
      if (!site.frames.empty()) part += " at " + printable(short_frame(site.frames.front()));
      part += ")";
      break;
    }
    parts += (parts.empty() ? "" : ", ") + part;
  }
  if (!parts.empty()) text += ": " + parts;
  text += "; busy " + percent_text(share(d.busy_s));
  std::string kinds;
  for (int i : by_share(d.busy_by)) {
    if (share(d.busy_by[i]) < 0.0005) continue;
    kinds += std::string(kinds.empty() ? "" : ", ") + timeline::busy_name(static_cast<timeline::Busy>(i)) + " " +
             percent_text(share(d.busy_by[i]));
  }
  if (!kinds.empty()) text += ": " + kinds;
  return text;
}

}  // namespace

bool gpu_timeline_measured(const GpuTimelineSection& g) {
  return g.status == timeline::Status::kMeasured && !g.devices.empty();
}

// The first lines when the timeline measured: one per device.
void gpu_timeline_headline(const GpuTimelineSection& g, std::string* out) {
  if (!gpu_timeline_measured(g)) return;
  for (const GpuDeviceRow& d : g.devices) line(out, gpu_device_headline(d));
}

// What the GPU was busy with, the idle call sites, steps; or why the
// timeline did not measure.
void gpu_timeline_text(const GpuTimelineSection& g, std::string* out) {
  if (!gpu_timeline_measured(g)) {
    if (g.status == timeline::Status::kHeldByOther) {
      line(out, "GPU timeline: not measured: " + printable(g.detail) + " holds CUPTI");
    } else if (g.status == timeline::Status::kUnavailable) {
      std::string text = "GPU timeline: not measured: " + printable(g.detail);
      if (!g.how_to_enable.empty()) text += "; " + printable(g.how_to_enable);
      line(out, text);
    } else if (!g.how_to_enable.empty()) {
      line(out, "GPU timeline: not measured; " + printable(g.how_to_enable));
    }
    return;
  }
  if (!g.stopped_by.empty())
    line(out, "GPU timeline: measured for the first " + seconds_text(g.stopped_after_s) + " only: " +
                  printable(g.stopped_by) + " then took CUPTI");
  for (const GpuDeviceRow& d : g.devices) {
    std::string title = "GPU timeline, device " + std::to_string(d.device) + ": busy " + seconds_text(d.busy_s) +
                        ", idle " + seconds_text(d.idle_s) + " of " + seconds_text(d.wall_s) + "; " +
                        count_text(d.kernels) + " kernels (" + count_text(d.launches) +
                        " launches through the launch API)";
    if (d.busy_s > 0)
      title += ", " + percent_text(d.short_kernel_busy_s / d.busy_s) + " of busy time in kernels under 10 us";
    line(out, title);
    for (const IdleSiteRow& site : d.idle_sites) {
      line(out, "  idle " + seconds_text(site.idle_s) + " while blocked in " + printable(site.api) + " (" +
                    printable(site.cause) + ")");
      for (const std::string& frame : site.frames) line(out, "      at " + printable(frame));
    }
    if (!d.top_kernels.empty()) {
      // Launch shapes (KernelLaunches): a range where a name ran
      // in several; "-" where no record carried a grid or the device's
      // limits are unknown.
      const auto range = [](const std::string& lo, const std::string& hi) { return lo == hi ? lo : lo + "-" + hi; };
      Table table(1);
      table.add({"kernel", "count", "total", "mean", "blocks", "blocks/SM", "waves", "wave eff."});
      for (const KernelRow& k : d.top_kernels) {
        const KernelLaunches& l = k.launches;
        const bool shaped = l.shapes > 0, known = shaped && l.sm_count > 0 && l.wave_efficiency > 0;
        table.add({printable(k.name), count_text(k.count), seconds_text(k.total_s), seconds_text(k.mean_s),
                   shaped ? range(count_text(l.blocks_min), count_text(l.blocks_max)) : "-",
                   known ? range(std::to_string(l.blocks_per_sm_min), std::to_string(l.blocks_per_sm_max)) : "-",
                   known ? range(waves_text(l.waves_min), waves_text(l.waves_max)) : "-",
                   known ? percent_text(l.wave_efficiency) : "-"});
      }
      table.render("  ", out);
    }
    const Steps& st = d.steps;
    if (st.count > 0) {
      line(out, std::string("  ") + (st.from_marks ? "steps" : "intervals") + ": " + count_text(st.count) +
                    ", busy p50 " + percent_text(st.busy_share_p50) + ", p99 " + percent_text(st.busy_share_p99) +
                    ", wall p50 " + seconds_text(st.wall_p50_s) + ", p99 " + seconds_text(st.wall_p99_s));
      for (const StepRow& w : st.worst)
        line(out, std::string("    ") + (st.from_marks ? "step " : "interval ") + count_text(w.index) + ": idle " + seconds_text(w.idle_s) + " of " + seconds_text(w.wall_s));
    }
  }
  if (g.dropped_by_pool + g.dropped_by_cupti + g.host_intervals_dropped > 0)
    line(out, "  dropped: " + count_text(g.dropped_by_pool) + " activity buffers refused (pool " +
                  bytes_cell(g.buffer_bytes_limit) + "), " + count_text(g.dropped_by_cupti) + " records by CUPTI, " +
                  count_text(g.host_intervals_dropped) + " host intervals");
  if (g.buffers_beyond_cap > 0)
    line(out, "  " + count_text(g.buffers_beyond_cap) + " activity buffers lent past the pool's ceiling: this CUPTI "
                  "(before 12.9) crashes on a refused buffer");
}

}  // namespace report
}  // namespace gpuslack

// Every device's analysis, and what they share (timeline_analysis.h).
#include "timeline/timeline_analysis.h"

#include <algorithm>

#include "log/log.h"

namespace gpuslack {
namespace timeline {

namespace {

void sort_by_start(std::vector<ledger::HostInterval>* hosts) {
  std::sort(hosts->begin(), hosts->end(), [](const ledger::HostInterval& a, const ledger::HostInterval& b) {
    return a.start_ticks != b.start_ticks ? a.start_ticks < b.start_ticks : a.tid < b.tid;
  });
}

}  // namespace

TimelineAnalysis::TimelineAnalysis(const AnalysisOptions& options)
    : options_(options), committed_(options.start_ticks), host_floor_(options.start_ticks) {}

void TimelineAnalysis::bad_input(const char* what) {
  if (logged_bad_) return;
  logged_bad_ = true;
  log::warn("timeline: {} (counted; further ones are not logged)", what);
}

TimelineAnalysis::Device* TimelineAnalysis::make_device(int id) {
  if (static_cast<size_t>(id) >= by_id_.size()) by_id_.resize(static_cast<size_t>(id) + 1);
  auto d = std::make_unique<Device>(committed_, options_, boundaries_seen_ - boundaries_.size());
  DeviceLimits limits;
  if (options_.device_limits != nullptr && options_.device_limits(id, &limits) && limits.known())
    d->kernels.set_limits(limits);
  for (const Boundary& m : marks_) d->sweep.add_step(m.ticks, m.index);
  for (const Boundary& b : boundaries_) d->sweep.add_interval_boundary(b.ticks, b.index);
  by_id_[static_cast<size_t>(id)] = std::move(d);
  return by_id_[static_cast<size_t>(id)].get();
}

TimelineAnalysis::Device* TimelineAnalysis::device(int id) {
  if (id == last_id_) return last_;
  if (id < 0 || id >= kMaxDevices) return nullptr;
  Device* d = static_cast<size_t>(id) < by_id_.size() ? by_id_[static_cast<size_t>(id)].get() : nullptr;
  if (d == nullptr) d = make_device(id);
  last_id_ = id;
  last_ = d;
  return d;
}

void TimelineAnalysis::ensure_device(int id) {
  if (device(id) == nullptr) bad_input("a device id out of range");
}

void TimelineAnalysis::add(const GpuActivity& a) {
  ++records_;
  Device* d = a.end_ticks >= a.start_ticks ? device(a.device) : nullptr;
  if (d == nullptr) {
    ++bad_records_;
    bad_input(a.end_ticks < a.start_ticks ? "a GPU record ends before it starts" : "a GPU record's device is out of range");
    return;
  }
  if (DeviceAnalysis::is_kernel(a.kind)) d->kernels.add(a.name, a.end_ticks - a.start_ticks, a.shape);
  d->sweep.add(a);
}

void TimelineAnalysis::add(const ledger::HostInterval& h) {
  if (h.call == nullptr || h.end_ticks < h.start_ticks) {
    ++hosts_bad_;
    bad_input("a host interval without a call, or ending before it starts");
    return;
  }
  if (h.end_ticks <= host_floor_) {
    ++hosts_late_;
    return;
  }
  hosts_.push_back(h);
}

void TimelineAnalysis::add_step(uint64_t ticks) {
  const uint64_t index = marks_seen_++;
  // A device already past it drops it (its steps there are final).
  if (ticks >= committed_) marks_.push_back({ticks, index});
  for (auto& d : by_id_) {
    if (d) d->sweep.add_step(ticks, index);
  }
}

void TimelineAnalysis::add_interval_boundary(uint64_t ticks) {
  const uint64_t index = ++boundaries_seen_;  // the interval it opens; the first is 0
  if (ticks >= committed_) boundaries_.push_back({ticks, index});
  for (auto& d : by_id_) {
    if (d) d->sweep.add_interval_boundary(ticks, index);
  }
}

void TimelineAnalysis::commit(uint64_t watermark, bool final) {
  sort_by_start(&hosts_);
  uint64_t floor = watermark;
  for (auto& d : by_id_) {
    if (!d) continue;
    d->sweep.commit(watermark, final, hosts_);
    floor = std::min(floor, d->sweep.position());
  }
  committed_ = std::max(committed_, watermark);
  host_floor_ = std::max(host_floor_, floor);
  hosts_.erase(std::remove_if(hosts_.begin(), hosts_.end(),
                              [&](const ledger::HostInterval& h) { return h.end_ticks <= host_floor_; }),
               hosts_.end());
  const auto before = [&](const Boundary& b) { return b.ticks < committed_; };
  marks_.erase(std::remove_if(marks_.begin(), marks_.end(), before), marks_.end());
  boundaries_.erase(std::remove_if(boundaries_.begin(), boundaries_.end(), before), boundaries_.end());
}

void TimelineAnalysis::fill(uint64_t now, double tick_seconds, SiteFramesFn frames,
                            std::vector<DeviceTimeline>* out) const {
  out->clear();
  std::vector<ledger::HostInterval> hosts(hosts_);
  sort_by_start(&hosts);
  const bool from_marks = marks_seen_ > 0;
  for (size_t id = 0; id < by_id_.size(); ++id) {
    const Device* d = by_id_[id].get();
    if (d == nullptr) continue;
    DeviceTimeline dt;
    dt.device = static_cast<int>(id);
    d->sweep.fill(now, from_marks, hosts, tick_seconds, frames, &dt);
    d->kernels.fill(options_.top_kernels, tick_seconds, &dt.top_kernels);
    dt.launches = launches_;
    dt.kernels = d->kernels.count();
    out->push_back(std::move(dt));
  }
}

uint64_t TimelineAnalysis::late_records() const {
  uint64_t n = 0;
  for (const auto& d : by_id_) n += d ? d->sweep.late_records() : 0;
  return n;
}

uint64_t TimelineAnalysis::late_ticks() const {
  uint64_t n = 0;
  for (const auto& d : by_id_) n += d ? d->sweep.late_ticks() : 0;
  return n;
}

size_t TimelineAnalysis::pending_records() const {
  size_t n = 0;
  for (const auto& d : by_id_) n += d ? d->sweep.pending_records() : 0;
  return n;
}

size_t TimelineAnalysis::devices() const {
  size_t n = 0;
  for (const auto& d : by_id_) n += d ? 1 : 0;
  return n;
}

}  // namespace timeline
}  // namespace gpuslack

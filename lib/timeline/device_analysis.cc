// One device's sweep (device_analysis.h).
#include "timeline/device_analysis.h"

#include <algorithm>

namespace gpuslack {
namespace timeline {

DeviceAnalysis::DeviceAnalysis(uint64_t start_ticks, const AnalysisOptions& options, uint64_t first_interval)
    : start_(start_ticks),
      launch_gap_ticks_(options.launch_bound_gap_ticks),
      short_kernel_ticks_(options.short_kernel_ticks),
      pos_(start_ticks),
      reach_any_(start_ticks),
      short_reach_(start_ticks),
      marks_(start_ticks, /*open_at_start=*/false, 0, options.worst_steps),
      intervals_(start_ticks, /*open_at_start=*/true, first_interval, options.worst_steps),
      series_origin_(options.series_origin_ticks),
      series_tick_s_(options.tick_seconds) {
  for (uint64_t& r : reach_) r = start_ticks;
}

bool DeviceAnalysis::clip_late(Span* s) {
  ++late_records_;
  if (s->end <= pos_) {
    late_ticks_ += s->end - s->start;
    return false;
  }
  late_ticks_ += pos_ - s->start;
  s->start = pos_;
  return true;
}

void DeviceAnalysis::sort_pending() {
  // Records come in runs already sorted (a buffer holds one stream's
  // records in order), so a natural merge sort: find the runs, merge them
  // pairwise, a few linear passes. Many short runs (no order to use):
  // std::sort.
  const auto by_start = [](const Span& a, const Span& b) { return a.start < b.start; };
  if (sorted_ == pending_.size()) return;
  runs_.clear();
  runs_.push_back(0);
  for (size_t i = std::max<size_t>(sorted_, 1); i < pending_.size(); ++i) {
    if (pending_[i].start < pending_[i - 1].start) runs_.push_back(i);
  }
  runs_.push_back(pending_.size());
  sorted_ = pending_.size();
  if (runs_.size() <= 2) return;
  const size_t runs = runs_.size() - 1;
  if (runs > 16 && runs > pending_.size() / 64) {
    std::sort(pending_.begin(), pending_.end(), by_start);
    return;
  }
  // Merge pairs of runs back and forth between pending_ and the scratch
  // (which only grows: no value-initialization once it is big enough).
  if (scratch_.spans.size() < pending_.size()) scratch_.spans.resize(pending_.size());
  Span* from = pending_.data();
  Span* to = scratch_.spans.data();
  while (runs_.size() > 2) {
    size_t out = 1;
    for (size_t r = 0; r + 1 < runs_.size(); r += 2) {
      const size_t lo = runs_[r], mid = runs_[r + 1], hi = r + 2 < runs_.size() ? runs_[r + 2] : mid;
      std::merge(from + lo, from + mid, from + mid, from + hi, to + lo, by_start);
      runs_[out++] = hi;
    }
    runs_.resize(out);
    std::swap(from, to);
  }
  if (from != pending_.data()) {  // the result is in the scratch: trade places
    const size_t n = pending_.size();
    pending_.swap(scratch_.spans);
    scratch_.spans.resize(std::max(scratch_.spans.size(), n));
    pending_.resize(n);
  }
}

void DeviceAnalysis::commit(uint64_t watermark, bool final, const std::vector<ledger::HostInterval>& hosts) {
  if (watermark <= pos_) return;
  sort_pending();
  IdleAttributor gaps(hosts, launch_gap_ticks_);
  size_t i = 0;
  for (; i < pending_.size() && pending_[i].start < watermark; ++i) {
    const Span& s = pending_[i];
    if (s.start > pos_) advance(s.start, gaps);
    uint64_t& reach = reach_[static_cast<int>(s.kind)];
    reach = std::max(reach, s.end);
    reach_any_ = std::max(reach_any_, s.end);
    if (s.short_kernel) short_reach_ = std::max(short_reach_, s.end);
  }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(i));
  sorted_ -= i;
  if (reach_any_ >= watermark || final) {
    advance(watermark, gaps);
  } else {
    // Idle at the watermark since reach_any_: sweep the busy part, and the
    // gap only once it is known not to be launch-bound (device_analysis.h).
    if (reach_any_ > pos_) advance(reach_any_, gaps);
    if (watermark - reach_any_ > launch_gap_ticks_) advance(watermark, gaps);
  }
  marks_.walk_to(pos_);
  intervals_.walk_to(pos_);
  next_boundary_ = std::min(marks_.next_boundary(), intervals_.next_boundary());
}

void DeviceAnalysis::advance(uint64_t to, IdleAttributor& gaps) {
  // What lies ahead of pos_ is, per kind, the prefix [pos_, reach_[k]):
  // charge [pos_, to) to the kinds in priority order (Busy's order).
  uint64_t at = pos_;
  for (int k = 0; k < kBusyCount; ++k) {
    const uint64_t end = std::min(reach_[k], to);
    if (end > at) {
      busy_[k] += end - at;
      at = end;
    }
  }
  const uint64_t short_end = std::min(short_reach_, to);
  if (short_end > pos_) short_busy_ += short_end - pos_;
  if (at < to) charge_gap(at, to, gaps);
  pos_ = to;
}

void DeviceAnalysis::charge_gap(uint64_t from, uint64_t to, IdleAttributor& gaps) {
  // The gap began where the records seen stop reaching (reach_any_ <= from).
  gaps.attribute(reach_any_, from, to, [this](const IdleCharge& c, uint64_t b, uint64_t e) {
    const uint64_t d = e - b;
    idle_[static_cast<int>(c.cause)] += d;
    if (series_tick_s_ > 0) idle_series_.add_span(series_seconds(b), series_seconds(e));
    if (c.call != nullptr) idle_by_site_[{c.call, c.site_key}] += d;
    if (e <= next_boundary_) {  // the common case: inside one step of each kind
      marks_.add_idle_within_step(b, e);
      intervals_.add_idle_within_step(b, e);
      return;
    }
    marks_.charge_idle(b, e);
    intervals_.charge_idle(b, e);
    next_boundary_ = std::min(marks_.next_boundary(), intervals_.next_boundary());
  });
}

void DeviceAnalysis::fill(uint64_t now, bool from_marks, const std::vector<ledger::HostInterval>& hosts,
                          double tick_seconds, SiteFramesFn frames, DeviceTimeline* out) const {
  if (now <= pos_) {  // nothing pending before now: the committed figures
    write(from_marks, tick_seconds, frames, out);
    return;
  }
  DeviceAnalysis tail(*this);
  tail.commit(now, /*final=*/true, hosts);
  tail.write(from_marks, tick_seconds, frames, out);
}

void DeviceAnalysis::write(bool from_marks, double tick_seconds, SiteFramesFn frames, DeviceTimeline* out) const {
  const auto secs = [tick_seconds](uint64_t t) { return static_cast<double>(t) * tick_seconds; };
  out->idle_series = idle_series_;
  out->series_end_s = series_tick_s_ > 0 ? series_seconds(pos_) : 0;
  uint64_t busy = 0, idle = 0;
  for (int k = 0; k < kBusyCount; ++k) {
    busy += busy_[k];
    out->busy_by[k] = secs(busy_[k]);
  }
  for (int k = 0; k < kIdleCount; ++k) {
    idle += idle_[k];
    out->idle_by[k] = secs(idle_[k]);
  }
  // busy + idle == pos_ - start_ in ticks, exactly (every instant swept is
  // charged once).
  out->wall_s = secs(pos_ - start_);
  out->busy_s = secs(busy);
  out->idle_s = secs(idle);
  out->short_kernel_busy_s = secs(short_busy_);

  std::vector<std::pair<std::pair<const ApiCall*, uint64_t>, uint64_t>> sites(idle_by_site_.begin(),
                                                                             idle_by_site_.end());
  std::sort(sites.begin(), sites.end(), [](const auto& a, const auto& b) {
    if (a.second != b.second) return a.second > b.second;
    if (a.first.first->id != b.first.first->id) return a.first.first->id < b.first.first->id;
    return a.first.second < b.first.second;
  });
  out->idle_sites.clear();
  for (const auto& [key, ticks] : sites) {
    IdleSite site;
    site.call = key.first;
    site.idle_s = secs(ticks);
    if (key.second != 0 && frames != nullptr && !frames(key.second, &site.frames)) site.frames.clear();
    out->idle_sites.push_back(std::move(site));
  }

  const StepTracker& steps = from_marks ? marks_ : intervals_;
  steps.table().fill(tick_seconds, &out->steps);
  out->steps.from_marks = from_marks;
}

}  // namespace timeline
}  // namespace gpuslack

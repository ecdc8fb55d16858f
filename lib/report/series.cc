// See series.h.
#include "report/series.h"

#include <algorithm>
#include <cstdint>

#include "report/summary.h"

namespace gpuslack {
namespace report {
namespace {

// The allocator's samples of one device, in buckets from the series' origin.
void allocator_buckets(const AllocatorRun& row, uint64_t origin_ticks, double tick_seconds, TimeBuckets* reserved,
                       TimeBuckets* allocated) {
  const alloc::Timeline::Samples& s = row.timeline;
  const double offset_s =
      static_cast<double>(static_cast<int64_t>(s.origin_ticks - origin_ticks)) * tick_seconds;
  for (size_t i = 0; i < s.t_s.size() && i < s.reserved.size() && i < s.allocated.size(); ++i) {
    reserved->add(offset_s + s.t_s[i], static_cast<double>(s.reserved[i]));
    allocated->add(offset_s + s.t_s[i], static_cast<double>(s.allocated[i]));
  }
}

// Sums b into a, bucket by bucket (a grows to b's length).
void add_into(std::vector<double>* a, const std::vector<double>& b) {
  if (a->size() < b.size()) a->resize(b.size(), 0.0);
  for (size_t i = 0; i < b.size(); ++i) (*a)[i] += b[i];
}

}  // namespace

SeriesSection build_series(const RunInfo& run) {
  SeriesSection out;
  std::vector<TimeBuckets> reserved, allocated;
  for (const AllocatorRun& row : run.allocator) {
    reserved.emplace_back(TimeBuckets::Reduce::kMax);
    allocated.emplace_back(TimeBuckets::Reduce::kMax);
    allocator_buckets(row, run.series_origin_ticks, run.tick_seconds, &reserved.back(), &allocated.back());
  }
  // The widest width among every source.
  double interval = 1.0;
  for (const TimeBuckets& b : reserved) interval = std::max(interval, b.interval_s());
  for (const TimeBuckets& b : allocated) interval = std::max(interval, b.interval_s());
  for (const health::DeviceHealth& d : run.device_health.devices)
    interval = std::max({interval, d.memory_used.interval_s(), d.clock_ratio.interval_s()});
  for (const timeline::DeviceTimeline& d : run.gpu_timeline.devices)
    interval = std::max(interval, d.idle_series.interval_s());
  out.interval_s = interval;
  out.t0_s = 0;

  for (TimeBuckets& b : reserved) {
    b.widen_to(interval);
    add_into(&out.reserved_bytes, b.values());
  }
  for (TimeBuckets& b : allocated) {
    b.widen_to(interval);
    add_into(&out.allocated_bytes, b.values());
  }
  auto device_row = [&out](int device) -> SeriesDevice& {
    for (SeriesDevice& d : out.devices)
      if (d.device == device) return d;
    out.devices.push_back(SeriesDevice());
    out.devices.back().device = device;
    return out.devices.back();
  };
  const bool timeline_measured = run.gpu_timeline.status == timeline::Status::kMeasured;
  for (const timeline::DeviceTimeline& d : run.gpu_timeline.devices) {
    if (!timeline_measured || d.series_end_s <= 0) continue;
    TimeBuckets idle = d.idle_series;
    idle.widen_to(interval);
    std::vector<double> shares = idle.shares(d.series_end_s);
    // Buckets the window reached but no idle did: fully busy.
    const int reached = static_cast<int>(d.series_end_s / interval - 1e-9) + 1;
    for (int i = static_cast<int>(shares.size()); i < reached && i < TimeBuckets::kMaxBuckets; ++i)
      shares.push_back(0.0);
    device_row(d.device).gpu_idle_share = std::move(shares);
  }
  for (const health::DeviceHealth& d : run.device_health.devices) {
    TimeBuckets memory = d.memory_used, ratio = d.clock_ratio;
    memory.widen_to(interval);
    ratio.widen_to(interval);
    SeriesDevice& row = device_row(d.device);
    row.memory_used_bytes = memory.values();
    row.sm_clock_ratio = ratio.values();
  }
  std::sort(out.devices.begin(), out.devices.end(),
            [](const SeriesDevice& a, const SeriesDevice& b) { return a.device < b.device; });
  return out;
}

}  // namespace report
}  // namespace gpuslack

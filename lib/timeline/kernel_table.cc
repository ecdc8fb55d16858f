// The kernels by GPU time, and their launches' shapes (kernel_table.h).
#include "timeline/kernel_table.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <limits>

namespace gpuslack {
namespace timeline {
namespace {

struct MergedShape {
  LaunchShape shape;
  int blocks_per_sm = 0;
  uint64_t count = 0;
  uint64_t ticks = 0;
};

struct Merged {
  uint64_t count = 0;
  uint64_t ticks = 0;
  std::vector<MergedShape> shapes;  // by shape, across the addresses of one demangled name
  void add_shape(const LaunchShape& s, int blocks_per_sm, uint64_t n, uint64_t t) {
    for (MergedShape& m : shapes) {
      if (m.shape == s) {
        m.count += n;
        m.ticks += t;
        return;
      }
    }
    shapes.push_back({s, blocks_per_sm, n, t});
  }
};

KernelLaunches launches_of(const Merged& m, int sm_count, double tick_seconds) {
  KernelLaunches l;
  l.sm_count = sm_count;
  l.shapes = m.shapes.size();
  if (m.shapes.empty()) return l;
  std::vector<KernelShapeRow> rows;
  uint64_t shaped_ticks = 0, below_ticks = 0;
  double weighted = 0;
  uint64_t weighted_ticks = 0;
  l.blocks_min = std::numeric_limits<uint64_t>::max();
  l.blocks_per_sm_min = std::numeric_limits<int>::max();
  l.waves_min = std::numeric_limits<double>::max();
  l.wave_efficiency_min = 1;
  bool known = false;
  for (const MergedShape& v : m.shapes) {
    const LaunchShape& shape = v.shape;
    KernelShapeRow r;
    r.blocks = shape.blocks;
    r.threads_per_block = shape.threads_per_block;
    r.registers_per_thread = shape.registers_per_thread;
    r.shared_bytes_per_block = shape.shared_bytes_per_block;
    r.blocks_per_sm = v.blocks_per_sm;
    r.count = v.count;
    r.total_s = static_cast<double>(v.ticks) * tick_seconds;
    const Waves w = waves(shape.blocks, v.blocks_per_sm, sm_count);
    r.waves = w.waves;
    r.wave_efficiency = w.efficiency;
    shaped_ticks += v.ticks;
    const bool below = sm_count > 0 && shape.blocks < static_cast<uint64_t>(sm_count);
    if (below) below_ticks += v.ticks;
    if (w.efficiency > 0 && (below || w.efficiency < kUnderfilledEfficiency)) {
      l.underfilled_s += r.total_s;
      l.underfilled_idle_s += r.total_s * (1 - w.efficiency);
    }
    l.blocks_min = std::min(l.blocks_min, shape.blocks);
    l.blocks_max = std::max(l.blocks_max, shape.blocks);
    if (w.efficiency > 0) {
      known = true;
      weighted += w.efficiency * static_cast<double>(v.ticks);
      weighted_ticks += v.ticks;
      l.blocks_per_sm_min = std::min(l.blocks_per_sm_min, v.blocks_per_sm);
      l.blocks_per_sm_max = std::max(l.blocks_per_sm_max, v.blocks_per_sm);
      l.waves_min = std::min(l.waves_min, w.waves);
      l.waves_max = std::max(l.waves_max, w.waves);
      l.wave_efficiency_min = std::min(l.wave_efficiency_min, w.efficiency);
    }
    rows.push_back(r);
  }
  if (known) {
    l.wave_efficiency = weighted_ticks > 0 ? weighted / static_cast<double>(weighted_ticks) : l.wave_efficiency_min;
  } else {
    l.blocks_per_sm_min = 0;
    l.waves_min = 0;
    l.wave_efficiency_min = 0;
  }
  l.shaped_s = static_cast<double>(shaped_ticks) * tick_seconds;
  l.below_sms_s = static_cast<double>(below_ticks) * tick_seconds;
  std::sort(rows.begin(), rows.end(), [](const KernelShapeRow& a, const KernelShapeRow& b) {
    if (a.total_s != b.total_s) return a.total_s > b.total_s;
    return a.blocks < b.blocks;
  });
  if (rows.size() > KernelTable::kTopShapes) rows.resize(KernelTable::kTopShapes);
  l.top_shapes = std::move(rows);
  return l;
}

}  // namespace

std::string demangled_kernel_name(const char* name) {
  if (name == nullptr) return "(unnamed kernel)";
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (d == nullptr || status != 0) {
    std::free(d);
    return name;
  }
  std::string out(d);
  std::free(d);
  return out;
}

void KernelTable::add_shape(Entry* e, uint64_t duration_ticks, const LaunchShape& shape) {
  for (size_t i = 0; i < e->shapes.size(); ++i) {
    if (e->shapes[i].shape == shape) {
      ++e->shapes[i].count;
      e->shapes[i].ticks += duration_ticks;
      e->last = i;
      return;
    }
  }
  if (e->shapes.size() >= kMaxShapes) return;  // counted in the name's time, not its shapes
  Shape s;
  s.shape = shape;
  s.blocks_per_sm = occupancy(shape, limits_).blocks_per_sm;
  s.count = 1;
  s.ticks = duration_ticks;
  e->last = e->shapes.size();
  e->shapes.push_back(s);
}

void KernelTable::fill(size_t n, double tick_seconds, std::vector<KernelRow>* out) const {
  out->clear();
  absl::flat_hash_map<std::string, Merged> merged;
  for (const auto& [name, e] : by_name_) {
    Merged& m = merged[demangled_kernel_name(name)];
    m.count += e.count;
    m.ticks += e.ticks;
    for (const Shape& s : e.shapes) m.add_shape(s.shape, s.blocks_per_sm, s.count, s.ticks);
  }
  std::vector<std::pair<std::string, Merged>> rows(merged.begin(), merged.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.ticks != b.second.ticks ? a.second.ticks > b.second.ticks : a.first < b.first;
  });
  if (rows.size() > n) rows.resize(n);
  const int sm_count = limits_.known() ? limits_.sm_count : 0;
  for (auto& [name, e] : rows) {
    KernelRow row;
    row.name = std::move(name);
    row.count = e.count;
    row.total_s = static_cast<double>(e.ticks) * tick_seconds;
    row.mean_s = e.count > 0 ? row.total_s / static_cast<double>(e.count) : 0;
    row.launches = launches_of(e, sm_count, tick_seconds);
    out->push_back(std::move(row));
  }
}

}  // namespace timeline
}  // namespace gpuslack

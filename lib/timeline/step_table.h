// Busy and idle per step of one device (timeline.h's Steps), in bounded
// memory.
//
// A step is the time between two consecutive boundaries: the program's step
// marks (ledger::mark_step), or, when the program marks none, the snapshot
// times the timeline adds (a step per summary interval, the first one from
// the window's start). A StepTracker follows one device's sweep: it is told
// the boundaries (add_boundary), the idle pieces in time order
// (charge_idle), and how far the sweep has gone (walk_to); each step it
// closes goes to its StepTable with wall = end - start, idle = the idle
// pieces inside it, busy = wall - idle.
//
// StepTable keeps what the summary prints without keeping every step: the
// count, a uniform sample of at most kSampleSize steps for the percentiles
// (every step while they fit, then reservoir sampling from a fixed seed, so
// results are deterministic), and the few most idle steps.
//
// Percentiles are nearest-rank over the sample: busy share p50 and p99 (the
// low tail: the 1st percentile of busy share, timeline.h), wall p50 and p99
// (the long tail). A step of zero wall (two marks at one tick) counts in
// the wall percentiles, not in the busy share's.
//
// Thread safety: none; owned by one device's analysis. Copyable (the
// provisional snapshot works on a copy).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "timeline/timeline.h"

namespace gpuslack {
namespace timeline {

class StepTable {
 public:
  static constexpr size_t kSampleSize = size_t{1} << 16;

  explicit StepTable(size_t worst = 5) : worst_n_(worst) {}

  void record(uint64_t index, uint64_t wall_ticks, uint64_t idle_ticks);
  uint64_t count() const { return count_; }
  // Fills *out (from_marks left as is).
  void fill(double tick_seconds, Steps* out) const;

 private:
  struct Row {
    uint64_t index, wall, idle;
  };
  size_t worst_n_;
  uint64_t count_ = 0;
  uint64_t rng_ = 0x9e3779b97f4a7c15ull;  // reservoir sampling, fixed seed
  std::vector<Row> sample_;
  std::vector<Row> worst_;  // at most worst_n_, unordered
};

class StepTracker {
 public:
  // open_at_start: a step numbered first_index is open from `start`
  // (summary intervals); otherwise the first boundary opens the first step
  // (program marks).
  StepTracker(uint64_t start, bool open_at_start, uint64_t first_index, size_t worst);

  // A boundary at `ticks` whose step (the one it opens) has number `index`.
  // Boundaries before the sweep's position are dropped (false).
  bool add_boundary(uint64_t ticks, uint64_t index);
  // Idle [begin, end), begin >= every position walked to so far.
  void charge_idle(uint64_t begin, uint64_t end);
  // Closes the steps whose end boundary is at or before `ticks`.
  void walk_to(uint64_t ticks);
  // The next boundary not yet passed (UINT64_MAX: none). Idle that ends by
  // it splits no step: add_idle_within_step, the fast path.
  uint64_t next_boundary() const { return pending_.empty() ? UINT64_MAX : pending_.front().ticks; }
  void add_idle_within_step(uint64_t begin, uint64_t end) {
    if (open_) open_idle_ += end - begin;
    walked_ = end;
  }

  const StepTable& table() const { return table_; }
  uint64_t boundaries_dropped() const { return dropped_; }

 private:
  struct Boundary {
    uint64_t ticks, index;
  };
  void close_at(const Boundary& b);

  uint64_t walked_;
  bool open_;
  uint64_t open_start_ = 0, open_index_ = 0, open_idle_ = 0;
  std::deque<Boundary> pending_;  // sorted by ticks
  uint64_t dropped_ = 0;
  StepTable table_;
};

}  // namespace timeline
}  // namespace gpuslack

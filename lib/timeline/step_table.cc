// Busy and idle per step (step_table.h).
#include "timeline/step_table.h"

#include <algorithm>
#include <cmath>

#include "base/top_n.h"

namespace gpuslack {
namespace timeline {

namespace {

// Nearest rank: the smallest value with at least p of the values at or
// below it. `v` sorted ascending, not empty.
template <typename T>
T nearest_rank(const std::vector<T>& v, double p) {
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  rank = std::clamp<size_t>(rank, 1, v.size());
  return v[rank - 1];
}

}  // namespace

void StepTable::record(uint64_t index, uint64_t wall_ticks, uint64_t idle_ticks) {
  const Row row{index, wall_ticks, idle_ticks};
  ++count_;
  if (sample_.size() < kSampleSize) {
    sample_.push_back(row);
  } else {
    // xorshift64: deterministic; replaces a kept step with probability
    // kSampleSize / count_.
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 7;
    rng_ ^= rng_ << 17;
    const uint64_t slot = rng_ % count_;
    if (slot < kSampleSize) sample_[slot] = row;
  }
  // Ties: the earlier step stays (offer_to_top keeps a kept item on a tie).
  offer_to_top(worst_, worst_n_, row, [](const Row& r) { return r.idle; });
}

void StepTable::fill(double tick_seconds, Steps* out) const {
  out->count = count_;
  out->busy_share_p50 = out->busy_share_p99 = 0;
  out->wall_p50_s = out->wall_p99_s = 0;
  out->worst.clear();
  if (sample_.empty()) return;
  std::vector<uint64_t> walls;
  std::vector<double> shares;
  walls.reserve(sample_.size());
  shares.reserve(sample_.size());
  for (const Row& r : sample_) {
    walls.push_back(r.wall);
    if (r.wall > 0) shares.push_back(static_cast<double>(r.wall - r.idle) / static_cast<double>(r.wall));
  }
  std::sort(walls.begin(), walls.end());
  std::sort(shares.begin(), shares.end());
  out->wall_p50_s = static_cast<double>(nearest_rank(walls, 0.50)) * tick_seconds;
  out->wall_p99_s = static_cast<double>(nearest_rank(walls, 0.99)) * tick_seconds;
  if (!shares.empty()) {
    out->busy_share_p50 = nearest_rank(shares, 0.50);
    out->busy_share_p99 = nearest_rank(shares, 0.01);
  }
  std::vector<Row> worst = worst_;
  std::sort(worst.begin(), worst.end(), [](const Row& a, const Row& b) {
    return a.idle != b.idle ? a.idle > b.idle : a.index < b.index;
  });
  for (const Row& r : worst) {
    StepRow row;
    row.index = r.index;
    row.wall_s = static_cast<double>(r.wall) * tick_seconds;
    row.idle_s = static_cast<double>(r.idle) * tick_seconds;
    row.busy_s = static_cast<double>(r.wall - r.idle) * tick_seconds;
    out->worst.push_back(row);
  }
}

StepTracker::StepTracker(uint64_t start, bool open_at_start, uint64_t first_index, size_t worst)
    : walked_(start), open_(open_at_start), open_start_(start), open_index_(first_index), table_(worst) {}

bool StepTracker::add_boundary(uint64_t ticks, uint64_t index) {
  if (ticks < walked_) {
    ++dropped_;
    return false;
  }
  const Boundary b{ticks, index};
  if (pending_.empty() || pending_.back().ticks <= ticks) {
    pending_.push_back(b);
  } else {  // out of order: rare, and the pending boundaries are few
    auto at = std::upper_bound(pending_.begin(), pending_.end(), ticks,
                               [](uint64_t t, const Boundary& x) { return t < x.ticks; });
    pending_.insert(at, b);
  }
  return true;
}

void StepTracker::close_at(const Boundary& b) {
  if (open_) table_.record(open_index_, b.ticks - open_start_, open_idle_);
  open_ = true;
  open_start_ = b.ticks;
  open_index_ = b.index;
  open_idle_ = 0;
}

void StepTracker::walk_to(uint64_t ticks) {
  while (!pending_.empty() && pending_.front().ticks <= ticks) {
    close_at(pending_.front());
    pending_.pop_front();
  }
  walked_ = std::max(walked_, ticks);
}

void StepTracker::charge_idle(uint64_t begin, uint64_t end) {
  walk_to(begin);
  while (!pending_.empty() && pending_.front().ticks < end) {
    const Boundary b = pending_.front();
    pending_.pop_front();
    if (open_) open_idle_ += b.ticks - begin;
    close_at(b);
    begin = b.ticks;
  }
  if (open_) open_idle_ += end - begin;
  walked_ = end;
}

}  // namespace timeline
}  // namespace gpuslack

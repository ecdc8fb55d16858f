#include "base/time_buckets.h"

#include <algorithm>
#include <atomic>
#include <cmath>

namespace gpuslack {

namespace {
std::atomic<uint64_t> g_series_origin{0};
}

void set_series_origin_ticks(uint64_t ticks) { g_series_origin.store(ticks, std::memory_order_release); }
uint64_t series_origin_ticks() { return g_series_origin.load(std::memory_order_acquire); }

int TimeBuckets::index_for(double t_s) {
  if (!(t_s > 0) || !std::isfinite(t_s)) return 0;  // negative, zero, NaN or infinite
  double i = std::floor(t_s / interval_s_);
  while (i >= kMaxBuckets) {
    merge_pairs();
    i = std::floor(t_s / interval_s_);
  }
  return static_cast<int>(i);
}

void TimeBuckets::merge_pairs() {
  for (int i = 0; i < kMaxBuckets / 2; ++i) {
    const int a = 2 * i, b = 2 * i + 1;
    switch (reduce_) {
      case Reduce::kSum:
      case Reduce::kMean: sum_[i] = sum_[a] + sum_[b]; break;
      case Reduce::kLast: sum_[i] = count_[b] ? sum_[b] : sum_[a]; break;
      case Reduce::kMax:
        sum_[i] = !count_[a] ? sum_[b] : !count_[b] ? sum_[a] : std::max(sum_[a], sum_[b]);
        break;
    }
    count_[i] = count_[a] + count_[b];
  }
  std::fill(sum_ + kMaxBuckets / 2, sum_ + kMaxBuckets, 0.0);
  std::fill(count_ + kMaxBuckets / 2, count_ + kMaxBuckets, 0u);
  size_ = (size_ + 1) / 2;
  interval_s_ *= 2;
}

void TimeBuckets::add(double t_s, double value) {
  const int i = index_for(t_s);
  switch (reduce_) {
    case Reduce::kSum:
    case Reduce::kMean: sum_[i] += value; break;
    case Reduce::kLast: sum_[i] = value; break;
    case Reduce::kMax: sum_[i] = count_[i] ? std::max(sum_[i], value) : value; break;
  }
  ++count_[i];
  size_ = std::max(size_, i + 1);
}

void TimeBuckets::add_span(double begin_s, double end_s) {
  begin_s = std::max(begin_s, 0.0);
  if (!(end_s > begin_s)) return;
  index_for(end_s);  // widen first: the span's end must fit
  int i = index_for(begin_s);
  for (double at = begin_s; at < end_s; ++i) {
    if (i >= kMaxBuckets) break;  // rounding at the very end
    const double bucket_end = (i + 1) * interval_s_;
    const double to = std::min(end_s, bucket_end);
    if (to > at) {
      sum_[i] += to - at;
      ++count_[i];
      size_ = std::max(size_, i + 1);
    }
    at = bucket_end;
  }
}

void TimeBuckets::widen_to(double interval_s) {
  while (interval_s_ < interval_s * (1 - 1e-9)) merge_pairs();
}

void TimeBuckets::merge(const TimeBuckets& other) {
  TimeBuckets o = other;
  o.widen_to(interval_s_);
  widen_to(o.interval_s_);
  for (int i = 0; i < o.size_ && i < kMaxBuckets; ++i) {
    sum_[i] += o.sum_[i];
    count_[i] += o.count_[i];
  }
  size_ = std::max(size_, o.size_);
}

double TimeBuckets::value(int i) const {
  if (i < 0 || i >= size_ || count_[i] == 0) return 0;
  return reduce_ == Reduce::kMean ? sum_[i] / count_[i] : sum_[i];
}

std::vector<double> TimeBuckets::values() const {
  std::vector<double> out(static_cast<size_t>(size_));
  for (int i = 0; i < size_; ++i) out[static_cast<size_t>(i)] = value(i);
  return out;
}

std::vector<double> TimeBuckets::shares(double end_s) const {
  std::vector<double> out(static_cast<size_t>(size_));
  for (int i = 0; i < size_; ++i) {
    const double start = i * interval_s_;
    const double width = std::min(interval_s_, end_s - start);
    out[static_cast<size_t>(i)] = width > 0 ? std::min(1.0, value(i) / width) : 0;
  }
  return out;
}

}  // namespace gpuslack

// TimeBuckets: one figure over the run, in at most kMaxBuckets buckets of
// equal width, for the summary's "series" (docs/summary.schema.json).
//
// Bucket i covers [i × interval, (i+1) × interval) seconds after the
// series' origin (the session's start). The width starts at one second;
// when a value lands past the last bucket, neighbours merge pairwise and
// the width doubles, so a run of any length fits in fixed memory at a
// resolution that coarsens with its length. Two series with the same origin
// can be brought to one width with widen_to() (their widths are both a
// power of two times a second).
//
// What a bucket holds depends on the reduction: kSum adds (seconds of idle
// spread over the buckets a span covers: add_span), kMean averages the
// values added, kLast keeps the latest one, kMax the highest.
//
// Plain data: no allocation, no lock (the owner serializes); copyable.
#pragma once

#include <cstdint>
#include <vector>

namespace gpuslack {

class TimeBuckets {
 public:
  static constexpr int kMaxBuckets = 240;
  enum class Reduce { kSum, kMean, kLast, kMax };

  explicit TimeBuckets(Reduce reduce = Reduce::kMean, double interval_s = 1.0)
      : reduce_(reduce), interval_s_(interval_s) {}

  // A value at `t_s` seconds after the origin (a negative time counts as 0).
  void add(double t_s, double value);
  // Adds to each bucket the part of [begin_s, end_s) inside it, in seconds
  // (kSum: idle time).
  void add_span(double begin_s, double end_s);
  // Merges pairs until the width is at least `interval_s`.
  void widen_to(double interval_s);
  // Adds `other`'s buckets into these, both at the wider of the two widths
  // (kSum and kMean: sums and counts add; the same origin assumed).
  void merge(const TimeBuckets& other);

  double interval_s() const { return interval_s_; }
  // Buckets up to the last one touched.
  int size() const { return size_; }
  // The reduced value of bucket i (0 for one nothing reached).
  double value(int i) const;
  // Every bucket's value / its width, the last one's width cut at `end_s`
  // (kSum: the share of the time; 0 where the width is 0).
  std::vector<double> shares(double end_s) const;
  std::vector<double> values() const;

 private:
  int index_for(double t_s);  // widens until t_s fits
  void merge_pairs();

  Reduce reduce_;
  double interval_s_;
  int size_ = 0;
  double sum_[kMaxBuckets] = {};
  uint32_t count_[kMaxBuckets] = {};
};

// The origin of the process's series, in clock::ticks(): set once by the
// session at its start (0 until then). Any thread.
void set_series_origin_ticks(uint64_t ticks);
uint64_t series_origin_ticks();

}  // namespace gpuslack

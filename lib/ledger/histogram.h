// A log2-bucket histogram of durations in ticks: bucket b holds values in
// [2^b, 2^(b+1)) (bucket 0 also holds 0). Percentiles come out as the
// geometric middle of the bucket that holds them: within a factor of
// sqrt(2) of the truth, which is what a "p99 of cudaFree" needs.
//
// Thread safety: add() is for one writer; merge/percentile on copies.
#pragma once

#include <array>
#include <cstdint>

namespace gpuslack {
namespace ledger {

struct Histogram {
  static constexpr int kBuckets = 64;
  std::array<uint64_t, kBuckets> counts{};

  static int bucket_of(uint64_t v) { return v ? 63 - __builtin_clzll(v) : 0; }
  void add(uint64_t v) { ++counts[bucket_of(v)]; }
  void merge(const Histogram& o) {
    for (int i = 0; i < kBuckets; ++i) counts[i] += o.counts[i];
  }
  uint64_t total() const {
    uint64_t n = 0;
    for (uint64_t c : counts) n += c;
    return n;
  }
  // The value below which a fraction `q` (0..1) of the samples lie,
  // estimated as described above; 0 when empty.
  double percentile(double q) const;
};

}  // namespace ledger
}  // namespace gpuslack

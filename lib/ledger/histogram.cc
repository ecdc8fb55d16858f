#include "ledger/histogram.h"

#include <cmath>

namespace gpuslack {
namespace ledger {

double Histogram::percentile(double q) const {
  uint64_t n = total();
  if (n == 0) return 0;
  if (q < 0) q = 0;
  if (q > 1) q = 1;
  // The rank of the q-quantile, 1-based.
  uint64_t rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(n)));
  if (rank == 0) rank = 1;
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += counts[b];
    if (seen >= rank) {
      if (b == 0) return 1;  // [0, 2)
      // Geometric middle of [2^b, 2^(b+1)).
      return std::ldexp(std::sqrt(2.0), b);
    }
  }
  return std::ldexp(1.0, kBuckets - 1);
}

}  // namespace ledger
}  // namespace gpuslack

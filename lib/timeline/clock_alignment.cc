#include "timeline/clock_alignment.h"

#include <cmath>

namespace gpuslack {
namespace timeline {

void ClockAlignment::add(const ClockSample& s) {
  if (!anchored_) {
    anchor_ = s;
    anchored_ = true;
    return;
  }
  if (s.ns < anchor_.ns + kMinSpanNs || s.ticks <= anchor_.ticks) return;
  ticks_per_ns_ = static_cast<double>(s.ticks - anchor_.ticks) / static_cast<double>(s.ns - anchor_.ns);
}

uint64_t ClockAlignment::to_ticks(uint64_t ns) const {
  if (ns == 0) return 0;
  // Differences first, in integers: absolute times near 2^60 would lose
  // hundreds of ns in a double.
  int64_t d_ns = static_cast<int64_t>(ns - anchor_.ns);
  int64_t d_ticks = std::llround(static_cast<double>(d_ns) * ticks_per_ns_);
  if (d_ticks < 0 && static_cast<uint64_t>(-d_ticks) >= anchor_.ticks) return 1;  // clamp: never "no timestamp"
  return anchor_.ticks + static_cast<uint64_t>(d_ticks);
}

uint64_t ClockAlignment::to_ns(uint64_t ticks) const {
  int64_t d_ticks = static_cast<int64_t>(ticks - anchor_.ticks);
  int64_t d_ns = std::llround(static_cast<double>(d_ticks) / ticks_per_ns_);
  if (d_ns < 0 && static_cast<uint64_t>(-d_ns) > anchor_.ns) return 0;
  return anchor_.ns + static_cast<uint64_t>(d_ns);
}

}  // namespace timeline
}  // namespace gpuslack

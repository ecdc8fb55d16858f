#include "alloc/timeline.h"

#include <algorithm>

#include "base/clock.h"

namespace gpuslack {
namespace alloc {

Timeline::Timeline() : origin_(clock::ticks()), open_{origin_, 0, 0} {
  closed_.reserve(kMaxSamples);
}

void Timeline::note(uint64_t allocated, uint64_t reserved) {
  uint64_t now = clock::ticks();
  if (!empty_ && now - open_.start >= window_) {
    closed_.push_back(open_);
    if (closed_.size() == kMaxSamples) decimate();
    open_ = Sample{now, 0, 0};
  } else if (empty_) {
    open_.start = now;
  }
  empty_ = false;
  open_.allocated = std::max(open_.allocated, allocated);
  open_.reserved = std::max(open_.reserved, reserved);
}

void Timeline::decimate() {
  size_t out = 0;
  for (size_t i = 0; i < closed_.size(); i += 2) {
    Sample s = closed_[i];
    if (i + 1 < closed_.size()) {
      s.allocated = std::max(s.allocated, closed_[i + 1].allocated);
      s.reserved = std::max(s.reserved, closed_[i + 1].reserved);
    }
    closed_[out++] = s;
  }
  closed_.resize(out);
  window_ *= 2;
}

Timeline::Samples Timeline::samples() const {
  Samples s;
  s.origin_ticks = origin_;
  double tick = clock::tick_seconds();
  auto add = [&](const Sample& x) {
    s.t_s.push_back(static_cast<double>(x.start - origin_) * tick);
    s.allocated.push_back(x.allocated);
    s.reserved.push_back(x.reserved);
  };
  for (const Sample& x : closed_) add(x);
  if (!empty_) add(open_);
  return s;
}

}  // namespace alloc
}  // namespace gpuslack

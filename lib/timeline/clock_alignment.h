// CUPTI's timestamps (nanoseconds, CUPTI's own clock: cuptiGetTimestamp)
// turned into the host clock's ticks (base/clock.h), so that GPU records and
// host intervals compare directly.
//
// Note [CUPTI time to ticks]: gpuslack samples both clocks, it does not
// make CUPTI use its clock. cuptiActivityRegisterTimestampCallback would
// make every record carry our ticks, but it is process-wide: every other
// subscriber (Nsight Systems, Kineto) would get gpuslack's clock in its own
// records, which breaks them. So: a sample is one cuptiGetTimestamp read
// bracketed by two tick reads (the narrowest of a few tries); it says the
// CUPTI time `ns` happened at the bracket's middle, within half its width.
// The first sample (at start) is the anchor; the latest (each snapshot, and
// the worker about once a second) gives the slope from the anchor once the
// two are at least kMinSpanNs apart; before that the slope is the clock's
// own calibration (clock::tick_seconds(), within 0.1%, over a few ms of
// records at most). A record at CUPTI time t is then at
//   anchor.ticks + (t - anchor.ns) * ticks_per_ns.
// The error: half the anchor's bracket (typically well under a
// microsecond: cuptiGetTimestamp costs tens of ns) plus the slope's, which
// is at most (bracket_a + bracket_b) / span relative (1 us over 1 s: one
// part per million, 0.4 ms over a 400 s run, far below the gaps that matter).
// Records already converted keep the slope they got; the slope moves by
// parts per million between samples. CUPTI's records and its timestamp
// read share one clock (cupti_activity.h, cuptiGetTimestamp).
//
// Thread safety: none of its own; the session guards it.
#pragma once

#include <cstdint>

namespace gpuslack {
namespace timeline {

struct ClockSample {
  uint64_t ns = 0;           // CUPTI's time
  uint64_t ticks = 0;        // the bracket's middle
  uint64_t half_width = 0;   // ticks
};

class ClockAlignment {
 public:
  static constexpr uint64_t kMinSpanNs = 100'000'000;  // 100 ms

  // `nominal_ticks_per_ns`: the host clock's own calibration, used until
  // two samples are far enough apart.
  explicit ClockAlignment(double nominal_ticks_per_ns) : ticks_per_ns_(nominal_ticks_per_ns) {}

  // The first sample anchors; later ones refine the slope.
  void add(const ClockSample& s);
  bool anchored() const { return anchored_; }

  // CUPTI time -> ticks (0 stays 0: CUPTI's "no timestamp").
  uint64_t to_ticks(uint64_t ns) const;
  double ticks_per_ns() const { return ticks_per_ns_; }
  // Ticks -> CUPTI time (the inverse, for tests and the watermark).
  uint64_t to_ns(uint64_t ticks) const;
  // The bound on the anchor's error, in ticks.
  uint64_t anchor_error_ticks() const { return anchor_.half_width; }

 private:
  bool anchored_ = false;
  ClockSample anchor_;
  double ticks_per_ns_;
};

// One sample of `get_timestamp` (CUPTI's) against clock::ticks(): the
// narrowest of `tries` brackets. False when get_timestamp fails.
template <typename GetTimestamp>
bool sample_clocks(GetTimestamp get_timestamp, int tries, ClockSample* out);

}  // namespace timeline
}  // namespace gpuslack

#include "base/clock.h"

namespace gpuslack {
namespace timeline {

template <typename GetTimestamp>
bool sample_clocks(GetTimestamp get_timestamp, int tries, ClockSample* out) {
  bool any = false;
  for (int i = 0; i < tries; ++i) {
    uint64_t ns = 0;
    uint64_t before = clock::ticks();
    bool ok = get_timestamp(&ns);
    uint64_t after = clock::ticks();
    if (!ok || after < before) continue;
    uint64_t half = (after - before) / 2;
    if (!any || half < out->half_width) {
      out->ns = ns;
      out->ticks = before + half;
      out->half_width = half;
      any = true;
    }
  }
  return any;
}

}  // namespace timeline
}  // namespace gpuslack

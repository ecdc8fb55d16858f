// What one idle gap of a device is charged to (Note [Why the GPU idled] in
// timeline.h), instant by instant, from the host's blocked calls
// (ledger::HostInterval).
//
// An IdleAttributor walks one device's gaps in time order over the blocked
// calls of one commit, sorted by start. For each piece [from, to) of a gap
// that began at gap_start it hands back sub-pieces, each with its cause:
//   - covered by blocked calls: the call of the highest-priority category
//     among those in flight (Category's order: allocation, copies,
//     collectives, synchronization, other), ties to the earliest start,
//     then the lower tid; the piece carries that call and its site key;
//   - covered by none: launch-bound when the whole gap (to - gap_start) is
//     no longer than the launch-bound threshold (inclusive), else
//     host-bound.
// Adjacent sub-pieces with the same charge come back as one.
//
// A blocked host stalls every device: each device's analysis walks the same
// intervals with an attributor of its own.
//
// Fast path (inline below): no blocked call near the gap, one charge, no
// allocation. The slow path (out of line, idle_attribution.cc) splits the
// gap at the calls' boundaries; it runs for gaps that blocked calls touch.
//
// Thread safety: none; one attributor per device per commit, on the
// analysis's thread. It keeps a reference to the intervals, which must
// outlive it and stay unchanged.
#pragma once

#include <cstdint>
#include <vector>

#include "ledger/api_call.h"
#include "ledger/host_activity.h"
#include "timeline/timeline.h"

namespace gpuslack {
namespace timeline {

// Where a piece of idle time goes: a cause and, for a blocked call, the call
// and its site key (0: no site captured).
struct IdleCharge {
  Idle cause = Idle::kHostBound;
  const ApiCall* call = nullptr;
  uint64_t site_key = 0;
  bool operator==(const IdleCharge& o) const {
    return cause == o.cause && call == o.call && site_key == o.site_key;
  }
};

// The cause a blocked call's category charges to.
inline Idle idle_cause_of(Category c) {
  return static_cast<Idle>(static_cast<int>(Idle::kAllocation) + static_cast<int>(c));
}

class IdleAttributor {
 public:
  // `sorted` by start_ticks (then tid), every call non-null.
  IdleAttributor(const std::vector<ledger::HostInterval>& sorted, uint64_t launch_bound_gap_ticks)
      : hosts_(sorted), launch_gap_(launch_bound_gap_ticks) {}

  // Charges [from, to) (gap_start <= from < to; successive calls with
  // non-decreasing `from`): calls charge(IdleCharge, begin, end) for
  // consecutive sub-pieces that tile [from, to).
  template <typename Charge>
  void attribute(uint64_t gap_start, uint64_t from, uint64_t to, Charge&& charge) {
    while (next_ < hosts_.size() && hosts_[next_].start_ticks < to) active_.push_back(next_++);
    if (!active_.empty()) {
      split(gap_start, from, to);
      for (const Piece& p : pieces_) charge(p.charge, p.begin, p.end);
      return;
    }
    charge(unblocked(gap_start, to), from, to);
  }

 private:
  struct Piece {
    IdleCharge charge;
    uint64_t begin, end;
  };
  IdleCharge unblocked(uint64_t gap_start, uint64_t to) const {
    IdleCharge c;
    c.cause = to - gap_start <= launch_gap_ ? Idle::kLaunchBound : Idle::kHostBound;
    return c;
  }
  // Slow path: drops the calls that ended by `from`, splits [from, to) at the
  // boundaries of those in flight into pieces_.
  void split(uint64_t gap_start, uint64_t from, uint64_t to);

  const std::vector<ledger::HostInterval>& hosts_;
  uint64_t launch_gap_;
  size_t next_ = 0;              // first interval not yet admitted
  std::vector<size_t> active_;   // admitted, not known to have ended
  std::vector<Piece> pieces_;    // split's result (reused)
  std::vector<uint64_t> cuts_;   // split's scratch (reused)
};

}  // namespace timeline
}  // namespace gpuslack

// The slow path of IdleAttributor (idle_attribution.h): a gap that blocked
// calls touch, split at their boundaries. The calls in flight at once are
// few (one per application thread at most), so each sub-piece looks at all
// of them.
#include "timeline/idle_attribution.h"

#include <algorithm>

namespace gpuslack {
namespace timeline {

namespace {

// Whether a outranks b for the same instant (idle_attribution.h).
bool outranks(const ledger::HostInterval& a, const ledger::HostInterval& b) {
  if (a.call->category != b.call->category) return a.call->category < b.call->category;
  if (a.start_ticks != b.start_ticks) return a.start_ticks < b.start_ticks;
  return a.tid < b.tid;
}

}  // namespace

void IdleAttributor::split(uint64_t gap_start, uint64_t from, uint64_t to) {
  pieces_.clear();
  // Calls that ended by `from` cannot touch this gap or any later one.
  active_.erase(std::remove_if(active_.begin(), active_.end(),
                               [&](size_t i) { return hosts_[i].end_ticks <= from; }),
                active_.end());
  cuts_.clear();
  cuts_.push_back(from);
  cuts_.push_back(to);
  for (size_t i : active_) {
    const ledger::HostInterval& h = hosts_[i];
    if (h.start_ticks > from && h.start_ticks < to) cuts_.push_back(h.start_ticks);
    if (h.end_ticks > from && h.end_ticks < to) cuts_.push_back(h.end_ticks);
  }
  std::sort(cuts_.begin(), cuts_.end());
  cuts_.erase(std::unique(cuts_.begin(), cuts_.end()), cuts_.end());
  const IdleCharge none = unblocked(gap_start, to);
  for (size_t k = 0; k + 1 < cuts_.size(); ++k) {
    const uint64_t b = cuts_[k], e = cuts_[k + 1];
    const ledger::HostInterval* best = nullptr;
    for (size_t i : active_) {
      const ledger::HostInterval& h = hosts_[i];
      if (h.start_ticks <= b && h.end_ticks >= e && (best == nullptr || outranks(h, *best))) best = &h;
    }
    IdleCharge c = none;
    if (best != nullptr) {
      c.cause = idle_cause_of(best->call->category);
      c.call = best->call;
      c.site_key = best->site_key;
    }
    if (!pieces_.empty() && pieces_.back().charge == c) {
      pieces_.back().end = e;
    } else {
      pieces_.push_back(Piece{c, b, e});
    }
  }
}

}  // namespace timeline
}  // namespace gpuslack

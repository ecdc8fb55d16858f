// The figures of threads that have exited (Note [Exited threads] in
// ledger/ledger.h), in memory that does not grow with their number.
//
// When a thread exits, the ledger folds its figures in here (add) and reuses
// its shard. Kept:
//   - the kListedExitedThreads threads that lost most (allocation + copies +
//     collectives), by tid and name, with their time per category; a thread
//     that lost more than the least of them takes its place, and that one
//     joins the others;
//   - every other exited thread, summed into one row (its count and its
//     time per category);
//   - the calls, copies, call sites and pageable-copy sites of all of them,
//     merged as the summary merges threads (by call, by copy cell, by call
//     site), so that no figure is lost.
// Memory: bounded by the hooked calls, the copy cells and the distinct call
// sites (a property of the program's code, not of its threads).
//
// Thread safety: none of its own; the ledger calls it under its fold lock.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "ledger/ledger.h"

namespace gpuslack {
namespace ledger {

class ExitedThreads {
 public:
  // Folds one exited thread's figures (a kLive row of its last figures). A
  // thread that made no call is not counted.
  void add(const ThreadFigures& t);

  // Appends the listed threads (kExited rows, most lost first) and, once a
  // thread has exited, the kOtherExited row.
  void append_to(std::vector<ThreadFigures>* out) const;

  // Exited threads folded so far.
  uint64_t threads() const { return listed_.size() + others_.threads; }

 private:
  using SiteKey = std::pair<uint16_t, std::vector<void*>>;  // call id, frames

  std::vector<ThreadFigures> listed_;  // at most kListedExitedThreads, time only
  ThreadFigures others_ = [] {
    ThreadFigures t;
    t.kind = ThreadKind::kOtherExited;
    t.threads = 0;
    return t;
  }();
  std::map<uint16_t, CallFigures> calls_;                    // by ApiCall id
  std::map<std::tuple<int, int, bool>, CopyFigures> copies_;  // by (kind, host, async_api)
  std::map<SiteKey, CallSiteFigures> call_sites_;
  std::map<SiteKey, PageableSiteFigures> pageable_sites_;
};

}  // namespace ledger
}  // namespace gpuslack

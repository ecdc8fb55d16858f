// See exited_threads.h. Called at a thread's exit and at report time only.
#include "ledger/exited_threads.h"

#include <algorithm>
#include <optional>

#include "base/top_n.h"

namespace gpuslack {
namespace ledger {
namespace {

uint64_t lost_ticks(const ThreadFigures& t) {
  uint64_t lost = 0;
  for (int c = 0; c < kCategoryCount; ++c)
    if (counts_as_lost(static_cast<Category>(c))) lost += t.ticks[c];
  return lost;
}

// `time` joins the summed row: its thread count and its time.
void fold_time(const ThreadFigures& time, ThreadFigures* others) {
  others->threads += time.threads;
  for (int c = 0; c < kCategoryCount; ++c) others->ticks[c] += time.ticks[c];
}

}  // namespace

void ExitedThreads::add(const ThreadFigures& t) {
  if (t.calls.empty()) return;
  ThreadFigures time;
  time.kind = ThreadKind::kExited;
  time.tid = t.tid;
  time.name = t.name;
  std::copy(std::begin(t.ticks), std::end(t.ticks), std::begin(time.ticks));
  // Kept by name among the ones that lost most, or summed with the others.
  std::optional<ThreadFigures> out =
      offer_to_top(listed_, static_cast<size_t>(kListedExitedThreads), std::move(time), lost_ticks);
  if (out) fold_time(*out, &others_);
  for (const CallFigures& c : t.calls) {
    merge_call_figures(&calls_[c.call->id], c);
  }
  for (const CopyFigures& c : t.copies) {
    CopyFigures& m = copies_[{static_cast<int>(c.copy), static_cast<int>(c.host), c.async_api}];
    m.copy = c.copy;
    m.host = c.host;
    m.async_api = c.async_api;
    m.count += c.count;
    m.bytes += c.bytes;
    m.ticks += c.ticks;
  }
  for (const CallSiteFigures& s : t.call_sites) {
    CallSiteFigures& m = call_sites_[{s.call->id, s.frames}];
    if (m.call == nullptr) {
      m.call = s.call;
      m.frames = s.frames;
    }
    m.count += s.count;
    m.ticks += s.ticks;
    m.max_ticks = std::max(m.max_ticks, s.max_ticks);
  }
  for (const PageableSiteFigures& s : t.pageable_sites) {
    PageableSiteFigures& m = pageable_sites_[{s.call->id, s.frames}];
    if (m.call == nullptr) {
      m.call = s.call;
      m.frames = s.frames;
    }
    m.samples += s.samples;
    m.copies += s.copies;
    m.bytes += s.bytes;
  }
}

void ExitedThreads::append_to(std::vector<ThreadFigures>* out) const {
  if (threads() == 0) return;
  std::vector<ThreadFigures> listed = listed_;
  sort_largest_first(listed, lost_ticks);
  for (ThreadFigures& t : listed) out->push_back(std::move(t));
  ThreadFigures others = others_;
  for (const auto& [id, c] : calls_) others.calls.push_back(c);
  for (const auto& [key, c] : copies_) others.copies.push_back(c);
  for (const auto& [key, s] : call_sites_) others.call_sites.push_back(s);
  for (const auto& [key, s] : pageable_sites_) others.pageable_sites.push_back(s);
  out->push_back(std::move(others));
}

}  // namespace ledger
}  // namespace gpuslack

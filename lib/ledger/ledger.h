// The stall ledger: per-thread figures of every hooked call, merged only at
// report time.
//
// Each thread writes its own shard (made on its first call, never freed, so
// figures of exited threads stay); a shard's counters are single-writer
// relaxed atomics, so the hot path is a few plain stores to memory no other
// thread writes, and a report may read them while threads run.
//
// Hot path (record): no lock, no allocation (after the thread's first call).
// Slow path (record_call_site): only for calls that blocked past the
// call-site threshold; takes the shard's own lock.
//
// Thread safety: every function, any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ledger/api_call.h"
#include "ledger/histogram.h"

namespace gpuslack {
namespace ledger {

inline constexpr int kMaxCalls = 128;
inline constexpr int kMaxFrames = 8;

// Makes `call` known to reports (names and categories of ids). Called once
// per hooked symbol, before its first record.
void register_call(const ApiCall* call);

// Records one finished call on the calling thread's shard.
void record(const ApiCall& call, uint64_t ticks, const CallInfo& info);

// Records that a call blocked `ticks` at the call site `frames` (return
// addresses, innermost first, gpuslack's own frames included: the report
// drops them).
void record_call_site(const ApiCall& call, uint64_t ticks, void* const* frames, int n_frames);

// Records a sample of pageable copies (Note [Pageable call sites] in
// pin/staged_copy.cc): `bytes` and `copies` made by the calling thread since
// its previous sample, attributed to the call site `frames` of `call`.
void record_pageable_site(const ApiCall& call, uint64_t bytes, uint64_t copies, void* const* frames, int n_frames);

// Forgets every figure (a forked child starts clean).
void reset();

// ---- report time ----

struct CallFigures {
  const ApiCall* call = nullptr;
  uint64_t count = 0;
  uint64_t ticks = 0;      // sum
  uint64_t max_ticks = 0;
  uint64_t bytes = 0;
  Histogram histogram;     // of ticks per call
};

struct CopyFigures {
  CopyKind copy = CopyKind::kNone;
  HostMemory host = HostMemory::kNone;
  uint64_t count = 0;
  uint64_t bytes = 0;
  uint64_t ticks = 0;
};

struct CallSiteFigures {
  const ApiCall* call = nullptr;
  std::vector<void*> frames;  // innermost first, as captured
  uint64_t count = 0;
  uint64_t ticks = 0;
  uint64_t max_ticks = 0;  // the longest single call
};

struct PageableSiteFigures {
  const ApiCall* call = nullptr;
  std::vector<void*> frames;  // innermost first, as captured
  uint64_t samples = 0;
  uint64_t copies = 0;  // pageable copies the samples stand for
  uint64_t bytes = 0;
};

struct ThreadFigures {
  int tid = 0;                         // kernel thread id
  std::string name;                    // pthread name when it was first seen
  uint64_t ticks[kCategoryCount] = {};  // host time per category
  std::vector<CallFigures> calls;      // only ids with count > 0
  std::vector<CopyFigures> copies;     // only cells with count > 0
  std::vector<CallSiteFigures> call_sites;
  std::vector<PageableSiteFigures> pageable_sites;
};

// Every thread's figures, as of now.
std::vector<ThreadFigures> snapshot();

}  // namespace ledger
}  // namespace gpuslack

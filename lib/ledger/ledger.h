// The stall ledger: per-thread figures of every hooked call, merged only at
// report time.
//
// Each thread writes its own shard (taken on its first call); a shard's
// counters are single-writer relaxed atomics, so the hot path is a few plain
// stores to memory no other thread writes, and a report may read them while
// threads run.
//
// Note [Exited threads]: when a thread exits, its figures are folded into
// the figures of exited threads (ledger/exited_threads.h: the few that lost
// most by name, every other one summed) and its shard goes back on a free
// list for the next new thread (ledger/shard_pool.h, which the collectives'
// ledger, nccl/collectives.h, uses too). The ledger's memory is bounded by
// the most threads alive at once, not by every thread that ever made a
// call: a server or a pool that recycles threads does not grow.
//
// Hot path (record): no lock, no allocation (after the thread's first call).
// Slow path (record_call_site): only for calls that blocked past the
// call-site threshold; takes the shard's own lock; and record's sampled
// pageable copies (Note [Pageable call sites] in ledger.cc), the same. A thread's first call
// and its exit take the free list's lock; its exit, and reports, the lock of
// the exited threads' figures.
//
// Thread safety: every function, any thread, except after_fork_child.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/time_buckets.h"
#include "ledger/api_call.h"
#include "ledger/histogram.h"

namespace gpuslack {
namespace ledger {

inline constexpr int kMaxCalls = 192;
inline constexpr int kMaxFrames = 8;

// Makes `call` known to reports (names and categories of ids). Called once
// per hooked symbol, before its first record.
void register_call(const ApiCall* call);

// Records one finished call on the calling thread's shard: the one write
// per call. A pageable host<->device copy (`info`) of a call that samples
// them (ApiCall::samples_pageable_sites) also has its call site sampled
// (Note [Pageable call sites] in ledger.cc: the slow path's lock and a
// backtrace, for a thread's first 64 such copies and then about one per
// MiB of them).
void record(const ApiCall& call, uint64_t ticks, const CallInfo& info);

// Records that a call blocked `ticks` at the call site `frames` (what
// capture_call_site wrote, python_frames.h: the thread's Python frames, then
// return addresses, innermost first, gpuslack's own frames included: the
// report drops them). Returns the call site's key, which host intervals
// carry (host_activity.h) and call_site_frames() turns back into frames: a
// non-zero hash of the call, its leading Python frames (at most
// kMaxPythonFrames) and its first kMaxFrames native frames, the same for
// every thread and call; 0 when nothing was recorded, or when the process
// already knows kMaxSiteKeys call sites (or, rarely, another site has that
// hash): an interval then has no call site rather than a wrong one.
// Also adds the call's time to its call's slow_time (CallFigures), so a
// report can tell calls that kept blocking through the run from a burst at
// its start or end (the findings' "steady state", findings/findings.h).
uint64_t record_call_site(const ApiCall& call, uint64_t ticks, void* const* frames, int n_frames);

// The most call sites record_call_site keeps keys of (the map of keys to
// frames is the process's, bounded).
inline constexpr size_t kMaxSiteKeys = 4096;

// Forgets every figure (tests: no thread may record meanwhile).
void reset();

// In the child of a fork, from its atfork handler (Note [Fork] in
// session/session.cc): forgets every figure of the parent without touching
// anything another thread of the parent may have been changing or have
// locked at the fork (its shards, lists and locks are left behind, never
// read again), and takes no lock and allocates nothing.
void after_fork_child();

// Shards made so far, in use or free (those a fork left behind included):
// the ledger's memory is this many shards and the exited threads' figures.
size_t shard_count();

namespace testing {
// Tests of Note [Fork] only: runs `during(arg)` while the calling thread
// holds every lock of the ledger (the free list's, the exited threads', the
// call-site keys' and its own shard's), as a thread caught in a report or at its exit would hold
// them at a fork.
void while_holding_locks(void (*during)(void*), void* arg);
}  // namespace testing

// ---- report time ----

// The first width of CallFigures::slow_time: a quarter second, so that a
// run of a few seconds already has a middle to tell from its ends.
inline constexpr double kSlowTimeInterval = 0.25;

struct CallFigures {
  const ApiCall* call = nullptr;
  uint64_t count = 0;
  uint64_t ticks = 0;      // sum
  uint64_t max_ticks = 0;
  uint64_t bytes = 0;
  Histogram histogram;     // of ticks per call
  // Seconds blocked in the calls past the call-site threshold, each call's
  // whole time in the bucket where it began (a long call at start-up stays
  // at start-up): buckets from the series' origin (base/time_buckets.h),
  // kSlowTimeInterval wide until the run outgrows 240 of them. Null when
  // no call was slow (most calls: the buckets are 3 KiB); shared by copies,
  // never changed once made (merge_slow_time makes a new one).
  std::shared_ptr<const TimeBuckets> slow_time;
};

// `from` added into `*into` (either may be null), as a new object: a
// snapshot that shares the old one may be read meanwhile.
inline void merge_slow_time(std::shared_ptr<const TimeBuckets>* into, const std::shared_ptr<const TimeBuckets>& from) {
  if (!from) return;
  if (!*into) {
    *into = from;
    return;
  }
  auto merged = std::make_shared<TimeBuckets>(**into);
  merged->merge(*from);
  *into = std::move(merged);
}

// `from`'s figures added into `*into`, whose call becomes `from`'s: the
// one way two threads' (or an exited thread's) rows of a call are merged.
inline void merge_call_figures(CallFigures* into, const CallFigures& from) {
  into->call = from.call;
  into->count += from.count;
  into->ticks += from.ticks;
  into->max_ticks = std::max(into->max_ticks, from.max_ticks);
  into->bytes += from.bytes;
  into->histogram.merge(from.histogram);
  merge_slow_time(&into->slow_time, from.slow_time);
}

struct CopyFigures {
  CopyKind copy = CopyKind::kNone;
  HostMemory host = HostMemory::kNone;
  bool async_api = false;  // made by asynchronous calls (ApiCall::async_api)
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

// What a row of the snapshot stands for (Note [Exited threads]).
enum class ThreadKind : uint8_t {
  kLive,         // a thread that has not exited
  kExited,       // one of the kListedExitedThreads exited threads that lost most:
                 // its time only (its calls, copies and sites are on the kOtherExited row)
  kOtherExited,  // every other exited thread, summed (`threads` of them, maybe 0), with
                 // the calls, copies and call sites of every exited thread
};

// Exited threads kept by tid and name, the ones that lost most.
inline constexpr int kListedExitedThreads = 8;

struct ThreadFigures {
  ThreadKind kind = ThreadKind::kLive;
  uint64_t threads = 1;                // threads this row stands for
  int tid = 0;                         // kernel thread id (0 for kOtherExited)
  std::string name;                    // pthread name when it was first seen
  uint64_t ticks[kCategoryCount] = {};  // host time per category
  std::vector<CallFigures> calls;      // only ids with count > 0
  std::vector<CopyFigures> copies;     // only cells with count > 0
  std::vector<CallSiteFigures> call_sites;
  std::vector<PageableSiteFigures> pageable_sites;
};

// Every live thread's figures, then the exited threads' (at most
// kListedExitedThreads kExited rows and one kOtherExited row), as of now.
std::vector<ThreadFigures> snapshot();

}  // namespace ledger
}  // namespace gpuslack

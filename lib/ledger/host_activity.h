// Host activity: what the application's threads were doing, as intervals in
// clock ticks, for the GPU timeline to attribute the GPU's idle gaps
// (timeline/timeline.h, Note [Why the GPU idled]).
//
// Three records, all written by interpose/ on the application's threads:
//   - blocked calls: a hooked call that took at least the interval
//     threshold (set_interval_threshold; "never" until the timeline runs)
//     is written to its thread's ring as [start, end), its call and, when it
//     blocked past the call-site threshold, its call site's key;
//   - launches: count_launch(), a per-thread relaxed counter, from the
//     counting-only launch hooks (no clock read, no interval);
//   - steps: mark_step(), the program's step boundaries (gpuslack_step(),
//     gpuslack.step(), NVTX ranges named "ProfilerStep#N").
//
// One consumer (the timeline's worker) drains the rings: it gets every
// interval written since its previous drain, in per-thread order. A ring
// that filled up before the drain drops its oldest intervals, counted.
//
// Hot path (record_blocked below the threshold: one relaxed load and a
// compare; count_launch: one thread-local increment): no lock, no
// allocation. A thread's first interval makes its ring (once, like its
// ledger shard). Rings of exited threads are drained once more, then
// recycled.
//
// Thread safety: writers any thread; drain_* and the step reader from one
// consumer thread at a time (they take a lock among themselves).
#pragma once

#include <cstdint>
#include <vector>

#include "ledger/api_call.h"

namespace gpuslack {
namespace ledger {

// One blocked call, as its thread saw it.
struct HostInterval {
  uint64_t start_ticks = 0;
  uint64_t end_ticks = 0;
  const ApiCall* call = nullptr;
  uint64_t site_key = 0;  // 0: no call site captured (shorter than the call-site threshold)
  int tid = 0;            // kernel thread id of the caller
};

// Calls shorter than `ticks` are not written (UINT64_MAX: none is, the
// default). The timeline sets it when it starts and resets it when it stops.
void set_interval_threshold(uint64_t ticks);

// Hot path: writes [start, end) of `call` when it reaches the threshold.
// `site_key` is what record_call_site returned for this call, or 0.
void record_blocked(const ApiCall& call, uint64_t start_ticks, uint64_t end_ticks, uint64_t site_key);

// Hot path: one kernel launch on the calling thread.
void count_launch();

// A step boundary, now (any thread).
void mark_step();

// Consumer: appends every interval written since the previous drain to
// `out` and returns how many were dropped by full rings meanwhile.
uint64_t drain_intervals(std::vector<HostInterval>* out);

// Consumer: appends the step boundaries marked since the previous drain
// (ticks, in order) and returns how many were dropped.
uint64_t drain_steps(std::vector<uint64_t>* out);

// Kernel launches counted so far, all threads (exited ones included).
uint64_t launches();

// The call site that `key` stands for (frames innermost first, as
// captured); false if the key is unknown.
bool call_site_frames(uint64_t key, std::vector<void*>* frames);

// In the child of a fork (Note [Fork] in session/session.cc): forgets the
// parent's intervals and steps without taking a lock.
void after_fork_child_host_activity();

}  // namespace ledger
}  // namespace gpuslack

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
//   - steps: mark_step(), the program's step boundaries (gpuslack_step()
//     in the C API, gpuslack.step() and gpuslack.torch.mark_steps() in
//     Python; not NVTX: Note [Steps without NVTX]).
//
// One consumer (the timeline's worker) drains the rings: it gets every
// interval written since its previous drain, in per-thread order. A ring
// (4096 intervals) that filled up before the drain drops its oldest
// intervals, counted; so does a slot the writer was overwriting while the
// consumer read it (Note [Interval rings] in host_activity.cc).
//
// Hot path (record_blocked below the threshold: one relaxed load and a
// compare; count_launch: one thread-local increment): no lock, no
// allocation. A thread's first interval makes its ring (once, like its
// ledger shard). Rings of exited threads are drained once more (into a
// buffer of 8192 intervals that the next drain empties; beyond it, dropped
// and counted), then recycled.
//
// Note [Steps without NVTX]: gpuslack does not read the program's NVTX
// ranges (PyTorch's "ProfilerStep#N"). NVTX v3 is header-only: each library
// that uses it carries its own copy, whose calls go through function
// pointers that one injection library fills, and a preloaded library
// cannot interpose them by symbol. The injection is found through
// NVTX_INJECTION64_PATH, which Nsight Systems sets: taking it would take
// NVTX from Nsight. The one other way, exporting the weak
// InitializeInjectionNvtx2_fnptr (the "static injection" of NVTX's load
// sequence 2, consulted only when the variable is unset), reaches only the
// copies whose symbol is visible and interposable, was broken in load
// sequence 1 (NVTX's own comment), and would make gpuslack every NVTX
// client's tool. And it would rarely find a step: PyTorch's
// "ProfilerStep#N" ranges exist only while torch.profiler runs (which holds
// CUPTI itself) and reach NVTX only in its NVTX mode (emit_nvtx()), that is
// under Nsight, with the variable set. So a program marks steps itself:
// gpuslack_step(), gpuslack.step(), or, for torch, gpuslack.torch.
// mark_steps(), an optimizer step hook (python_shim/gpuslack/torch.py).
//
// Thread safety: writers any thread; drain_* and the step reader from one
// consumer thread at a time (they take a lock among themselves).
#pragma once

#include <atomic>
#include <cstddef>
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

namespace detail {
extern std::atomic<uint64_t> g_interval_threshold_ticks;
// Out of line: the write itself (host_activity.cc, Note [Interval rings]).
void write_interval(const ApiCall& call, uint64_t start_ticks, uint64_t end_ticks, uint64_t site_key);
}  // namespace detail

// Hot path: writes [start, end) of `call` when it reaches the threshold.
// `site_key` is what record_call_site returned for this call, or 0.
// Inline: below the threshold (and always while it is "never") it costs
// one relaxed load and a compare.
inline void record_blocked(const ApiCall& call, uint64_t start_ticks, uint64_t end_ticks, uint64_t site_key) {
  if (__builtin_expect(end_ticks - start_ticks < detail::g_interval_threshold_ticks.load(std::memory_order_relaxed), 1))
    return;
  detail::write_interval(call, start_ticks, end_ticks, site_key);
}

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
// parent's intervals, launches and steps without taking a lock or
// allocating, and sets the threshold back to "never" (a timeline of the
// child's own sets it again when it starts).
void after_fork_child_host_activity();

// Rings made so far, in use or free (tests: rings of exited threads are
// reused, so this is bounded by the most threads alive at once).
size_t interval_ring_count();

namespace testing {
// Tests of Note [Fork] only: runs `during(arg)` while the calling thread
// holds every lock of the host activity (the rings' and launch counters'
// pools', the steps'), as a drain or an exiting thread would at a fork.
void while_holding_host_activity_locks(void (*during)(void*), void* arg);
}  // namespace testing

}  // namespace ledger
}  // namespace gpuslack

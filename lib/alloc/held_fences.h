// HeldFences: the events that fence what each stream holds (Note [Held
// ranges reach everyone] in device_allocator.h), at most one pending per
// stream, and the bytes each stream has freed into what it holds since its
// last fence.
//
// Contract. A fence is an event recorded on a stream by record(): once it
// has completed, the GPU is done with whatever the stream held when it was
// recorded, and the caller may give that to everyone. The caller says what
// a fence covers (it marks its held ranges when record() succeeds); this
// only keeps the events and says when each has completed:
//   - record(s) records one event on `s` and keeps it as s's fence. It
//     records nothing, and returns false, on a capturing stream (the event
//     would be a node of the graph), or when the query or the record fails
//     (the error is cleared: the caller carries on as if no fence were
//     due). The stream must have no fence pending (poll or drop it first).
//     A recorded fence restarts the stream's unfenced count.
//   - poll_all(fn) queries every fence (cudaEventQuery: nothing waits); each
//     completed one leaves and its stream goes to `fn`, once. poll(s, fn)
//     does the same for s's fence alone and returns whether it is still
//     pending. pending(s) says whether s has a fence, without a query.
//   - drop(s) forgets s's fence unread (false: it had none); the ranges it
//     covered stay the caller's to fence again.
//   - add_unfenced(s, bytes) counts bytes the stream freed into what it
//     holds; true once the count since its last fence reached `fence_every`
//     (the caller fences then); due(s) says so without counting.
//     forget_unfenced(s) restarts the count.
//   - allocation_passed() counts one allocation on the allocator's large
//     cached path; allocation_may_fence() says whether such an allocation
//     may record a due fence itself, and if so spends that from the budget
//     (Note [Fences off the allocation path]).
//   - poll_others(except, sparing, fn) is poll_all() for the fences of
//     every stream but `except` (std::nullopt: of every stream); with
//     `sparing`, a fence found pending is queried again only once
//     kAllocationsPerPoll allocations have passed (Note [Others' fenced
//     ranges before new space]).
// Note [Fences off the allocation path]: a fence costs the call that
// records it a capture query and a cudaEventRecord (about 1.5-2 us on the
// simulated device, whose event record is priced as real hardware's), and
// the held ranges' marking. With every due fence recorded where it fell due,
// large allocations that merged cached blocks into the held ranges recorded
// one on 0.56% and 1.93% of all allocations of the two decode traces
// (bench/README.md, "Where the decode traces' allocation p99 comes from"):
// their allocation p99 was that fence, 2-4x PyTorch expandable segments'.
// So the allocation path has a budget: it records a due fence itself at
// most once per kAllocationsPerFence large cached-path allocations, with up
// to kFenceBurst at once (a budget full at first, so a trace with few large
// allocations, minimalloc's, fences almost as before); past it the fence
// stays due and the stream's next large free records it (over what the
// stream then caches by size and holds: later than it fell due, so it
// covers more, never less), or the stream's next miss fences every holder
// as always. At most 1/48 + a burst of the large allocations record a held
// fence; frees pay for the rest, as frees pay for record_stream's events in
// PyTorch. Why a budget rather than fences at frees alone: a run of
// allocations with no large free between them (minimalloc's traces) then
// fenced nothing until its next miss, which found nothing it could release,
// and mapped more (bench/README.md, "Fences off the allocation path":
// peak reserved +20 to +40 MiB on three traces).
//
// Note [Others' fenced ranges before new space]: what stream A holds goes
// to everyone once A's fence has completed, but it used to go only at a
// miss (settle_held): until then a large request of stream B that B's own
// ranges could not serve was placed in the free space, in whatever range
// fitted, or mapped, while A's finished ranges, often a tighter fit, stayed
// out of reach. On gpt-train-overlap-bf16 (a compute stream and a side
// stream that allocates and frees 8-62 MiB gradient buckets) the side
// stream's buckets split the compute stream's free ranges, and the compute
// stream's next 125 MiB block found no mapped range whole: peak reserved
// 1912 MiB and 384 driver calls, against 1812 and 373 for the same events
// on one stream (bench/README.md, "Held ranges of other streams"). So a
// large request, before it takes free space, releases the ranges of every
// other stream whose fence has completed (an event query each, nothing
// recorded): on the cached path before the one pool is read (Note [One
// pool for an owner's reuse] in block_manager.h), and on the slow path
// before the free space is; the stream's own fence is left alone, its
// ranges serve it anyway. A fence still pending costs the cached path a
// query per kAllocationsPerPoll large allocations at most (a busy side
// stream's fence may stay pending for many of them); the slow path, which
// may map next, asks every time. Nothing is asked during a capture (Note
// [Frees during capture]), and small requests never ask: their pages never
// go to held ranges. With one stream nothing changes: its own fence is
// never asked.
//
// Events come from the event pool (sync/event_pool.h) and go back to it
// when a fence leaves, and at destruction.
//
// No locking: the allocator serializes every call under its mutex. CUDA
// calls: the capture status query and the event record (record()), the
// event query (poll, poll_all).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "sync/event_pool.h"

namespace gpuslack {
namespace alloc {

class HeldFences {
 public:
  // Events of `device`; a fence is due every `fence_every` bytes freed into
  // a stream's held ranges.
  HeldFences(int device, uint64_t fence_every) : device_(device), fence_every_(fence_every) {}
  HeldFences(const HeldFences&) = delete;
  HeldFences& operator=(const HeldFences&) = delete;
  ~HeldFences();

  bool record(cudaStream_t stream);
  bool pending(cudaStream_t stream) const;

  // Each completed fence's stream to `fn`, the fence gone.
  template <typename Fn>
  void poll_all(Fn fn) {
    for (size_t i = 0; i < fences_.size();)
      if (!completed(i, fn)) ++i;
  }
  // True while `stream`'s fence is pending; if it completed, its stream to
  // `fn`, the fence gone (false); false with no fence.
  template <typename Fn>
  bool poll(cudaStream_t stream, Fn fn) {
    for (size_t i = 0; i < fences_.size(); ++i)
      if (fences_[i].stream == stream) return !completed(i, fn);
    return false;
  }
  // See Note [Others' fenced ranges before new space].
  static constexpr uint64_t kAllocationsPerPoll = 8;
  template <typename Fn>
  void poll_others(std::optional<cudaStream_t> except, bool sparing, Fn fn) {
    for (size_t i = 0; i < fences_.size();) {
      if ((except && fences_[i].stream == *except) || (sparing && passed_ < fences_[i].ask_after)) {
        ++i;
      } else if (!completed(i, fn)) {
        fences_[i++].ask_after = passed_ + kAllocationsPerPoll;
      }
    }
  }
  bool drop(cudaStream_t stream);

  bool add_unfenced(cudaStream_t stream, uint64_t bytes);
  bool due(cudaStream_t stream) const;
  void forget_unfenced(cudaStream_t stream) { unfenced_.erase(stream); }

  // See Note [Fences off the allocation path]: at most one fence per
  // kAllocationsPerFence large cached-path allocations, kFenceBurst at once.
  static constexpr uint64_t kAllocationsPerFence = 48;
  static constexpr uint64_t kFenceBurst = 8;
  void allocation_passed() {
    ++passed_;
    if (budget_ < kFenceBurst * kAllocationsPerFence) ++budget_;
  }
  bool allocation_may_fence() {
    if (budget_ < kAllocationsPerFence) return false;
    budget_ -= kAllocationsPerFence;
    return true;
  }

  size_t size() const { return fences_.size(); }

 private:
  struct Fence {
    cudaStream_t stream;
    sync::PooledEvent event;
    uint64_t ask_after = 0;  // poll_others(sparing): not asked before passed_ reaches it
  };
  bool query(size_t i) const;  // whether fences_[i] has completed
  void remove(size_t i);       // its event back to the pool; the last fence takes its place
  template <typename Fn>
  bool completed(size_t i, Fn& fn) {
    if (!query(i)) return false;
    cudaStream_t stream = fences_[i].stream;
    fn(stream);
    remove(i);
    return true;
  }

  int device_;
  uint64_t fence_every_;
  std::vector<Fence> fences_;  // at most one per stream
  std::unordered_map<cudaStream_t, uint64_t> unfenced_;  // bytes held since the stream's last fence
  uint64_t budget_ = kFenceBurst * kAllocationsPerFence;  // allocations' worth of fences, full at first
  uint64_t passed_ = 0;  // allocation_passed() calls so far
};

}  // namespace alloc
}  // namespace gpuslack

// GraphHolds: the blocks a captured CUDA graph may touch, held back from
// reuse until the graph and every instance of it are destroyed (Note
// [Capture without hooks] in device_allocator.h).
//
// Contract. Blocks are named by address. A block allocated during a
// capture is registered with allocated(); its graph gets one hold (one per
// capture id while the graph lives), tied to a graph user object
// (cudaUserObjectCreate, cudaGraphRetainUserObject) whose destructor, run
// on whichever thread the runtime likes, marks the hold released. Freed:
//   - during a capture (freed_in_capture), a block is held by that
//     capture's graph;
//   - otherwise (free_held), a block allocated during a capture whose graph
//     still lives is held by it (true); any other block is the caller's to
//     free as usual (false).
// release_destroyed() hands the caller every held block of each graph
// destroyed since, once; the caller fences them like stream-less frees.
// Should the user object fail, the hold is never released (memory lost,
// never data), with one log line per process.
//
// The holds tied to a live graph outlive this object: a graph may be
// destroyed after the allocator, and its user object's destructor still
// writes to its hold. The destructor deletes every other hold.
//
// No locking: the allocator serializes every call (the destructor's flag
// is atomic). CUDA calls: the user object's, from allocated() and
// freed_in_capture() only.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace gpuslack {
namespace alloc {

class GraphHolds {
 public:
  explicit GraphHolds(int device) : device_(device) {}
  GraphHolds(const GraphHolds&) = delete;
  GraphHolds& operator=(const GraphHolds&) = delete;
  ~GraphHolds();

  // The live block at `addr` was allocated during capture `id` of `graph`.
  void allocated(uint64_t addr, unsigned long long id, cudaGraph_t graph);
  // The block at `addr` was freed during capture `id` of `graph`: held by
  // that graph (whatever capture allocated it).
  void freed_in_capture(uint64_t addr, unsigned long long id, cudaGraph_t graph);
  // The block at `addr` was freed outside a capture: true if it is held
  // (allocated during a capture whose graph lives), false if not ours.
  bool free_held(uint64_t addr);

  // Each held block of every graph destroyed since the last call, to `fn`.
  template <typename Fn>
  void release_destroyed(Fn fn) {
    for (size_t i = 0; i < holds_.size();) {
      if (!holds_[i]->released.load(std::memory_order_acquire)) {
        ++i;
        continue;
      }
      for (uint64_t addr : holds_[i]->freed) fn(addr);
      retire(i);
    }
  }

  // Whether any hold is not yet settled (its graph lives, or was destroyed
  // since the last release_destroyed()).
  bool empty() const { return holds_.empty(); }
  // Freed blocks held by graphs not yet settled.
  size_t held_blocks() const;

 private:
  struct Hold {
    unsigned long long id = 0;
    std::atomic<bool> released{false};  // set by the user object's destructor
    std::vector<uint64_t> freed;        // freed, held back
    size_t live = 0;                    // blocks of captured_ naming this hold
    bool tied = false;                  // a graph's user object points at it
  };
  static void graph_destroyed(void* hold);  // the user object's destructor
  Hold* hold_for(unsigned long long id, cudaGraph_t graph);
  // Forgets that the live block at `addr` was allocated during a capture;
  // its hold while the graph lives, else nullptr.
  Hold* drop_captured(uint64_t addr);
  void retire(size_t i);  // holds_[i], released and emptied, leaves

  int device_;
  std::vector<Hold*> holds_;                      // not yet settled
  std::unordered_map<uint64_t, Hold*> captured_;  // live blocks allocated during a capture
};

}  // namespace alloc
}  // namespace gpuslack

// FreeEpochs: blocks freed without a stream wait here until the GPU can no
// longer be using them.
//
// Note [Freeing without synchronizing]: cudaFree waits for the whole device
// so that memory a queued kernel still uses is never handed out again.
// gpuslack keeps the guarantee without the wait. Frees join the open epoch;
// closing it records one event on each fence stream (stream_registry.h:
// the legacy default stream, covering every blocking stream, and each
// non-blocking stream) and keeps the drain events of destroyed streams. The
// epoch's blocks become reusable once all its events have completed:
// polled with cudaEventQuery, never waited on, except by wait_all(), which
// the allocator calls only when an allocation cannot be served otherwise
// (a stall it records). Events (kNoTiming, of this allocator's device) come
// from the event pool (sync/event_pool.h) and go back to it once their epoch
// is over: recording costs about a microsecond on real hardware, so one set
// serves a whole batch of frees.
//
// What this assumes: all GPU work that may use a block was enqueued before
// its free, on a stream the registry knows or a blocking stream. A program
// that used cudaFree as a barrier (reading, right after cudaFree, host
// memory the GPU wrote) loses that barrier: the free_sync knob restores it.
//
// Not thread-safe: the device allocator serializes calls.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "sync/event_pool.h"
#include "sync/stream_registry.h"

namespace gpuslack {
namespace sync {

class FreeEpochs {
 public:
  explicit FreeEpochs(int device) : device_(device) {}
  // Gives every event it holds back to the pool (pending ones too).
  ~FreeEpochs();
  FreeEpochs(const FreeEpochs&) = delete;
  FreeEpochs& operator=(const FreeEpochs&) = delete;

  // Adds a freed block (its offset) to the open epoch.
  void add(uint64_t offset) { open_.push_back(offset); }
  size_t open_blocks() const { return open_.size(); }
  size_t pending_blocks() const;  // open and closed, not yet reusable
  bool any_closed() const { return !closed_.empty(); }  // fenced, not yet polled complete

  // Records the open epoch's events. False if recording failed: the blocks
  // then stay in the open epoch (nothing is ever reused unfenced).
  bool close();
  // Fences `blocks` on `streams` (one event each), and on close()'s fence
  // streams too if `with_fences`: for frees whose streams are known
  // (stream-ordered frees, blocks named by record_stream). False if
  // recording failed; the blocks then join the open epoch, whose close
  // fences every registered stream (with_fences: never less safe; without,
  // the caller's streams may be unknown to the registry, and the open
  // epoch's wait_all() ends in a device synchronization at worst).
  bool close_on(std::vector<uint64_t> blocks, std::vector<cudaStream_t> streams, bool with_fences);
  // Appends to `ready` the blocks of every epoch whose events completed
  // (epochs fenced on different streams complete in any order).
  void poll(std::vector<uint64_t>* ready);
  // Closes the open epoch and waits for every epoch; appends all their
  // blocks to `ready`. Returns the seconds spent waiting.
  double wait_all(std::vector<uint64_t>* ready);
  uint64_t epochs_closed() const { return closed_count_; }

 private:
  struct Epoch {
    std::vector<uint64_t> blocks;
    std::vector<sync::PooledEvent> events;
    std::vector<std::shared_ptr<OwnedEvent>> drains;
  };
  // Records one event per stream into `epoch`; on failure returns them all
  // to the pool and says false.
  bool record(const std::vector<cudaStream_t>& streams, Epoch* epoch);
  void give_back(Epoch& e);
  bool complete(const Epoch& e) const;

  int device_;
  std::vector<uint64_t> open_;
  std::deque<Epoch> closed_;
  uint64_t closed_count_ = 0;
};

}  // namespace sync
}  // namespace gpuslack

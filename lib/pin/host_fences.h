// HostFences: freed pinned blocks wait here until no device can still be
// using them.
//
// The rule is the device allocator's (Note [Freeing without synchronizing]
// in sync/free_epochs.h): cudaFreeHost waits for the device so that memory
// a queued copy still reads or writes is never handed out again; the heap
// keeps the guarantee without the wait. Freed blocks are batched; closing
// the batch records one event on each fence stream (sync/
// stream_registry.h: the legacy default stream, which covers every blocking
// stream, and each non-blocking stream) of every device in use, and a block
// is reusable once all of those events have completed -- polled, never
// waited on, except by wait_all() (an explicit trim).
//
// The difference from device memory: pinned memory serves every device. A
// batch is therefore fenced on each device the process uses, through one
// sync::FreeEpochs per device (blocks are named by their address). "In
// use": the driver says the device's primary context is active (exact on
// a real GPU: the runtime retains it for every device it works on), or a
// heap call was made while it was current (what the simulated device, whose
// runtime retains no primary context, relies on). A device with no active
// context has no work that could touch the block.
//
// Graph capture: the caller never calls close(), poll() or wait_all()
// while sync::capturing() (each would query or record events).
//
// Not thread-safe: the heap serializes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "sync/free_epochs.h"

namespace gpuslack {
namespace pin {

class HostFences {
 public:
  static constexpr int kMaxDevices = 64;

  HostFences() = default;
  HostFences(const HostFences&) = delete;
  HostFences& operator=(const HostFences&) = delete;

  // A heap call was made with `device` current.
  void saw_device(int device);
  // Adds a freed block to the open batch.
  void add(uintptr_t block) { open_.push_back(block); }
  size_t open_blocks() const { return open_.size(); }
  // Blocks freed and not yet reusable (open or fenced).
  size_t pending_blocks() const { return open_.size() + outstanding_.size(); }
  // Fences the open batch on every device in use (records the events).
  // Blocks whose events could not be recorded on a device stay in that
  // device's open epoch and are fenced by a later close(): never reused
  // unfenced.
  void close();
  // Appends the blocks whose fences have all completed.
  void poll(std::vector<uintptr_t>* ready);
  // Closes the open batch and waits for every fence; appends every block.
  // Returns the seconds spent waiting.
  double wait_all(std::vector<uintptr_t>* ready);
  uint64_t epochs_closed() const { return epochs_closed_; }

 private:
  std::vector<int> devices_in_use();
  sync::FreeEpochs& epochs_of(int device);
  // One device's blocks are ready: those no other device still fences.
  void settle(const std::vector<uint64_t>& done, std::vector<uintptr_t>* ready);

  std::vector<uintptr_t> open_;
  // Fenced blocks -> devices whose fence has not completed yet.
  std::unordered_map<uintptr_t, int> outstanding_;
  std::unique_ptr<sync::FreeEpochs> epochs_[kMaxDevices];
  uint64_t seen_ = 0;  // bit d: a heap call was made on device d
  uint64_t epochs_closed_ = 0;
};

}  // namespace pin
}  // namespace gpuslack

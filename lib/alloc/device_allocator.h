// DeviceAllocator: device memory for one GPU from one reserved virtual
// range, with no device synchronization on free and no physical
// fragmentation.
//
// Data flow: allocate() asks BlockManager for an offset (best fit, small
// pool); if its granules are mapped already that is all (the cached path:
// no driver call, no event); otherwise it fences the frees made since the
// last epoch, takes back what the GPU is done with, and asks GranuleMap to
// map what is missing. free() puts the block into FreeEpochs, which hands it
// back to BlockManager once the GPU can no longer use it (Note [Freeing
// without synchronizing] in free_epochs.h); a batch of 64 frees is fenced
// at once. Physical granules of free ranges stay mapped as a cache,
// released by trim(), when the cache exceeds its limit, and under memory
// pressure.
//
// Out of memory, in this order: release cached granules and retry; then
// wait for every pending free (a stall, counted in stats()) and retry; only
// then fail (nullptr), with one log line: requested, allocated, reserved,
// largest free range.
//
// Not routed behind cudaMalloc yet (the interposition of the VMM allocator
// is the next step of its issue); tested on the simulated device.
//
// Thread safety: every public function, any thread (one mutex per device;
// the caching allocators this replaces take one too).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_set>

#include "alloc/block_manager.h"
#include "alloc/device_stats.h"
#include "alloc/free_epochs.h"
#include "alloc/granule_map.h"

namespace gpuslack {
namespace alloc {


class DeviceAllocator {
 public:
  // Reserves `reserve_bytes` of address space on `device`; keeps at most
  // `cache_limit` bytes of mapped-but-free memory (0: no limit).
  DeviceAllocator(const cuda::DriverApi* api, int device, uint64_t reserve_bytes, uint64_t cache_limit);

  bool ok() const { return map_.ok(); }
  const std::string& why() const { return map_.why(); }
  int device() const { return device_; }

  // A block of at least `bytes` (256-byte aligned, as cudaMalloc's are), or
  // nullptr when the device is out of memory after trimming and waiting.
  void* allocate(size_t bytes);
  // Frees a block from allocate(). False if `p` is not the start of a live
  // block of this allocator, or was freed already (nothing changes).
  bool free(void* p);
  // Whether `p` lies in this allocator's address range.
  bool owns(const void* p) const {
    auto a = reinterpret_cast<uintptr_t>(p);
    return a >= base_ && a < base_ + size_;
  }
  // Releases every cached granule; returns the bytes released.
  uint64_t trim();
  DeviceStats stats();

 private:
  // Frees fenced per epoch at most; a fuller epoch is closed at free time.
  static constexpr size_t kEpochBlocks = 64;

  void reclaim();              // blocks whose epochs completed -> free
  void* served(uint64_t offset);  // counts and returns a successful allocation
  void release(const std::vector<uint64_t>& ready);
  uint64_t trim_locked();
  void note_peaks();

  std::mutex mu_;
  int device_;
  uint64_t cache_limit_;
  GranuleMap map_;
  uintptr_t base_ = 0;
  uint64_t size_ = 0;
  BlockManager blocks_;
  FreeEpochs epochs_;
  std::unordered_set<uint64_t> pending_;  // freed, not yet back in blocks_
  uint64_t pending_bytes_ = 0;
  DeviceStats stats_;
};

}  // namespace alloc
}  // namespace gpuslack

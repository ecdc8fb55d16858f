#include "alloc/device_allocator.h"

#include <vector>

#include "log/log.h"

namespace gpuslack {
namespace alloc {

DeviceAllocator::DeviceAllocator(const cuda::DriverApi* api, int device, uint64_t reserve_bytes,
                                 uint64_t cache_limit)
    : device_(device),
      cache_limit_(cache_limit),
      map_(api, device, reserve_bytes),
      base_(static_cast<uintptr_t>(map_.base())),
      size_(map_.size()),
      blocks_(map_.size()),
      epochs_(device) {}

void DeviceAllocator::reclaim() {
  std::vector<uint64_t> ready;
  epochs_.poll(&ready);
  release(ready);
}

void DeviceAllocator::release(const std::vector<uint64_t>& ready) {
  for (uint64_t offset : ready) {
    pending_.erase(offset);
    pending_bytes_ -= blocks_.release(offset);
  }
}

void DeviceAllocator::note_peaks() {
  stats_.allocated = blocks_.allocated() - pending_bytes_;  // freed blocks are not allocated
  stats_.reserved = map_.mapped_bytes();
  if (stats_.allocated > stats_.peak_allocated) stats_.peak_allocated = stats_.allocated;
  if (stats_.reserved > stats_.peak_reserved) stats_.peak_reserved = stats_.reserved;
}

uint64_t DeviceAllocator::trim_locked() {
  uint64_t released = 0;
  // Copy: unmapping does not change the free ranges, but be plain about it.
  std::vector<std::pair<uint64_t, uint64_t>> ranges(blocks_.large_free().ranges().begin(),
                                                    blocks_.large_free().ranges().end());
  for (const auto& [offset, size] : ranges) released += map_.unmap(offset, size) * map_.granularity();
  return released;
}

void* DeviceAllocator::allocate(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!ok()) return nullptr;
  reclaim();
  // The cached path: a free range that is already mapped. No driver call,
  // no event.
  std::optional<uint64_t> at = blocks_.allocate(bytes);
  if (at && map_.mapped_range(*at, blocks_.size_of(*at))) return served(*at);
  // A miss: fence the frees made since the last epoch (one event per fence
  // stream for all of them) and take back what the GPU is done with, before
  // mapping anything new.
  if (epochs_.open_blocks() > 0) {
    if (at) blocks_.release(*at);
    epochs_.close();
    reclaim();
    at = blocks_.allocate(bytes);
    if (at && map_.mapped_range(*at, blocks_.size_of(*at))) return served(*at);
  }
  CUresult mapped = CUDA_ERROR_OUT_OF_MEMORY;
  if (at) mapped = map_.map(*at, blocks_.size_of(*at));
  if (!at || mapped == CUDA_ERROR_OUT_OF_MEMORY) {
    // Pressure: give back cached granules, then wait for pending frees.
    ++stats_.oom_retries;
    if (at) {
      uint64_t size = blocks_.size_of(*at);
      trim_locked();
      mapped = map_.map(*at, size);
    }
    if (!at || mapped == CUDA_ERROR_OUT_OF_MEMORY) {
      if (at) blocks_.release(*at);
      std::vector<uint64_t> ready;
      stats_.stall_s += epochs_.wait_all(&ready);
      release(ready);
      trim_locked();
      at = blocks_.allocate(bytes);
      if (at) mapped = map_.map(*at, blocks_.size_of(*at));
    }
  }
  if (!at || mapped != CUDA_SUCCESS) {
    if (at) blocks_.release(*at);
    ++stats_.failed_allocations;
    note_peaks();
    log::warn("device {}: out of memory for {} bytes (allocated {}, reserved {}, largest free range {}){}", device_,
              bytes, blocks_.allocated(), map_.mapped_bytes(), blocks_.largest_free(),
              mapped == CUDA_SUCCESS || mapped == CUDA_ERROR_OUT_OF_MEMORY
                  ? ""
                  : "; the driver said " + std::to_string(static_cast<int>(mapped)));
    return nullptr;
  }
  return served(*at);
}

void* DeviceAllocator::served(uint64_t offset) {
  ++stats_.allocations;
  note_peaks();
  if (cache_limit_ && map_.mapped_bytes() > blocks_.allocated() + cache_limit_) trim_locked();
  return reinterpret_cast<void*>(base_ + offset);
}

bool DeviceAllocator::free(void* p) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!owns(p)) return false;
  uint64_t offset = reinterpret_cast<uintptr_t>(p) - base_;
  uint64_t size = blocks_.size_of(offset);
  if (size == 0 || !pending_.insert(offset).second) return false;
  pending_bytes_ += size;
  epochs_.add(offset);
  ++stats_.frees;
  // Bound what an open epoch holds back: fence a full batch now.
  if (epochs_.open_blocks() >= kEpochBlocks) epochs_.close();
  return true;
}

uint64_t DeviceAllocator::trim() {
  std::lock_guard<std::mutex> lock(mu_);
  reclaim();
  uint64_t released = trim_locked();
  note_peaks();
  return released;
}

DeviceStats DeviceAllocator::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  note_peaks();
  DeviceStats s = stats_;
  s.largest_free = blocks_.largest_free();
  s.pending_free = epochs_.pending_blocks();
  s.granules_mapped = map_.granules_mapped_total();
  s.granules_unmapped = map_.granules_unmapped_total();
  s.epochs = epochs_.epochs_closed();
  return s;
}

}  // namespace alloc
}  // namespace gpuslack

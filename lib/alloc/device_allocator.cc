#include "alloc/device_allocator.h"

#include <algorithm>

#include "alloc/stream_registry.h"
#include "log/log.h"

namespace gpuslack {
namespace alloc {

DeviceAllocator::DeviceAllocator(const cuda::DriverApi* api, int device, uint64_t reserve_bytes,
                                 uint64_t cache_limit, uint64_t map_chunk)
    : device_(device),
      cache_limit_(cache_limit),
      map_(api, device, reserve_bytes, map_chunk),
      base_(static_cast<uintptr_t>(map_.base())),
      size_(map_.size()),
      blocks_(map_.size()),
      epochs_(device) {}

// ------------------------------------------------------------ reclaiming ---

void DeviceAllocator::reclaim() {
  std::vector<uint64_t> ready;
  epochs_.poll(&ready);
  release(ready);
}

void DeviceAllocator::release(const std::vector<uint64_t>& ready) {
  for (uint64_t offset : ready) {
    auto it = freed_.find(offset);
    if (it == freed_.end()) continue;  // cannot happen; never release twice
    freed_bytes_ -= it->second;
    freed_.erase(it);
    blocks_.release(offset);
  }
}

void DeviceAllocator::settle_deferred() {
  for (uint64_t offset : deferred_) epochs_.add(offset);
  deferred_.clear();
}

void DeviceAllocator::fence_all() {
  epochs_.close();
  for (cudaStream_t s : streams_.streams()) {
    std::vector<uint64_t> blocks;
    streams_.flush(s, &blocks);
    epochs_.close_on(std::move(blocks), {s}, false);
  }
}

void DeviceAllocator::note_peaks() {
  stats_.allocated = blocks_.allocated() - freed_bytes_;  // freed blocks are not allocated
  stats_.reserved = map_.mapped_bytes();
  if (stats_.allocated > stats_.peak_allocated) stats_.peak_allocated = stats_.allocated;
  if (stats_.reserved > stats_.peak_reserved) stats_.peak_reserved = stats_.reserved;
  timeline_.note(stats_.allocated, stats_.reserved);
}

uint64_t DeviceAllocator::trim_locked() {
  if (capturing()) return 0;  // Note [Frees during capture]: no unmapping
  uint64_t released = 0;
  // Copy: unmapping does not change the free ranges, but be plain about it.
  std::vector<std::pair<uint64_t, uint64_t>> ranges(blocks_.large_free().ranges().begin(),
                                                    blocks_.large_free().ranges().end());
  for (const auto& [offset, size] : ranges) released += map_.unmap(offset, size) * map_.granularity();
  return released;
}

// ------------------------------------------------------------ allocating ---

void* DeviceAllocator::allocate(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  return allocate_locked(bytes);
}

void* DeviceAllocator::allocate(size_t bytes, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!ok()) return nullptr;
  // The cached path. Not during a capture: the graph may be launched on
  // another stream, unordered with what `stream` still runs.
  if (!capturing()) {
    if (std::optional<uint64_t> at = streams_.take(stream, BlockManager::round_up(bytes))) {
      auto it = freed_.find(*at);
      freed_bytes_ -= it->second;
      freed_.erase(it);
      ++stats_.stream_reuses;
      return served(*at);
    }
  }
  return allocate_locked(bytes);
}

void* DeviceAllocator::allocate_locked(size_t bytes) {
  if (!ok()) return nullptr;
  const bool capture = capturing();
  if (!capture && !deferred_.empty()) settle_deferred();
  // Memory that is free, fenced and mapped: no driver call, no event.
  std::optional<uint64_t> at = blocks_.allocate(bytes);
  if (at && map_.mapped_range(*at, blocks_.size_of(*at))) return served(*at);
  if (capture) {
    // Note [Frees during capture]: nothing more may happen now.
    if (at) blocks_.release(*at);
    ++stats_.capture_fallbacks;
    return nullptr;
  }
  // A miss. Before mapping anything: take back what the GPU is done with
  // (a query per fenced epoch); then, if that is not enough, fence every
  // block still held back (one event per stream for all of them) and take
  // back again.
  for (int pass = 0; pass < 2 && !freed_.empty(); ++pass) {
    if (pass == 1) {
      if (epochs_.open_blocks() == 0 && streams_.blocks() == 0) break;  // nothing unfenced
      fence_all();
    }
    if (at) blocks_.release(*at);
    reclaim();
    at = blocks_.allocate(bytes);
    if (at && map_.mapped_range(*at, blocks_.size_of(*at))) return served(*at);
  }
  // About to grow: past the cache limit, give back the cached granules
  // first, so that the mapped total follows what is in use rather than
  // where blocks happened to land.
  if (at && cache_limit_ && map_.mapped_bytes() > blocks_.allocated() + cache_limit_) trim_locked();
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
      fence_all();
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
              bytes, blocks_.allocated() - freed_bytes_, map_.mapped_bytes(), blocks_.largest_free(),
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

// --------------------------------------------------------------- freeing ---

bool DeviceAllocator::take_freed(void* p, uint64_t* offset) {
  if (!owns(p)) return false;
  *offset = reinterpret_cast<uintptr_t>(p) - base_;
  uint64_t size = blocks_.size_of(*offset);
  if (size == 0 || !freed_.emplace(*offset, size).second) return false;
  freed_bytes_ += size;
  ++stats_.frees;
  return true;
}

bool DeviceAllocator::free(void* p) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t offset;
  if (!take_freed(p, &offset)) return false;
  if (capturing()) {
    deferred_.push_back(offset);
    ++stats_.deferred_frees;
  } else if (auto rec = recorded_.find(offset); rec != recorded_.end()) {
    // Its recorded streams may not be fence streams (PyTorch's streams are
    // made without the hooks): fence on them and on every fence stream.
    epochs_.close_on({offset}, rec->second, true);
    recorded_.erase(rec);
  } else {
    epochs_.add(offset);
    // Bound what an open epoch holds back: fence a full batch now.
    if (epochs_.open_blocks() >= kEpochBlocks) epochs_.close();
  }
  note_peaks();
  return true;
}

bool DeviceAllocator::free(void* p, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t offset;
  if (!take_freed(p, &offset)) return false;
  if (capturing()) {
    deferred_.push_back(offset);
    ++stats_.deferred_frees;
  } else if (auto rec = recorded_.find(offset); rec != recorded_.end()) {
    std::vector<cudaStream_t> on = rec->second;
    on.push_back(stream);
    epochs_.close_on({offset}, on, false);
    recorded_.erase(rec);
  } else if (streams_.put(stream, offset, freed_.at(offset)) > kStreamCacheBlocks ||
             (cache_limit_ && streams_.bytes() > cache_limit_)) {
    // Too much held for one stream: fence it for everyone (one event).
    std::vector<uint64_t> blocks;
    streams_.flush(stream, &blocks);
    epochs_.close_on(std::move(blocks), {stream}, false);
  }
  note_peaks();
  return true;
}

bool DeviceAllocator::record_stream(void* p, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!owns(p)) return false;
  uint64_t offset = reinterpret_cast<uintptr_t>(p) - base_;
  if (blocks_.size_of(offset) == 0 || freed_.count(offset)) return false;
  std::vector<cudaStream_t>& on = recorded_[offset];
  if (std::find(on.begin(), on.end(), stream) == on.end()) on.push_back(stream);
  return true;
}

void DeviceAllocator::forget_stream(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint64_t> blocks;
  streams_.flush(stream, &blocks);
  if (blocks.empty()) return;
  // During a capture the record fails and the blocks join the open epoch,
  // fenced on every stream later: safe either way.
  epochs_.close_on(std::move(blocks), {stream}, false);
}

void* DeviceAllocator::block_of(const void* p, size_t* size) {
  std::lock_guard<std::mutex> lock(mu_);
  *size = 0;
  if (!owns(p)) return nullptr;
  std::optional<std::pair<uint64_t, uint64_t>> b = blocks_.block_containing(reinterpret_cast<uintptr_t>(p) - base_);
  if (!b || freed_.count(b->first)) return nullptr;
  *size = b->second;
  return reinterpret_cast<void*>(base_ + b->first);
}

// ------------------------------------------------------------- the rest ---

uint64_t DeviceAllocator::trim() {
  std::lock_guard<std::mutex> lock(mu_);
  if (capturing()) return 0;
  settle_deferred();
  // An explicit trim (torch.cuda.empty_cache) may wait, as PyTorch's own
  // does: every freed block is fenced and waited for, so that all of it is
  // released now rather than whenever its events happen to have completed.
  fence_all();
  std::vector<uint64_t> ready;
  epochs_.wait_all(&ready);
  release(ready);
  uint64_t released = trim_locked();
  note_peaks();
  return released;
}

bool DeviceAllocator::grant_peer(int peer) {
  std::lock_guard<std::mutex> lock(mu_);
  CUresult r = map_.grant(peer);
  if (r != CUDA_SUCCESS)
    log::warn("device {}: granting device {} access to gpuslack's memory failed (error {})", device_, peer,
              static_cast<int>(r));
  return r == CUDA_SUCCESS;
}

void DeviceAllocator::set_limit(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  map_.set_limit(bytes);
}

uint64_t DeviceAllocator::cached_bytes() {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t held = blocks_.allocated();
  uint64_t mapped = map_.mapped_bytes();
  return mapped > held ? mapped - held : 0;
}

DeviceStats DeviceAllocator::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  note_peaks();
  DeviceStats s = stats_;
  s.largest_free = blocks_.largest_free();
  s.pending_free = epochs_.pending_blocks() + streams_.blocks() + deferred_.size();
  s.granules_mapped = map_.granules_mapped_total();
  s.granules_unmapped = map_.granules_unmapped_total();
  s.chunks_mapped = map_.chunks_mapped_total();
  s.chunks_unmapped = map_.chunks_unmapped_total();
  s.epochs = epochs_.epochs_closed();
  return s;
}

void DeviceAllocator::reset_peaks() {
  std::lock_guard<std::mutex> lock(mu_);
  note_peaks();
  stats_.peak_allocated = stats_.allocated;
  stats_.peak_reserved = stats_.reserved;
}

Timeline::Samples DeviceAllocator::timeline() {
  std::lock_guard<std::mutex> lock(mu_);
  return timeline_.samples();
}

}  // namespace alloc
}  // namespace gpuslack

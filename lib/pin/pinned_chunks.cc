#include "pin/pinned_chunks.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <vector>

#include "cuda/runtime_api.h"
#include "base/clock.h"
#include "log/log.h"

namespace gpuslack {
namespace pin {
namespace {

constexpr uint64_t kChunkAlign = 2ull << 20;  // chunk sizes are rounded to this

uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

}  // namespace

const unsigned int PinnedChunks::kChunkFlags = cudaHostAllocPortable | cudaHostAllocMapped;

PinnedChunks::~PinnedChunks() {
  for (auto& [base, chunk] : chunks_) {
    if (cuda::free_host(reinterpret_cast<void*>(base)) != cudaSuccess) cuda::get_last_error();
  }
}

const PinnedChunks::Map::value_type* PinnedChunks::chunk_of(const void* p) const {
  auto a = reinterpret_cast<uintptr_t>(p);
  auto it = chunks_.upper_bound(a);
  if (it == chunks_.begin()) return nullptr;
  --it;
  return a < it->first + it->second.size ? &*it : nullptr;
}

PinnedChunks::Map::value_type* PinnedChunks::chunk_of(const void* p) {
  return const_cast<Map::value_type*>(static_cast<const PinnedChunks*>(this)->chunk_of(p));
}

bool PinnedChunks::in_one_chunk(const void* addr, size_t size) const {
  const Map::value_type* c = chunk_of(addr);
  return c && reinterpret_cast<uintptr_t>(addr) + size <= c->first + c->second.size;
}

bool PinnedChunks::same_chunk(const void* a, const void* b) const {
  const Map::value_type* c = chunk_of(a);
  return c && c == chunk_of(b);
}

void* PinnedChunks::take_from(Map::value_type& chunk, size_t size, size_t alignment) {
  const uintptr_t base = chunk.first;
  // First fit honouring the alignment: jemalloc asks for pages, its
  // metadata blocks for huge pages; the ranges are few (jemalloc keeps what
  // it was given until a trim).
  for (const auto& [offset, length] : chunk.second.free.ranges()) {
    uintptr_t start = (base + offset + alignment - 1) & ~(static_cast<uintptr_t>(alignment) - 1);
    if (start + size > base + offset + length) continue;
    chunk.second.free.take(start - base, size);
    return reinterpret_cast<void*>(start);
  }
  return nullptr;
}

void* PinnedChunks::take(size_t size, size_t alignment, bool zero) {
  if (size == 0) return nullptr;
  void* p = nullptr;
  for (auto& chunk : chunks_)
    if ((p = take_from(chunk, size, alignment))) break;
  if (!p && grow_) {
    if (Map::value_type* fresh = grow(size, alignment)) p = take_from(*fresh, size, alignment);
  }
  if (p && zero) std::memset(p, 0, size);
  return p;
}

PinnedChunks::Map::value_type* PinnedChunks::grow(size_t size, size_t alignment) {
  // Room for the alignment too: the runtime's chunk may start anywhere.
  const uint64_t least = round_up(size + (alignment > 4096 ? alignment : 0), kChunkAlign);
  uint64_t want = least > chunk_size_ ? least : chunk_size_;
  if (pinned_ + want > cap_) want = least;  // a chunk just large enough, if that fits
  if (pinned_ + want > cap_) {
    cap_refused_ = true;
    return nullptr;
  }
  void* base = nullptr;
  const double start = clock::monotonic_seconds();
  cudaError_t r = cuda::host_alloc(&base, want, kChunkFlags);
  if (r != cudaSuccess && want > least) {
    cuda::get_last_error();  // ours, not the application's
    want = least;
    r = cuda::host_alloc(&base, want, kChunkFlags);
  }
  if (r != cudaSuccess || base == nullptr) {
    cuda::get_last_error();
    log::debug("pinned heap: cudaHostAlloc of a {}-byte chunk failed (error {})", want, static_cast<int>(r));
    return nullptr;
  }
  seconds_per_byte_ = (clock::monotonic_seconds() - start) / static_cast<double>(want);
  auto it = chunks_.emplace(reinterpret_cast<uintptr_t>(base), Chunk{}).first;
  Chunk& c = it->second;
  c.size = want;
  c.free.insert(0, want);
  pinned_ += want;
  if (pinned_ > peak_pinned_) peak_pinned_ = pinned_;
  ++allocated_total_;
  auto b = reinterpret_cast<uintptr_t>(base);
  if (b < low_) low_ = b;
  if (b + want > high_) high_ = b + want;
  return &*it;
}

double PinnedChunks::pin_seconds(size_t size) const {
  uint64_t chunk = round_up(size, kChunkAlign);
  if (chunk < chunk_size_) chunk = chunk_size_;
  return seconds_per_byte_ * static_cast<double>(chunk);
}

void PinnedChunks::give(void* addr, size_t size) {
  Map::value_type* c = chunk_of(addr);
  if (!c || !c->second.free.insert(reinterpret_cast<uintptr_t>(addr) - c->first, size))
    log::error("pinned heap: jemalloc gave back {} bytes at {} that are not a taken extent (kept)", size, addr);
}

uint64_t PinnedChunks::release_empty() {
  uint64_t released = 0;
  for (auto it = chunks_.begin(); it != chunks_.end();) {
    if (it->second.free.total() != it->second.size) {
      ++it;
      continue;
    }
    if (cuda::free_host(reinterpret_cast<void*>(it->first)) != cudaSuccess) {
      cuda::get_last_error();  // keep it: still pinned, still ours
      ++it;
      continue;
    }
    released += it->second.size;
    pinned_ -= it->second.size;
    ++released_total_;
    it = chunks_.erase(it);
  }
  return released;
}

}  // namespace pin
}  // namespace gpuslack

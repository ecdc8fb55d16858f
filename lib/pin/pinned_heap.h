// PinnedHeap: a caching heap of pinned (page-locked) host memory, for
// cudaMallocHost/cudaHostAlloc/cudaFreeHost (interpose/routes_pinned.inc)
// and for gpuslack's own staging blocks.
//
// Why: the runtime's cudaHostAlloc pins every page of every allocation
// (tens of microseconds to hundreds of milliseconds) and cudaFreeHost
// waits for the whole device. The heap pins large chunks once
// (pinned_chunks.h) and serves blocks from them through a jemalloc arena
// (pinned_arena.h); a freed block goes back without any device
// synchronization, and is handed out again only once the GPU can no longer
// be using it.
//
// The reuse contract (Note [Freeing without synchronizing] in
// sync/free_epochs.h, applied to host memory, host_fences.h): free(p)
// returns at once; the block joins a batch, and the batch is fenced by
// events recorded on every fence stream of every device in use (when it
// holds kEpochBlocks blocks or kEpochBytes bytes, or when an allocation
// cannot be served without more memory). The block is reused only after
// all of those events have completed, which is polled, never waited on.
// Assumed, as for device memory: every GPU use of the block (copies from or
// into it, kernels reading mapped memory) was enqueued before its free, on
// a stream the registry knows or a blocking stream.
//
// Serving, allocate(bytes, flags):
//   - flags: Default, Portable and Mapped are served (every chunk is both
//     portable and mapped); WriteCombined and unknown flags return nullptr,
//     counted as passthrough: the caller makes the runtime's own call;
//   - blocks are page-aligned; their usable size may exceed `bytes`;
//   - memory freed and fenced is reused first; then a free range of a chunk;
//     then, if blocks freed but not yet reusable would serve, their fences
//     are polled (the lock released in between) for what pinning a chunk
//     has cost so far (measured), at least 10 ms and at most 100 ms: pinning
//     is paid once in time and for good in memory, while fences recorded a
//     moment ago usually complete sooner; waiting about as long as the
//     alternative costs at most about twice the better choice, and the
//     floor keeps a briefly late fence (a busy host, on the simulated
//     device) from pinning memory for good. The time polled counts in
//     stats().stall_s. Then a new chunk, within the cap (pinned_cap_mb);
//   - at the cap: a trim (below: it waits for the pending frees' fences, a
//     stall counted in stats().stall_s, and releases the chunks no block
//     uses), then a new chunk is tried once more; if the cap still forbids
//     it, nullptr (a cap hit): the caller makes the runtime's own call, so
//     the application gets what it would have got without gpuslack;
//   - a failing cudaHostAlloc: nullptr, the same way.
//
// Graph capture (Note [Frees during capture] in alloc/device_allocator.h):
// while any stream captures, the heap records, queries and synchronizes
// nothing and calls no runtime allocator: frees are deferred and fenced once
// the capture has ended, allocations are served only from memory jemalloc
// already holds, else nullptr.
//
// Thread safety: every public function, any thread (one mutex; the extent
// hooks run under it, inside jemalloc calls made by the heap). owns()
// rejects pointers outside every chunk without taking it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "pin/host_fences.h"
#include "pin/pinned_arena.h"
#include "pin/pinned_chunks.h"
#include "pin/pinned_stats.h"

namespace gpuslack {
namespace pin {

class PinnedHeap {
 public:
  // Chunks of `chunk_bytes` (larger for larger requests), at most
  // `cap_bytes` pinned in all.
  PinnedHeap(uint64_t chunk_bytes, uint64_t cap_bytes);
  // For tests: gives every chunk back. Every block must have been freed.
  ~PinnedHeap();
  PinnedHeap(const PinnedHeap&) = delete;
  PinnedHeap& operator=(const PinnedHeap&) = delete;

  // Whether the heap serves cudaHostAlloc `flags`.
  static bool serves(unsigned int flags);

  // A pinned block of at least `bytes` (page-aligned), or nullptr: flags it
  // does not serve, bytes 0, the cap, a failing runtime, a capture (see
  // above). The caller then makes the runtime's own call.
  void* allocate(size_t bytes, unsigned int flags);
  // Frees a block of allocate(): reusable once the GPU is done with it.
  // False (nothing changes) if `p` is not the start of a live block.
  bool free(void* p);
  // Whether `p` lies in a chunk of the heap (a block, live or not).
  bool owns(const void* p);
  // The usable size of the live block starting at `p`; 0 if none.
  size_t block_size(const void* p);
  // Waits for every freed block's fence (an explicit trim may stall; the
  // heap never does otherwise), hands every free extent back to its chunk
  // and releases the chunks no block uses. Returns the bytes released.
  // Nothing during a capture.
  uint64_t trim();

  PinnedStats stats();

 private:
  // Batches are fenced at this many blocks or bytes at free time.
  static constexpr size_t kEpochBlocks = 64;
  static constexpr uint64_t kEpochBytes = 8ull << 20;
  // How long an allocation polls pending frees before pinning a chunk:
  // what pinning that chunk costs (PinnedChunks::pin_seconds), within these.
  static constexpr double kMinPollSeconds = 0.01;
  static constexpr double kMaxPollSeconds = 0.1;

  bool ensure_arena();
  void* allocate_locked(size_t bytes, std::unique_lock<std::mutex>& lock);
  void* try_allocate(size_t bytes, bool grow);
  void* poll_pending(size_t bytes, std::unique_lock<std::mutex>& lock);
  void settle_deferred();
  void reclaim(bool close_open);
  void give_back(const std::vector<uintptr_t>& ready);
  uint64_t release_locked();
  double trim_locked();  // the seconds waited
  void note_chunks();

  std::mutex mu_;
  PinnedChunks chunks_;
  PinnedArena arena_;
  bool arena_failed_logged_ = false;
  HostFences fences_;
  // Live blocks: start -> usable size.
  std::unordered_map<uintptr_t, size_t> live_;
  // Freed, not yet back in the arena: start -> usable size.
  std::unordered_map<uintptr_t, size_t> freed_;
  uint64_t open_bytes_ = 0;         // of the open batch
  uint64_t pending_bytes_ = 0;      // of every block in freed_
  std::vector<uintptr_t> deferred_;  // freed during a capture
  PinnedStats stats_;
  // Bounds of every chunk ever held (owns() rejects outside without the lock).
  std::atomic<uintptr_t> low_{UINTPTR_MAX};
  std::atomic<uintptr_t> high_{0};
};

}  // namespace pin
}  // namespace gpuslack

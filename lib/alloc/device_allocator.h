// DeviceAllocator: device memory for one GPU from one reserved virtual
// range, with no device synchronization on free and no physical
// fragmentation.
//
// Data flow, allocate(bytes, stream): a block of that size freed on that
// stream is taken back from StreamCache (the cached path: no event, no
// driver call). Otherwise a Reservation gives a block on memory already
// mapped (best fit, small pool) if it can. Otherwise (a miss) every block
// held back is fenced (the open epoch of stream-less frees, one event per
// fence stream; each stream's cached blocks, one event on that stream),
// what the GPU is done with goes back, and only then is what is still
// missing mapped. When no reservation has a free range that holds the
// block (the address space ran out, not the memory), another is reserved. Frees: free(p) puts the block into
// sync::FreeEpochs (Note [Freeing without synchronizing] in free_epochs.h; a
// batch of 64 is fenced at once); free(p, stream) into StreamCache. Mapped
// granules of free ranges stay as a cache, released by trim(), past the
// cache limit, and under memory pressure.
//
// Out of memory, in this order: release cached granules and retry; then
// wait for every pending free (a stall, counted in stats()) and retry on
// what they free, still mapped; then release cached granules again and
// retry; only then fail (nullptr), with one log line: requested,
// allocated, reserved, largest free range.
//
// Note [Frees during capture]: while any stream captures a graph
// (stream_registry.h), nothing here queries or records an event,
// synchronizes, maps or unmaps: each could invalidate the capture or be
// captured into the graph. Frees are deferred and fenced like stream-less
// frees once no capture is running; allocations are served only from
// memory already mapped and fenced (BlockManager), else nullptr, and the
// caller passes the call to the runtime (which answers as it would have
// without gpuslack).
//
// Note [Capture without hooks]: the C API (gpuslack_device_alloc/free,
// torch's CUDAPluggableAllocator) gets the stream of every call, and asks
// the runtime whether it captures (cudaStreamGetCaptureInfo), hooks or
// not: a capture the hooks never saw begin is one all the same
// (sync::CaptureScope). It knows the capture's graph, so it does more than
// the hooked path can: allocate_in_capture() maps what it cannot serve from
// memory already mapped (with the thread's capture mode relaxed, as torch's
// own allocator calls cudaMalloc during a capture; mapping records nothing
// into the graph) instead of failing, since torch does not check for NULL;
// and every block the graph may touch (allocated during the capture, or
// freed during it) is held, never reused, until the graph and every
// instance of it are destroyed: a graph user object (cudaUserObjectCreate,
// cudaGraphRetainUserObject) says when, and then the blocks are fenced like
// stream-less frees. A replay never writes into another tensor's memory.
// Should the user object fail, the blocks stay held (memory lost, never
// data), with one log line.
//
// What it counts (allocations, peaks, the timeline: stats()) is kept apart,
// in AllocatorStatistics (allocator_statistics.h), updated under the same
// mutex.
//
// Thread safety: every public function, any thread (one mutex per device;
// the caching allocators this replaces take one too).
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "alloc/allocator_mutex.h"
#include "alloc/allocator_statistics.h"
#include "alloc/block_manager.h"
#include "alloc/device_stats.h"
#include "sync/free_epochs.h"
#include "alloc/reservation.h"
#include "alloc/stream_cache.h"
#include "alloc/timeline.h"

namespace gpuslack {
namespace alloc {

class DeviceAllocator {
 public:
  // Reserves `reserve_bytes` of address space on `device`; keeps at most
  // `cache_limit` bytes of mapped-but-free memory (0: no limit); maps
  // physical memory in chunks of up to `map_chunk` bytes (GranuleMap; 0:
  // one granule each).
  DeviceAllocator(const cuda::DriverApi* api, int device, uint64_t reserve_bytes, uint64_t cache_limit,
                  uint64_t map_chunk = 0);

  ~DeviceAllocator();
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  bool ok() const { return first_->ok(); }
  const std::string& why() const { return first_->why(); }
  int device() const { return device_; }

  // A block of at least `bytes` (256-byte aligned, as cudaMalloc's are), or
  // nullptr when the device is out of memory after trimming and waiting
  // (or, during a capture, when no mapped memory holds it).
  void* allocate(size_t bytes);
  // The same, for use on `stream` first: may reuse a block freed on
  // `stream` at once. Not for the per-thread default stream (its handle
  // names a different stream in each thread): use allocate(bytes).
  void* allocate(size_t bytes, cudaStream_t stream);
  // Frees a block from allocate(). With no stream, the block waits for
  // every stream (sync::FreeEpochs); on `stream`, in the order of `stream`:
  // reusable on `stream` at once, elsewhere once the work enqueued on
  // `stream` so far has completed. False if `p` is not the start of a live
  // block of this allocator, or was freed already (nothing changes).
  bool free(void* p, std::optional<cudaStream_t> stream);
  bool free(void* p) { return free(p, std::nullopt); }
  bool free(void* p, cudaStream_t stream) { return free(p, std::optional<cudaStream_t>(stream)); }
  // Note [Capture without hooks]: the graph being captured on the caller's
  // stream (cudaStreamGetCaptureInfo's id and graph).
  struct Capture {
    unsigned long long id;
    cudaGraph_t graph;
  };
  // A block for use in `capture`: mapped memory, else newly mapped; held
  // for the graph's lifetime once freed. nullptr only when out of memory.
  void* allocate_in_capture(size_t bytes, const Capture& capture);
  // Frees a block during `capture`: held until the graph is destroyed.
  bool free_in_capture(void* p, const Capture& capture);
  // The block is used on `stream` too: its free also waits for `stream`.
  // False if `p` is not the start of a live block.
  bool record_stream(void* p, cudaStream_t stream);
  // `stream` is being destroyed: the blocks it cached are fenced on it now
  // (a later stream may get the same handle).
  void forget_stream(cudaStream_t stream);
  // The live block holding `p`: its start, and its (rounded) size in *size.
  void* block_of(const void* p, size_t* size);
  // Whether [p, p + bytes) lies inside one live block, within the bytes it
  // was allocated with (as the runtime checks a copy or memset against a
  // cudaMalloc allocation): false for a freed block, free space, or a range
  // that runs past the bytes asked for.
  bool holds_range(const void* p, size_t bytes);

  // Whether `p` lies in one of this allocator's reservations. Lock-free.
  bool owns(const void* p) const { return reservation_of(reinterpret_cast<uintptr_t>(p)) != nullptr; }
  // Releases every cached granule, after waiting for every freed block's
  // fence (an explicit call may stall; nothing else here does); returns
  // the bytes released.
  uint64_t trim();
  // Grants `peer` access to all of this allocator's memory, now and later.
  bool grant_peer(int peer);
  // Caps mapped physical memory at `bytes` (0: no cap).
  void set_limit(uint64_t bytes);
  // Mapped bytes that no live block holds: cached granules, the free space
  // of small-pool pages and of partly used chunks, and blocks freed but not
  // yet reusable (their fence pending). What cudaMemGetInfo adds to the
  // driver's "free" (README, "cudaMemGetInfo"). Takes back first what the
  // GPU is done with (one event query per fenced epoch; none during a
  // capture); never records an event, synchronizes or waits.
  uint64_t unused_bytes();

  // Note [Frees behind a device synchronization]: when cudaDeviceSynchronize
  // returns, every event recorded before it was called has completed. Its
  // hook calls fence_frees() first (the open epoch's events are recorded,
  // nothing waits) and, once the synchronization succeeded,
  // take_back_completed(): every block freed before the call is reusable
  // at once, with no further event or wait; an allocation right after the
  // synchronization reuses it instead of mapping more. Neither does
  // anything during a capture (Note [Frees during capture]).
  void fence_frees();
  void take_back_completed();

  DeviceStats stats();
  // Restarts the peaks from the current values (torch's
  // reset_peak_memory_stats).
  void reset_peaks();
  Timeline::Samples timeline();

 private:
  // Frees fenced per epoch at most; a fuller epoch is closed at free time.
  static constexpr size_t kEpochBlocks = 64;
  // Reservations per device at most (each 1.125x the device's memory).
  static constexpr int kMaxReservations = 8;

  Reservation* reservation_of(uintptr_t a) const;
  std::optional<BlockManager::Live> live_block(const void* p) const;  // not freed; under mu_
  // Every reservation made so far (under mu_).
  template <typename Fn>
  void for_each_reservation(Fn fn) const {
    for (int i = 0; i < reservations_made_; ++i) fn(*reservations_[i].load(std::memory_order_relaxed));
  }
  void* allocate_mapped(uint64_t bytes);   // the cached path over every reservation
  // Maps under a new block in the first reservation with room; a new
  // reservation when none has. nullptr with *result set otherwise.
  void* allocate_mapping(uint64_t bytes, CUresult* result);
  // Blocks one stream may cache before they are fenced for everyone.
  static constexpr size_t kStreamCacheBlocks = 256;

  void* allocate_locked(size_t bytes);
  bool take_freed(void* p, uint64_t* addr);  // validates and marks freed
  void settle_deferred();      // frees made during a capture, held blocks of destroyed graphs -> fenced
  void fence_all();            // open epoch and stream caches -> fenced
  void reclaim();              // blocks whose epochs completed -> free
  void* served(uintptr_t addr);  // counts and returns a successful allocation
  void release(const std::vector<uint64_t>& ready);
  uint64_t trim_locked();
  void note_peaks();

  uint64_t mapped_bytes() const;
  uint64_t held_bytes() const;  // blocks placed, freed-but-held included

  AllocatorMutex mu_;
  const cuda::DriverApi* api_;
  int device_;
  uint64_t reserve_bytes_, cache_limit_, map_chunk_;
  uint64_t limit_ = 0;  // set_limit(): mapped bytes at most, 0: none
  std::vector<int> peers_;  // granted access to every reservation
  // Reservations, published for owns() (lock-free readers); never removed.
  std::atomic<Reservation*> reservations_[kMaxReservations] = {};
  std::atomic<int> reservations_made_{0};
  Reservation* first_;
  sync::FreeEpochs epochs_;
  StreamCache streams_;
  // Blocks are named by address everywhere below. Freed blocks not yet
  // back in their reservation (epochs, stream caches, deferred): addr -> size.
  std::unordered_map<uint64_t, uint64_t> freed_;
  uint64_t freed_bytes_ = 0;
  std::vector<uint64_t> deferred_;  // freed during a capture
  // Note [Capture without hooks]: the blocks a captured graph may touch,
  // held until its user object is destroyed (`released`, set from the
  // runtime's thread; the rest under mu_).
  struct GraphHold {
    unsigned long long id = 0;
    std::atomic<bool> released{false};
    std::vector<uint64_t> freed;  // freed, held back
    size_t live = 0;              // blocks of captured_ naming this hold
  };
  static void graph_destroyed(void* hold);  // the user object's destructor
  GraphHold* hold_for(const Capture& capture);
  void hold_block(GraphHold* hold, uint64_t addr);  // a freed block, taken
  // Forgets that the live block at `addr` was allocated during a capture;
  // its hold while the graph lives, else nullptr.
  GraphHold* drop_captured(uint64_t addr);
  std::vector<GraphHold*> holds_;                   // not yet settled
  std::unordered_map<uint64_t, GraphHold*> captured_;  // live blocks allocated during a capture
  std::unordered_map<uint64_t, std::vector<cudaStream_t>> recorded_;  // record_stream
  AllocatorStatistics stats_;  // counters, peaks, timeline: apart from the blocks
};

}  // namespace alloc
}  // namespace gpuslack

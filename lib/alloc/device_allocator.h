// DeviceAllocator: device memory for one GPU from one reserved virtual
// range, with no device synchronization on free and no physical
// fragmentation.
//
// Data flow, allocate(bytes, stream): what `stream` freed comes back to it
// at once, with no event and no driver call (the cached path, as PyTorch's
// and RMM's stream-ordered pools do it): a block of the same rounded size
// from StreamCache; else, for a large request (> 1 MiB), any size split
// from the ranges the stream holds (BlockManager's Note [Space held for an
// owner]: the large blocks it cached by size merge there first). Otherwise a Reservation gives a
// block on memory already mapped (best fit, small pool), or, for a stream,
// over its held ranges and the mapped free space beside them. Otherwise (a
// miss) every block held back is fenced (the open epoch of stream-less
// frees, one event per fence stream; each other stream's cached blocks and
// held ranges, one event on that stream), what the GPU is done with goes
// back, then, if fenced blocks could serve, the allocator waits for them
// while that costs less than mapping (Note [Waiting instead of mapping]),
// and only then is what is still missing mapped, for a stream beside what
// it holds. On such a miss a small request on a stream first takes, before
// anything is fenced, what the stream cached at other sizes, joined and split
// (StreamCache's Note [A stream's small blocks at any size]). When no
// reservation has a free range that holds the block (the
// address space ran out, not the memory), another is reserved. Frees:
// free(p) puts the block into sync::FreeEpochs (Note [Freeing without
// synchronizing] in free_epochs.h; a batch of 64 is fenced at once);
// free(p, stream) into StreamCache. Mapped
// granules of free ranges stay as a cache, released by trim(), past the
// cache limit, and under memory pressure (Note [Releasing memory]).
//
// Note [Waiting instead of mapping]: on a miss, fenced frees may be a few
// microseconds from completing (an event recorded on an idle GPU is not
// complete at once). Mapping instead would grow the device's memory for
// good, so the allocator polls the pending fences (cudaEventQuery, no wait
// in the driver) for as long as mapping the block would take: the measured
// cost of its own mappings per byte (a moving average), at least
// kMinFenceWait and at most kMaxFenceWait, and only when the fenced blocks
// hold at least the bytes asked for. A miss thus costs at most twice a mapping, and a loop that
// frees and reallocates behind the GPU reuses what it freed. Counted in
// stats() (fence_waits, fence_waits_served, fence_wait_s).
//
// Note [Held ranges reach everyone]: what a stream holds serves it at once,
// but another stream, a stream-less allocation or a release (unmapping)
// must wait until the GPU is done with it. At each miss, every stream that
// holds ranges and has no fence pending gets one event, recorded on it,
// over what it holds then (BlockManager::fence_held); at a later miss, once
// that event has completed, the ranges it covered that the stream has not
// reused since go to the free space (release_fenced), where anyone may
// allocate them and Note [Releasing memory] may unmap them; so they do
// earlier, at another stream's large request (Note [Others' fenced ranges
// before new space] in held_fences.h). The stream
// keeps its own reuse throughout: nothing it holds is taken from it early.
// Frees fence too, once a stream holds at least kHeldFenceBytes: one event
// per kHeldFenceBytes it frees into what it holds (replacing a pending
// one), so that what a stream freed a while ago is free for everyone, and
// releasable, by the next miss; recorded by the free or the allocation
// where it falls due, an allocation within a budget only (Note [Fences off
// the allocation path] in held_fences.h). A stream that holds less (a
// cached alloc/free pair) records nothing.
//
// Note [Releasing memory]: with the defaults (no cache limit), mapped
// granules are given back in two cases. A miss that would map the device's
// mapped total past its ceiling first releases as many bytes of cached
// granules in free ranges elsewhere (smallest ranges first: holes), so the
// total grows only when live memory does; below the ceiling it maps
// freely. The ceiling is the larger of the mapped total's high-water mark
// and the allocated bytes' high-water mark plus 1/kGrowthSlack of it: the
// slack lets a trace whose shapes change keep what it mapped instead of
// unmapping here to map there at every miss (each such cycle is four
// driver calls, two of them documented as synchronizing), for at most an
// eighth more memory than it ever had live (bench/README.md, "Allocator
// goals"). And under pressure: a failed map trims the cached granules and
// retries, then waits for every pending free (fenced on every stream, held
// ranges included) and retries on what they free, still mapped, and trims
// once more. A steady loop maps nothing after its first step (no churn);
// traces whose shapes keep changing trade driver calls for memory
// (bench/README.md, "Allocator goals").
// cache_limit_mb caps the cached bytes (held ranges and stream caches
// included) for programs that share the device with others.
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
// Note [Front caches]: the cached pair without the lock. A block freed on
// a stream by a thread, when it would go to StreamCache, goes instead to
// that thread's front cache for this allocator (FrontCache, with a
// FrontLock of its own that only the rare cross-thread step contends):
// the thread's next allocate(size, stream) of the same rounded size on
// the same stream takes it back, and its next free(p, stream) of a block
// the front handed out caches it again, neither taking mu_. StreamCache's
// rule is kept exactly (reuse on the freeing stream at once, by anyone
// else only after a fence), as is everything the lock gives:
//   - a block with a front record is, in BlockManager's books, live; the
//     allocator knows which front holds it (FrontCaches, under mu_), so a
//     free from any other path asks that front under its lock: a cached
//     record is a double free (refused), a live one leaves the front
//     (detach) and is freed as any block is. A double free on the owning
//     thread is refused by the front itself;
//   - range checks (holds_range, block_of) and record_stream ask the front
//     too: a cached block is freed; a live one is live with the bytes its
//     last take() asked for; record_stream takes it out of the front (its
//     free must wait for the recorded streams);
//   - during a capture the fronts are passed by (the cached path was
//     never used then), and the first slow-path step of a capture moves
//     what they cache to StreamCache; stream-less frees and frees of
//     captured or recorded blocks never reach a front;
//   - what fronts cache is counted: not allocated, reserved, pending
//     (stats(), unused_bytes(), the miss loop), and given back to
//     StreamCache, where the fences take over, at every miss before
//     mapping (fence_all: so at out-of-memory retries and trim() too), at
//     forget_stream(), when a front passes its limits, when a large
//     request on a stream misses (its large blocks join the held ranges),
//     and when the thread exits (a pthread key). A front caches at most 64
//     blocks and less than kHeldFenceBytes, and takes a large block only
//     while what its stream caches and holds stays below kHeldFenceBytes:
//     past that, a stream's large frees are held and fenced for everyone
//     as before (Note [Held ranges reach everyone]). With a cache limit set there are no fronts: every cached
//     byte stays where the limit sees it;
//   - the peaks: between two steps under mu_, only fronts move allocated
//     bytes, so every such step first settles the peaks from each front's
//     low water of cached bytes (exact with one thread; with several, an
//     upper bound by at most what their fronts moved meanwhile). The
//     timeline is noted at those steps only.
// bench/README.md ("The cached pair without the lock") has the figures.
//
// What it counts (allocations, peaks, the timeline: stats()) is kept apart,
// in AllocatorStatistics (allocator_statistics.h), updated under the same
// mutex.
//
// Thread safety: every public function, any thread (one mutex per device,
// as the caching allocators this replaces take; the cached pair takes only
// its thread's front lock: Note [Front caches]). Destroy an allocator only
// when no other thread uses it.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "alloc/allocator_mutex.h"
#include "alloc/allocator_statistics.h"
#include "alloc/block_manager.h"
#include "alloc/device_stats.h"
#include "alloc/front_caches.h"
#include "alloc/graph_holds.h"
#include "alloc/held_fences.h"
#include "alloc/mapping_policy.h"
#include "alloc/peer_access.h"
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

  // In the child of a fork, on the thread that forked (an atfork child
  // handler): the thread forgets its front caches, the parent's
  // allocators', without touching them (Note [The allocators after a
  // fork] in process_allocators.cc). No lock, no allocation.
  static void forget_thread_fronts_after_fork();

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
  // See Note [Capture without hooks]: the graph being captured on the caller's
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
  // For IPC (alloc/block_ipc.h): the live block starting at `p` (its
  // start, not inside it): the bytes it was allocated with, and the
  // physical chunks under it (GranuleMap::Chunk, offsets as addresses).
  // False if `p` starts no live block.
  bool chunks_of_block(const void* p, uint64_t* requested, std::vector<GranuleMap::Chunk>* out);

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
  // driver's "free" (docs/allocator.md, "cudaMemGetInfo"). Takes back first what the
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
  // Reservations per device at most (each 1.125x the device's memory for
  // large blocks, and a small pool as large: reservation.h).
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
  void* allocate_mapping(uint64_t bytes, CUresult* result, std::optional<cudaStream_t> stream);
  // Blocks one stream may cache before they are fenced for everyone.
  static constexpr size_t kStreamCacheBlocks = 256;

  void* allocate_locked(size_t bytes, std::optional<cudaStream_t> stream);
  // StreamCache's Note [A stream's small blocks at any size]: a small block
  // joined and split from what `stream` caches, or nullptr.
  void* allocate_joined(uint64_t bytes, cudaStream_t stream);
  // See Note [Waiting instead of mapping]: polls the fenced frees for at most
  // the measured cost of mapping `bytes`, and allocates on what completes.
  void* wait_then_allocate(uint64_t bytes);
  // Notes [Releasing memory], [Waiting instead of mapping], GranuleMap's
  // [Pages mapped whole]: what a miss maps, and how long it waits instead.
  MappingPolicy policy_{0};  // the device's memory set in the constructor
  // A stream is an owner of held ranges by its handle (legacy stream: 0).
  static Reservation::Owner owner_of(cudaStream_t s) { return reinterpret_cast<uintptr_t>(s); }
  static cudaStream_t stream_of(Reservation::Owner o) { return reinterpret_cast<cudaStream_t>(o); }
  // Fences what `stream` caches (and, `with_held`, its held ranges) with one
  // event on it.
  void fence_stream(cudaStream_t stream, bool with_held);
  uint64_t cached_on_streams() const;  // StreamCache bytes and every held range
  bool take_freed(void* p, uint64_t* addr, uint64_t* size = nullptr);  // validates and marks freed
  void settle_deferred();      // frees made during a capture, held blocks of destroyed graphs -> fenced
  // Open epoch and stream caches -> fenced (large cached blocks to their
  // stream's held ranges instead); and, `with_held`, every stream's held
  // ranges and large blocks too (pressure, trim).
  void fence_all(bool with_held);
  // See Note [Held ranges reach everyone]: the marked ranges of every stream
  // whose fence completed go to the free space; every stream holding ranges
  // and no pending fence gets one (an event on it) over what it holds now.
  void settle_held();
  void drop_held_fence(cudaStream_t stream);  // and its unfenced count
  void release_fenced(cudaStream_t s);  // `s`'s fence completed: what it covered goes to everyone
  // See Note [Others' fenced ranges before new space] in held_fences.h: the
  // completed fences of every stream but `stream` release what they cover.
  void take_others_fenced(std::optional<cudaStream_t> stream, bool sparing);
  void fence_held_on(cudaStream_t s);  // one event on `s` over what it holds
  // The large blocks `stream` cached by size join what it holds; on the
  // allocation path (`on_allocation`), a fence they make due waits for the
  // budget (Note [Fences off the allocation path] in held_fences.h).
  // On the allocation path the fronts' large blocks of `stream` join too.
  //
  // Note [The large cached path, cheaply]: a large request that neither
  // the thread's front nor the same-size cache serves (9% of the decode
  // traces' allocations; their p99) moves what the stream caches into its
  // held ranges and splits the request from those and the free space. It
  // runs under the lock on every such request, so it does only what
  // changes a decision: the fronts' large blocks go to the held ranges
  // directly, not into freed_ and StreamCache to be taken out again at
  // once (the sets they end in are the same; nothing between reads them);
  // a front with no record of a large block is not searched (FrontCache
  // counts them, off the cached pair); the scratch vectors are kept
  // (members here, inline in BlockManager::allocate_held), not allocated
  // per request; and a set is looked up only where it can hold a part of
  // the block. Any change here must leave peak reserved and driver calls
  // identical on every trace (docs/allocator.md, "The large cached path").
  void hold_cached_large(cudaStream_t stream, bool on_allocation = false);
  std::vector<FrontCache::Drained> to_hold_from_fronts_;  // its scratch
  std::vector<uint64_t> to_hold_;                         // its scratch
  // Large blocks of `size` went to what `s` holds: every kHeldFenceBytes
  // so freed, a fence (replacing a pending one). Size 0: a fence if one is
  // due already.
  void freed_to_held(cudaStream_t s, uint64_t size);
  uint64_t held_by_stream(cudaStream_t s) const;  // what `s` holds, every reservation
  static constexpr uint64_t kHeldFenceBytes = 32ull << 20;
  void reclaim();              // blocks whose epochs completed -> free
  void* served(uintptr_t addr);  // counts and returns a successful allocation
  void release(const std::vector<uint64_t>& ready);
  uint64_t trim_locked();
  void note_peaks();

  uint64_t mapped_bytes() const;
  uint64_t held_bytes() const;  // blocks placed, freed-but-held included

  // Note [Front caches] (device_allocator_front.cc; the threads' fronts in
  // front_caches.h).
  static void front_thread_exited(void* owner, FrontCaches::Front* f);  // no lock held
  void retire_front(FrontCaches::Front* f);  // takes mu_: f's thread exited
  void* take_front(size_t bytes, cudaStream_t stream);  // the cached pair, no mu_
  int put_front(void* p, cudaStream_t stream);          // 1 cached, 0 refused, -1 not the front's
  bool adopt_front(cudaStream_t stream, uint64_t addr, uint64_t size);  // under mu_
  // Under mu_: whether `addr` has a front record; if so *cached says
  // whether it is freed, and *requested (when given) a live one's bytes.
  bool front_record(uint64_t addr, bool* cached, uint64_t* requested) const;
  // Under mu_: a live record leaves its front (false: a cached one stays).
  bool detach_front(uint64_t addr);
  // Under mu_: cached blocks of every front -> StreamCache (bookkeeping
  // only): all, or those of `stream`.
  void drain_fronts(std::optional<cudaStream_t> stream);
  void drained_to_streams(const std::vector<FrontCache::Drained>& blocks);
  void spill(FrontCaches::Front* f);      // takes mu_: f past its limits
  void settle_fronts() {                  // under mu_, before a step that changes the books
    if (fronts_.any()) note_peaks();
  }
  struct FrontTotals {
    uint64_t cached_bytes = 0, cached_blocks = 0, low_water = 0;
  };
  FrontTotals front_totals(bool settle);  // under mu_; settle: counts folded, low water restarted
  FrontCaches fronts_;  // under mu_, but for the cached pair

  AllocatorMutex mu_;
  const cuda::DriverApi* api_;
  int device_;
  uint64_t reserve_bytes_, cache_limit_, map_chunk_;
  uint64_t limit_ = 0;  // set_limit(): mapped bytes at most, 0: none
  PeerAccess peers_;  // granted access to every reservation (peer_access.h)
  // Reservations, published for owns() (lock-free readers); never removed.
  std::atomic<Reservation*> reservations_[kMaxReservations] = {};
  std::atomic<int> reservations_made_{0};
  Reservation* first_;
  sync::FreeEpochs epochs_;
  StreamCache streams_{BlockManager::kSmallLimit};
  HeldFences held_fences_;  // Note [Held ranges reach everyone] (held_fences.h)
  // Blocks are named by address everywhere below. Freed blocks not yet
  // back in their reservation (epochs, stream caches, deferred): addr -> size.
  std::unordered_map<uint64_t, uint64_t> freed_;
  uint64_t freed_bytes_ = 0;
  std::vector<uint64_t> deferred_;  // freed during a capture
  // See Note [Capture without hooks]: the blocks a captured graph may touch,
  // held until the graph is destroyed (graph_holds.h).
  GraphHolds graph_holds_;
  std::unordered_map<uint64_t, std::vector<cudaStream_t>> recorded_;  // record_stream
  AllocatorStatistics stats_;  // counters, peaks, timeline: apart from the blocks
};

}  // namespace alloc
}  // namespace gpuslack

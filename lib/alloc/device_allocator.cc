#include "alloc/device_allocator.h"

#include <algorithm>


#include "base/clock.h"
#include "cuda/driver_context.h"
#include "cuda/runtime_api.h"
#include "sync/stream_registry.h"
#include "log/log.h"

namespace gpuslack {
namespace alloc {

namespace {
// The device's memory: what the driver says, else what the reservation
// was sized from (1.125x it, process_allocators.cc).
uint64_t device_memory(const cuda::DriverApi* api, int device, uint64_t reserve_bytes) {
  size_t free_bytes = 0, total = 0;
  if (api && api->mem_get_info) {
    cuda::ScopedDeviceContext in_device(device);  // cuMemGetInfo answers for the current context
    if (in_device.result() == CUDA_SUCCESS && api->mem_get_info(&free_bytes, &total) != CUDA_SUCCESS) total = 0;
  }
  return total ? total : reserve_bytes / 9 * 8;
}
}  // namespace

DeviceAllocator::DeviceAllocator(const cuda::DriverApi* api, int device, uint64_t reserve_bytes,
                                 uint64_t cache_limit, uint64_t map_chunk)
    // A front caches less than kHeldFenceBytes: a stream's large frees past
    // that are fenced for everyone at once (Note [Held ranges reach
    // everyone]), from StreamCache, as without fronts.
    : fronts_(FrontCache::Limits{64, kHeldFenceBytes - 1, 1024, BlockManager::kSmallLimit}, &DeviceAllocator::front_thread_exited, this),
      api_(api),
      device_(device),
      reserve_bytes_(reserve_bytes),
      cache_limit_(cache_limit),
      map_chunk_(map_chunk),
      peers_(device),
      first_(new Reservation(api, device, reserve_bytes, map_chunk)),
      epochs_(device),
      held_fences_(device, kHeldFenceBytes),
      graph_holds_(device) {
  // The device's memory, asked once the first reservation is made (the
  // order it always had).
  policy_ = MappingPolicy(device_memory(api, device, reserve_bytes));
  reservations_[0].store(first_, std::memory_order_release);
  reservations_made_.store(1, std::memory_order_release);
}

DeviceAllocator::~DeviceAllocator() {
  fronts_.orphan();  // the threads' fronts outlive it
  for (auto& r : reservations_) delete r.load();
}

Reservation* DeviceAllocator::reservation_of(uintptr_t a) const {
  int n = reservations_made_.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    Reservation* r = reservations_[i].load(std::memory_order_acquire);
    if (r->ok() && r->holds(a)) return r;
  }
  return nullptr;
}

uint64_t DeviceAllocator::mapped_bytes() const {
  uint64_t n = 0;
  for_each_reservation([&](const Reservation& r) { n += r.mapped_bytes(); });
  return n;
}

uint64_t DeviceAllocator::held_bytes() const {
  uint64_t n = 0;
  for_each_reservation([&](const Reservation& r) { n += r.allocated(); });
  return n;
}

// ------------------------------------------------------------ reclaiming ---

void DeviceAllocator::reclaim() {
  std::vector<uint64_t> ready;
  epochs_.poll(&ready);
  release(ready);
}

void DeviceAllocator::release(const std::vector<uint64_t>& ready) {
  for (uint64_t addr : ready) {
    auto it = freed_.find(addr);
    if (it == freed_.end()) continue;  // cannot happen; never release twice
    freed_bytes_ -= it->second;
    freed_.erase(it);
    reservation_of(addr)->release(addr);
  }
}

void DeviceAllocator::settle_deferred() {
  for (uint64_t addr : deferred_) epochs_.add(addr);
  deferred_.clear();
  // See Note [Capture without hooks]: a destroyed graph's blocks.
  graph_holds_.release_destroyed([&](uint64_t addr) { epochs_.add(addr); });
}

void DeviceAllocator::note_peaks() {
  uint64_t mapped = mapped_bytes();
  uint64_t allocated = held_bytes() - freed_bytes_;  // freed blocks are not allocated
  policy_.note_peaks(mapped, allocated);
  if (fronts_.any()) {
    // See Note [Front caches]: nor are the blocks fronts cache; the most
    // allocated since the last step is when they cached least.
    FrontTotals fronts = front_totals(true);
    if (fronts.low_water < fronts.cached_bytes) stats_.note(allocated - fronts.low_water, mapped);
    allocated -= fronts.cached_bytes;
  }
  stats_.note(allocated, mapped);
}

uint64_t DeviceAllocator::trim_locked() {
  if (sync::capturing()) return 0;  // Note [Frees during capture]: no unmapping
  uint64_t released = 0;
  for (int i = 0; i < reservations_made_; ++i) released += reservations_[i].load()->trim();
  return released;
}

// ------------------------------------------------------------ allocating ---

void* DeviceAllocator::allocate(size_t bytes) {
  std::lock_guard<AllocatorMutex> lock(mu_);
  settle_fronts();
  return allocate_locked(bytes, std::nullopt);
}

void* DeviceAllocator::allocate(size_t bytes, cudaStream_t stream) {
  if (void* p = take_front(bytes, stream)) return p;  // Note [Front caches]
  std::lock_guard<AllocatorMutex> lock(mu_);
  if (!ok()) return nullptr;
  settle_fronts();
  // The cached path. Not during a capture: the graph may be launched on
  // another stream, unordered with what `stream` still runs.
  if (!sync::capturing()) {
    uint64_t size = BlockManager::round_up(bytes);
    // The same rounded size, freed on this stream: the cheapest reuse.
    if (std::optional<uint64_t> at = streams_.take(stream, size)) {
      auto it = freed_.find(*at);
      freed_bytes_ -= it->second;
      freed_.erase(it);
      reservation_of(*at)->set_requested(*at, bytes);  // what range checks allow now
      stats_.reused_on_stream();
      return served(*at);
    }
    if (size > BlockManager::kSmallLimit) {
      // Any size, split from what the stream holds (Note [Space held for an
      // owner] in block_manager.h): stream order makes it safe. The large
      // blocks it cached by size join its held ranges first, its fronts'
      // too (hold_cached_large).
      held_fences_.allocation_passed();
      // Other streams' finished ranges join the pool first (Note [Others'
      // fenced ranges before new space] in held_fences.h).
      if (held_fences_.size()) take_others_fenced(stream, true);
      hold_cached_large(stream, true);
      for (int i = 0; i < reservations_made_; ++i)
        if (std::optional<uintptr_t> a = reservations_[i].load(std::memory_order_relaxed)->allocate_held(owner_of(stream), bytes)) {
          stats_.reused_on_stream();
          return served(*a);
        }
    }
  }
  return allocate_locked(bytes, stream);
}

void* DeviceAllocator::allocate_mapped(uint64_t bytes) {
  for (int i = 0; i < reservations_made_; ++i)
    if (std::optional<uintptr_t> a = reservations_[i].load(std::memory_order_relaxed)->allocate_mapped(bytes))
      return served(*a);
  return nullptr;
}

// StreamCache's Note [A stream's small blocks at any size].
void* DeviceAllocator::allocate_joined(uint64_t bytes, cudaStream_t stream) {
  drain_fronts(stream);  // its fronts' blocks join the pool
  StreamCache::Blocks mine;
  streams_.small_blocks(stream, &mine);
  if (mine.empty()) return nullptr;
  for (int i = 0; i < reservations_made_; ++i) {
    Reservation* r = reservations_[i].load(std::memory_order_relaxed);
    StreamCache::Blocks here;  // the blocks in `r`: usually all (one reservation)
    if (reservations_made_ > 1)
      for (const auto& m : mine)
        if (r->holds(m.first)) here.push_back(m);
    const StreamCache::Blocks& in_r = reservations_made_ > 1 ? here : mine;
    std::optional<BlockManager::Joined> j = in_r.empty() ? std::nullopt : r->allocate_joined(bytes, in_r);
    if (!j) continue;
    // The blocks it covered were freed until now; what it left of one stays
    // cached on the stream.
    for (uint64_t addr : j->used) {
      auto it = freed_.find(addr);
      streams_.remove(stream, addr, it->second);
      freed_bytes_ -= it->second;
      freed_.erase(it);
    }
    if (j->rest) {
      freed_.emplace(j->rest->first, j->rest->second);
      freed_bytes_ += j->rest->second;
      streams_.put(stream, j->rest->first, j->rest->second);
    }
    stats_.reused_on_stream();
    return served(j->at);
  }
  return nullptr;
}

void* DeviceAllocator::allocate_mapping(uint64_t bytes, CUresult* result, std::optional<cudaStream_t> stream) {
  uint64_t mapped = mapped_bytes();
  uint64_t budget = !limit_ ? Reservation::kNoBudget : limit_ > mapped ? limit_ - mapped : 0;
  std::optional<Reservation::Owner> owner;
  if (stream) owner = owner_of(*stream);
  // See Note [Releasing memory]: up to the mapped total's high-water mark a
  // miss maps freely; past it, it releases cached granules first.
  uint64_t growth = sync::capturing() ? Reservation::kNoBudget : policy_.growth(mapped);
  // GranuleMap's Note [Pages mapped whole]: in pages while the device is
  // less than a quarter full; past that, granule by granule, so that every
  // free granule can be given back under pressure. A small request's
  // small-pool page never: a long-lived small block would pin a whole page.
  const bool in_pages = policy_.in_pages(bytes, mapped);
  bool placed = false;
  for (int i = 0; i < reservations_made_; ++i) {
    Reservation* r = reservations_[i].load(std::memory_order_relaxed);
    const double start = clock::monotonic_seconds();
    const uint64_t granules = r->map().granules_mapped_total();  // what this maps, releases aside
    std::optional<uintptr_t> a =
        r->allocate_mapping(bytes, budget, result, owner, growth, in_pages, policy_.long_run_bytes(mapped, bytes));
    if (a) {
      policy_.note_map_cost(clock::monotonic_seconds() - start,
                            (r->map().granules_mapped_total() - granules) * r->map().granularity());
      return served(*a);
    }
    if (*result != CUDA_ERROR_NOT_FOUND) placed = true;  // a free range held it: the memory ran out
    if (placed) return nullptr;
  }
  // No free range of any reservation holds it: the address space ran out.
  if (reservations_made_ == kMaxReservations) {
    *result = CUDA_ERROR_OUT_OF_MEMORY;
    return nullptr;
  }
  auto* r = new Reservation(api_, device_, std::max<uint64_t>(reserve_bytes_, bytes), map_chunk_);
  if (!r->ok()) {
    log::warn("device {}: no more address space for the VMM allocator: {}", device_, r->why());
    delete r;
    *result = CUDA_ERROR_OUT_OF_MEMORY;
    return nullptr;
  }
  for (int peer : peers_) r->grant(peer);
  int n = reservations_made_.load(std::memory_order_relaxed);
  reservations_[n].store(r, std::memory_order_release);
  reservations_made_.store(n + 1, std::memory_order_release);
  log::info("device {}: the VMM allocator reserved more address space ({} reservations)", device_, n + 1);
  std::optional<uintptr_t> a = r->allocate_mapping(bytes, budget, result, std::nullopt, Reservation::kNoBudget, in_pages,
                                                   policy_.long_run_bytes(mapped, bytes));
  return a ? served(*a) : nullptr;
}

void* DeviceAllocator::allocate_locked(size_t bytes, std::optional<cudaStream_t> stream) {
  if (!ok()) return nullptr;
  const bool capture = sync::capturing();
  if (!capture && (!deferred_.empty() || !graph_holds_.empty())) settle_deferred();
  if (capture) drain_fronts(std::nullopt);  // Note [Front caches]: a capture began
  // See Note [Others' fenced ranges before new space] in held_fences.h:
  // other streams' finished ranges go to the free space first (an event
  // query each, never during a capture).
  if (!capture && held_fences_.size() && BlockManager::round_up(bytes) > BlockManager::kSmallLimit)
    take_others_fenced(stream, false);
  // Memory that is free, fenced and mapped: no driver call, no event.
  if (void* p = allocate_mapped(bytes)) return p;
  if (capture) {
    // See Note [Frees during capture]: nothing more may happen now.
    stats_.capture_fallback();
    return nullptr;
  }
  // What the stream holds, grown into mapped free space beside it.
  if (stream) {
    for (int i = 0; i < reservations_made_; ++i)
      if (std::optional<uintptr_t> a =
              reservations_[i].load(std::memory_order_relaxed)->allocate_mapped(bytes, owner_of(*stream)))
        return served(*a);
  }
  // A miss. Before mapping anything: take back what the GPU is done with
  // (a query per fenced epoch, and the held ranges whose fence completed);
  // then, if that is not enough, fence every block still held back (one
  // event per stream; held ranges stay their stream's, fenced by
  // settle_held()) and take back again; then, if fenced blocks could serve,
  // wait for them while that costs less than mapping (Note [Waiting instead
  // of mapping]).
  const bool fronts_cache = !fronts_.empty() && front_totals(false).cached_blocks;  // Note [Front caches]
  for (int pass = 0; pass < 2 && (!freed_.empty() || cached_on_streams() || fronts_cache); ++pass) {
    if (pass == 1) {
      // Before the stream's cache is fenced: its small blocks at any size.
      if (stream && BlockManager::round_up(bytes) <= BlockManager::kSmallLimit)
        if (void* p = allocate_joined(bytes, *stream)) return p;
      fence_all(false);
      if (freed_.empty()) break;
    }
    reclaim();
    settle_held();
    if (void* p = allocate_mapped(bytes)) return p;
  }
  if (void* p = wait_then_allocate(bytes)) return p;
  // About to grow: past the cache limit, give back the cached granules
  // first, so that the mapped total follows what is in use rather than
  // where blocks happened to land. (Without one, the mapping itself gives
  // back as much as it maps: Note [Releasing memory].)
  if (cache_limit_ && mapped_bytes() > held_bytes() + cached_on_streams() + cache_limit_) trim_locked();
  CUresult result = CUDA_SUCCESS;
  if (void* p = allocate_mapping(bytes, &result, stream)) return p;
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    // Pressure: give back cached granules, then wait for pending frees.
    stats_.oom_retry();
    trim_locked();
    if (void* p = allocate_mapping(bytes, &result, stream)) return p;
    if (result == CUDA_ERROR_OUT_OF_MEMORY) {
      fence_all(true);  // what every stream holds too
      std::vector<uint64_t> ready;
      stats_.stalled(epochs_.wait_all(&ready));
      release(ready);
      // What the GPU was still using is free now and still mapped: placed
      // on it, the block maps only what is missing. Unmap only if that fails.
      if (void* p = allocate_mapping(bytes, &result, stream)) return p;
      if (result == CUDA_ERROR_OUT_OF_MEMORY && trim_locked() > 0) {
        if (void* p = allocate_mapping(bytes, &result, stream)) return p;
      }
    }
  }
  stats_.failed_allocation();
  note_peaks();
  uint64_t largest = 0;
  for_each_reservation([&](const Reservation& r) { largest = std::max(largest, r.largest_free()); });
  log::warn("device {}: out of memory for {} bytes (allocated {}, reserved {}, largest free range {}){}", device_,
            bytes, held_bytes() - freed_bytes_, mapped_bytes(), largest,
            result == CUDA_ERROR_OUT_OF_MEMORY ? "" : "; the driver said " + std::to_string(static_cast<int>(result)));
  return nullptr;
}

void* DeviceAllocator::allocate_in_capture(size_t bytes, const Capture& capture) {
  std::lock_guard<AllocatorMutex> lock(mu_);
  if (!ok()) return nullptr;
  settle_fronts();
  void* p = allocate_mapped(bytes);
  CUresult result = CUDA_SUCCESS;
  if (!p) {
    // Mapping queries, records and waits for nothing; relaxed, the thread's
    // driver calls cannot invalidate a global-mode capture.
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    bool relaxed = cuda::thread_exchange_stream_capture_mode(&mode) == cudaSuccess;
    p = allocate_mapping(bytes, &result, std::nullopt);
    if (relaxed) cuda::thread_exchange_stream_capture_mode(&mode);
  }
  if (!p) {
    stats_.failed_allocation();
    log::warn("device {}: out of memory for {} bytes during a CUDA graph capture (allocated {}, reserved {}; "
              "nothing is trimmed or waited for during a capture){}", device_, bytes, held_bytes() - freed_bytes_,
              mapped_bytes(),
              result == CUDA_ERROR_OUT_OF_MEMORY ? "" : "; the driver said " + std::to_string(static_cast<int>(result)));
    return nullptr;
  }
  graph_holds_.allocated(reinterpret_cast<uintptr_t>(p), capture.id, capture.graph);
  return p;
}

bool DeviceAllocator::free_in_capture(void* p, const Capture& capture) {
  std::lock_guard<AllocatorMutex> lock(mu_);
  settle_fronts();
  uint64_t addr;
  if (!take_freed(p, &addr)) return false;
  graph_holds_.freed_in_capture(addr, capture.id, capture.graph);
  recorded_.erase(addr);  // held past every stream's use
  stats_.deferred_free();
  note_peaks();
  return true;
}

void* DeviceAllocator::served(uintptr_t addr) {
  stats_.allocated();
  note_peaks();
  if (cache_limit_ && mapped_bytes() > held_bytes() + cached_on_streams() + cache_limit_) trim_locked();
  return reinterpret_cast<void*>(addr);
}

// --------------------------------------------------------------- freeing ---

bool DeviceAllocator::take_freed(void* p, uint64_t* addr, uint64_t* size_out) {
  *addr = reinterpret_cast<uintptr_t>(p);
  // See Note [Front caches]: a block a front holds leaves it first, unless the
  // front has it freed already.
  if (!fronts_.empty() && fronts_.has_record(*addr) && !detach_front(*addr)) return false;
  Reservation* r = reservation_of(*addr);
  uint64_t size = r ? r->size_of(*addr) : 0;
  if (size == 0 || !freed_.emplace(*addr, size).second) return false;
  if (size_out) *size_out = size;
  freed_bytes_ += size;
  stats_.freed();
  return true;
}

bool DeviceAllocator::free(void* p, std::optional<cudaStream_t> stream) {
  if (stream) {  // Note [Front caches]
    int front = put_front(p, *stream);
    if (front >= 0) return front == 1;
  }
  std::lock_guard<AllocatorMutex> lock(mu_);
  settle_fronts();
  uint64_t addr, size;
  if (!take_freed(p, &addr, &size)) return false;
  if (graph_holds_.free_held(addr)) {
    // See Note [Capture without hooks]: allocated during a capture, so its
    // graph may still write here: held while the graph lives.
    recorded_.erase(addr);
    stats_.deferred_free();
    note_peaks();
    return true;
  }
  if (sync::capturing()) {
    deferred_.push_back(addr);
    stats_.deferred_free();
  } else if (auto rec = recorded_.find(addr); rec != recorded_.end()) {
    // Its recorded streams may not be fence streams (PyTorch's streams are
    // made without the hooks): fence on them and on the freeing stream, or,
    // freed with no stream, on every fence stream.
    std::vector<cudaStream_t> on = std::move(rec->second);
    if (stream) on.push_back(*stream);
    epochs_.close_on({addr}, std::move(on), !stream);
    recorded_.erase(rec);
  } else if (!stream) {
    epochs_.add(addr);
    // Bound what an open epoch holds back: fence a full batch now.
    if (epochs_.open_blocks() >= kEpochBlocks) epochs_.close();
  } else if (adopt_front(*stream, addr, size)) {
    // The thread's front cache has it now (Note [Front caches]).
  } else if (streams_.put(*stream, addr, size) > kStreamCacheBlocks ||
             (cache_limit_ && cached_on_streams() > cache_limit_)) {
    // Too much held for one stream: fence it for everyone (one event).
    fence_stream(*stream, cache_limit_ != 0);
  } else if (size > BlockManager::kSmallLimit && streams_.bytes_of(*stream) >= kHeldFenceBytes) {
    // Large blocks past kHeldFenceBytes join the stream's held ranges now,
    // where the next fence covers them (Note [Held ranges reach everyone]).
    hold_cached_large(*stream);
  } else if (size > BlockManager::kSmallLimit && held_fences_.due(*stream)) {
    // A fence the allocation path left due (Note [Fences off the allocation
    // path] in held_fences.h): this free records it, over what the stream
    // caches by size too.
    hold_cached_large(*stream);
    freed_to_held(*stream, 0);
  }
  note_peaks();
  return true;
}

bool DeviceAllocator::record_stream(void* p, cudaStream_t stream) {
  std::lock_guard<AllocatorMutex> lock(mu_);
  uint64_t addr = reinterpret_cast<uintptr_t>(p);
  Reservation* r = reservation_of(addr);
  if (!r || r->size_of(addr) == 0 || freed_.count(addr)) return false;
  // See Note [Front caches]: its free must wait for `stream` too, which a
  // front does not know: it leaves the front (a freed one is refused).
  if (!fronts_.empty() && fronts_.has_record(addr) && !detach_front(addr)) return false;
  std::vector<cudaStream_t>& on = recorded_[addr];
  if (std::find(on.begin(), on.end(), stream) == on.end()) on.push_back(stream);
  return true;
}

void DeviceAllocator::forget_stream(cudaStream_t stream) {
  std::lock_guard<AllocatorMutex> lock(mu_);
  // During a capture the record fails and the blocks join the open epoch,
  // fenced on every stream later: safe either way.
  settle_fronts();
  drain_fronts(stream);
  fence_stream(stream, true);
}

std::optional<BlockManager::Live> DeviceAllocator::live_block(const void* p) const {
  Reservation* r = reservation_of(reinterpret_cast<uintptr_t>(p));
  if (!r) return std::nullopt;
  std::optional<BlockManager::Live> b = r->block_containing(reinterpret_cast<uintptr_t>(p));
  if (!b || freed_.count(b->start)) return std::nullopt;
  // See Note [Front caches]: cached in a front is freed; live there, its
  // requested bytes are the front's.
  bool cached = false;
  if (!fronts_.empty() && front_record(b->start, &cached, &b->requested) && cached) return std::nullopt;
  return b;
}

void* DeviceAllocator::block_of(const void* p, size_t* size) {
  std::lock_guard<AllocatorMutex> lock(mu_);
  std::optional<BlockManager::Live> b = live_block(p);
  *size = b ? b->size : 0;
  return b ? reinterpret_cast<void*>(b->start) : nullptr;
}

bool DeviceAllocator::holds_range(const void* p, size_t bytes) {
  std::lock_guard<AllocatorMutex> lock(mu_);
  std::optional<BlockManager::Live> b = live_block(p);
  return b && bytes <= b->requested - (reinterpret_cast<uintptr_t>(p) - b->start);
}

bool DeviceAllocator::chunks_of_block(const void* p, uint64_t* requested, std::vector<GranuleMap::Chunk>* out) {
  std::lock_guard<AllocatorMutex> lock(mu_);
  std::optional<BlockManager::Live> b = live_block(p);
  if (!b || b->start != reinterpret_cast<uintptr_t>(p)) return false;
  *requested = b->requested;
  return reservation_of(b->start)->chunks(b->start, b->requested ? b->requested : 1, out);
}

// ------------------------------------------------------------- the rest ---

uint64_t DeviceAllocator::trim() {
  std::lock_guard<AllocatorMutex> lock(mu_);
  if (sync::capturing()) return 0;
  settle_fronts();
  settle_deferred();
  // An explicit trim (torch.cuda.empty_cache) may wait, as PyTorch's own
  // does: every freed block is fenced and waited for, so that all of it is
  // released now rather than whenever its events happen to have completed.
  fence_all(true);
  std::vector<uint64_t> ready;
  epochs_.wait_all(&ready);
  release(ready);
  uint64_t released = trim_locked();
  note_peaks();
  return released;
}

bool DeviceAllocator::grant_peer(int peer) {
  std::lock_guard<AllocatorMutex> lock(mu_);
  std::vector<Reservation*> reservations;
  for (int i = 0; i < reservations_made_; ++i) reservations.push_back(reservations_[i].load(std::memory_order_relaxed));
  return peers_.grant(peer, reservations);
}

void DeviceAllocator::set_limit(uint64_t bytes) {
  std::lock_guard<AllocatorMutex> lock(mu_);
  limit_ = bytes;
}

uint64_t DeviceAllocator::unused_bytes() {
  std::lock_guard<AllocatorMutex> lock(mu_);
  if (!sync::capturing()) reclaim();  // Note [Frees during capture]: no event query
  // Freed blocks are not live, reclaimed or not (docs/allocator.md, "cudaMemGetInfo").
  uint64_t live = held_bytes() - freed_bytes_ - front_totals(false).cached_bytes, mapped = mapped_bytes();
  return mapped > live ? mapped - live : 0;
}

void DeviceAllocator::fence_frees() {
  std::lock_guard<AllocatorMutex> lock(mu_);
  if (sync::capturing()) return;
  settle_deferred();
  epochs_.close();  // a failure leaves them open, fenced at the next miss
}

void DeviceAllocator::take_back_completed() {
  std::lock_guard<AllocatorMutex> lock(mu_);
  if (sync::capturing()) return;
  reclaim();
  note_peaks();
}

DeviceStats DeviceAllocator::stats() {
  std::lock_guard<AllocatorMutex> lock(mu_);
  note_peaks();
  DeviceStats s = stats_.counted();
  s.pending_free = epochs_.pending_blocks() + streams_.blocks() + deferred_.size() + front_totals(false).cached_blocks;
  s.pending_free += graph_holds_.held_blocks();
  for_each_reservation([&](const Reservation& r) {
    s.largest_free = std::max(s.largest_free, r.largest_free());
    s.granules_mapped += r.map().granules_mapped_total();
    s.granules_unmapped += r.map().granules_unmapped_total();
    s.chunks_mapped += r.map().chunks_mapped_total();
    s.chunks_unmapped += r.map().chunks_unmapped_total();
    s.unmap_calls += r.map().unmap_calls();
    s.set_access_calls += r.map().set_access_calls();
    s.created_without |= r.map().refused();
  });
  s.reservations = static_cast<uint64_t>(reservations_made_.load());
  s.epochs = epochs_.epochs_closed();
  return s;
}

void DeviceAllocator::reset_peaks() {
  std::lock_guard<AllocatorMutex> lock(mu_);
  note_peaks();
  stats_.reset_peaks();
}

Timeline::Samples DeviceAllocator::timeline() {
  std::lock_guard<AllocatorMutex> lock(mu_);
  settle_fronts();
  return stats_.timeline();
}

}  // namespace alloc
}  // namespace gpuslack

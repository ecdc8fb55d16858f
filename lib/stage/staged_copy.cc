// See staged_copy.h. The fast path (what every copy pays) is copy() up to
// the classification: a kind check, and for host<->device copies the
// pointer kinds (cuda/pointer_kind.h: a per-thread cache). Staging itself
// is below, one function per direction.
#include "stage/staged_copy.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>
#include <new>

#include "base/fork_handler.h"
#include "sync/stream_registry.h"
#include "config/options.h"
#include "cuda/pointer_kind.h"
#include "cuda/runtime_api.h"
#include "stage/host_copy.h"
#include "stage/host_work.h"

namespace gpuslack {
namespace stage {
namespace {

using cuda::PointerKind;

enum class Route { kOther, kToHost, kPageableH2D, kPageableD2H };

bool device_side(PointerKind k) { return k == PointerKind::kDevice || k == PointerKind::kManaged; }

// What the copy is, from its kind and (only as far as needed) its pointers.
Route classify(const CopyCall& c) {
  switch (c.kind) {
    case cudaMemcpyHostToDevice: {
      if (cuda::pointer_kind(c.src) != PointerKind::kPageableHost) return Route::kOther;
      return cuda::pointer_kind(c.dst) == PointerKind::kDevice ? Route::kPageableH2D : Route::kOther;
    }
    case cudaMemcpyDeviceToHost: {
      PointerKind d = cuda::pointer_kind(c.dst);
      if (d != PointerKind::kPageableHost) return Route::kToHost;  // pinned, or unknown: cautious
      return cuda::pointer_kind(c.src) == PointerKind::kDevice ? Route::kPageableD2H : Route::kOther;
    }
    case cudaMemcpyDefault: {
      PointerKind s = cuda::pointer_kind(c.src), d = cuda::pointer_kind(c.dst);
      if (s == PointerKind::kPageableHost && d == PointerKind::kDevice) return Route::kPageableH2D;
      if (s == PointerKind::kDevice && d == PointerKind::kPageableHost) return Route::kPageableD2H;
      if (device_side(s) && !device_side(d)) return Route::kToHost;
      return Route::kOther;
    }
    default: return Route::kOther;
  }
}

// Whether `s` captures a graph, or whether gpuslack cannot tell (the query
// failed): either way the copy passes through, under its own reason.
enum class Capture { kNone, kCapturing, kUnknown };
Capture capture_of(const StreamRef& s) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cuda::stream_is_capturing(s.handle, &status) != cudaSuccess) {
    cuda::get_last_error();
    return Capture::kUnknown;
  }
  return status != cudaStreamCaptureStatusNone ? Capture::kCapturing : Capture::kNone;
}

uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

uint64_t elapsed_ns(uint64_t since) { return now_ns() - since; }

// How many pipelined D2H chunks may be in flight at once.
constexpr size_t kD2hWindow = 4;

// The host side of a chunk: `rows` rows of `len` bytes, `from_pitch` apart
// at `from`, to `to_pitch` apart at `to` (a staging block's rows are packed:
// `len` apart). One row is cut across `threads` threads (host_copy.h).
void copy_rows(char* to, size_t to_pitch, const char* from, size_t from_pitch, size_t len, size_t rows,
               int threads) {
  if (rows == 1) {
    host_copy(to, from, len, threads);
    return;
  }
  for (size_t r = 0; r < rows; ++r) std::memcpy(to + r * to_pitch, from + r * from_pitch, len);
}

// The device side of a chunk, enqueued on `s`: the same rows by DMA.
cudaError_t dma_rows(char* to, size_t to_pitch, const char* from, size_t from_pitch, size_t len, size_t rows,
                     cudaMemcpyKind kind, const StreamRef& s) {
  return rows == 1 ? cuda::memcpy_async(to, from, len, kind, s.handle)
                   : cuda::memcpy_2d_async(to, to_pitch, from, from_pitch, len, rows, kind, s.handle);
}

// The copy out of staging of an asynchronous D2H chunk, run by the
// runtime as a host function once the chunk's DMA has landed.
struct CopyOut {
  char* dst;
  size_t dpitch;
  const char* staging;
  size_t len, rows;
};
void run_copy_out(void* p) {
  auto* job = static_cast<CopyOut*>(p);
  copy_rows(job->dst, job->dpitch, job->staging, job->len, job->len, job->rows, 1);
  delete job;
}

}  // namespace

// A piece of a copy: `rows` rows from `row`, `len` bytes of each from byte
// `offset` (a 1D copy is one row cut by bytes; a 2D copy is cut by rows).
struct Stager::Chunk {
  size_t row = 0, rows = 0, offset = 0, len = 0;
  size_t bytes() const { return rows * len; }
};

StagerConfig stager_config_from_options() {
  const Options& o = options();
  StagerConfig c;
  c.enabled = o.stage_copies;
  c.exact = o.exact_copy_semantics;
  c.async_d2h = o.async_d2h && !o.exact_copy_semantics;
  c.budget_bytes = static_cast<size_t>(o.staging_budget_mb) << 20;
  c.chunk_bytes = static_cast<size_t>(o.staging_chunk_kb) << 10;
  c.threshold_bytes = static_cast<size_t>(o.staging_threshold_kb) << 10;
  c.copy_threads = std::clamp(o.staging_copy_threads, 1, kMaxCopyThreads);
  if (c.chunk_bytes == 0) c.chunk_bytes = 1u << 20;
  if (c.budget_bytes < c.chunk_bytes) c.budget_bytes = c.chunk_bytes;
  return c;
}

Stager::Stager(const StagerConfig& config) : config_(config), pool_(config.budget_bytes, config.chunk_bytes) {}

bool Stager::next_chunk(const CopyCall& c, Chunk* k) const {
  const size_t max = pool_.max_block();
  if (c.height <= 1) {
    size_t offset = k->rows ? k->offset + k->len : 0;
    if (offset >= c.width) return false;
    *k = Chunk{0, 1, offset, std::min(max, c.width - offset)};
    return true;
  }
  size_t row = k->row + k->rows;
  if (row >= c.height) return false;
  size_t per_chunk = std::max<size_t>(1, max / c.width);
  *k = Chunk{row, std::min(per_chunk, c.height - row), 0, c.width};
  return true;
}

// The runtime's own copy of everything from chunk `from` on.
cudaError_t Stager::native_rest(const CopyCall& c, const Chunk& from, const StreamRef& s) {
  auto* dst = static_cast<char*>(c.dst);
  auto* src = static_cast<const char*>(c.src);
  if (c.height <= 1)
    return cuda::memcpy_async(dst + from.offset, src + from.offset, c.width - from.offset, c.kind, s.handle);
  return cuda::memcpy_2d_async(dst + from.row * c.dpitch, c.dpitch, src + from.row * c.spitch, c.spitch, c.width,
                               c.height - from.row, c.kind, s.handle);
}

Stager::Pass Stager::pass_reason(const CopyCall& c, bool h2d, size_t bytes, const StreamRef& s) const {
  if (h2d && config_.exact) return Pass::kExact;
  if (bytes < config_.threshold_bytes) return Pass::kSmall;
  // During a global-mode capture on any stream, gpuslack's event queries
  // would invalidate it (Note [Frees during capture] in alloc/).
  if (sync::capturing()) return Pass::kCapture;
  switch (capture_of(s)) {
    case Capture::kCapturing: return Pass::kCapture;
    case Capture::kUnknown: return Pass::kCaptureUnknown;
    case Capture::kNone: break;
  }
  if (c.height > 1 && c.width > pool_.max_block()) return Pass::kUnsupported;
  return Pass::kNone;
}

cudaError_t Stager::pass(const CopyCall& c, NativeCopy native, void* real, DirectionCounters& d, Counter& why) {
  d.passed.add(1);
  d.passed_bytes.add(c.width * c.height);
  why.add(1);
  return native(c, real);
}

// See Note [The whole range first]: true when `c` must not be staged because
// its device range runs past its allocation; *r is then what the
// application gets. A span the route found inside a block of gpuslack's
// allocator is not asked again.
bool Stager::refused(const CopyCall& c, bool h2d, cudaError_t* r, NativeCopy native, void* real) {
  if (h2d ? c.dst_in_block : c.src_in_block) return false;
  if (cuda::within_allocation(h2d ? c.dst : c.src, h2d ? c.dst_span() : c.src_span())) return false;
  *r = native(c, real);
  return true;
}

cudaError_t Stager::copy(const CopyCall& c, NativeCopy native, void* real) {
  const size_t bytes = c.width * c.height;
  if (bytes == 0 || c.dst == nullptr || c.src == nullptr) return native(c, real);
  // Pitches the runtime refuses: it answers.
  if (c.bad_pitch()) return native(c, real);
  Route route = classify(c);
  if (route == Route::kOther) return native(c, real);
  if (route == Route::kToHost) {
    if (!config_.enabled) return native(c, real);
    cudaError_t r = native(c, real);
    // cudaMemcpy to the host returns when done; an async one stays pending.
    if (r == cudaSuccess && !c.sync_api) note_host_work(c);
    return r;
  }

  const bool h2d = route == Route::kPageableH2D;
  cudaError_t refusal = cudaSuccess;
  if (config_.enabled && refused(c, h2d, &refusal, native, real)) return refusal;
  DirectionCounters& d = h2d ? h2d_ : d2h_;
  d.seen.add(1);
  d.seen_bytes.add(bytes);
  if (!config_.enabled) return pass(c, native, real, d, passed_off_);
  // Checked first: with an error pending gpuslack makes no runtime call.
  if (cuda::peek_at_last_error() != cudaSuccess) return pass(c, native, real, d, passed_error_pending_);
  StreamRef s = stream_ref(c.stream, c.per_thread_default);
  switch (pass_reason(c, h2d, bytes, s)) {
    case Pass::kNone: break;
    case Pass::kSmall: return pass(c, native, real, d, passed_small_);
    case Pass::kCapture: return pass(c, native, real, d, passed_capture_);
    case Pass::kCaptureUnknown: return pass(c, native, real, d, passed_capture_unknown_);
    case Pass::kExact: return pass(c, native, real, d, passed_exact_);
    case Pass::kErrorPending: return pass(c, native, real, d, passed_error_pending_);
    case Pass::kUnsupported: return pass(c, native, real, d, passed_unsupported_);
  }
  return h2d ? stage_h2d(c, s, native, real) : stage_d2h(c, s, native, real);
}

// Note [One chunk loop]: every staged copy moves its chunks (next_chunk)
// through staging blocks in chunk_loop(). Each chunk gets a block; when none
// can be had, the runtime's own call does the rest of the copy, after the
// chunks before it on the stream (counted partial). `enqueue` then does the chunk's share with the
// block: a host->device chunk copies into it and enqueues its DMA, an
// asynchronous device->host chunk enqueues its DMA and the host function
// that copies out. A refused DMA ends the copy with the runtime's answer
// (and its last error, untouched); nothing reads that block, and the loop
// releases it. Otherwise, without `land`, the step has handed the block
// back itself (release_after: reusable once the stream reaches it). With
// `land` (a synchronous device->host copy), the loop keeps up to kD2hWindow
// chunks in flight, each with an event recorded after its DMA, and once
// the oldest one's event has completed, `land` copies it out of staging and
// its block goes back: the host copy of one chunk overlaps the DMAs of the
// next ones. Holding blocks, the loop never waits for another (Note
// [Staging budget]): a chunk that finds none tries again once the oldest
// held chunk has landed.
cudaError_t Stager::chunk_loop(const CopyCall& c, const StreamRef& s, EnqueueChunk enqueue, const LandChunk* land) {
  struct InFlight {
    StagingBlock block;
    sync::PooledEvent event;  // empty: wait for the stream instead
    Chunk chunk;
  };
  std::deque<InFlight> window;  // only with `land`
  Chunk k;
  bool more = next_chunk(c, &k);
  cudaError_t result = cudaSuccess;
  bool fallback = false;
  while (result == cudaSuccess) {
    while (more && window.size() < kD2hWindow) {
      StagingBlock b = pool_.acquire(k.bytes(), /*wait=*/window.empty());
      if (!b) {
        fallback = window.empty();
        break;
      }
      cudaError_t e = enqueue(b, k);
      if (e != cudaSuccess) {
        pool_.release(b);
        result = e;
        break;
      }
      if (land) {
        sync::PooledEvent ev = sync::take_event(s.device, sync::EventKind::kNoTiming);
        if (ev && cuda::event_record(ev.event, s.handle) != cudaSuccess) {
          cuda::get_last_error();
          sync::give_event(ev);
          ev = {};
        }
        window.push_back({b, ev, k});
      }
      more = next_chunk(c, &k);
    }
    if (fallback || window.empty()) break;
    InFlight& f = window.front();
    cudaError_t w = f.event ? cuda::event_synchronize(f.event.event) : cuda::stream_synchronize(s.handle);
    if (w != cudaSuccess) {
      result = w;
      break;
    }
    (*land)(f.block, f.chunk);
    pool_.release(f.block);
    sync::give_event(f.event);
    window.pop_front();
  }
  if (!window.empty()) {
    // An error: let the DMAs already enqueued finish before their blocks go
    // back (a failure here repeats the error the application gets).
    cuda::stream_synchronize(s.handle);
    for (InFlight& f : window) {
      pool_.release(f.block);
      sync::give_event(f.event);
    }
  }
  if (fallback && result == cudaSuccess) {
    partial_.add(1);
    return native_rest(c, k, s);
  }
  return result;
}

// ------------------------------------------------------------ host->device --

cudaError_t Stager::stage_h2d(const CopyCall& c, const StreamRef& s, NativeCopy native, void* real) {
  const uint64_t start = now_ns();
  HostWorkWait w = wait_for_host_work(s);
  if (w.unknown) return pass(c, native, real, h2d_, passed_unknown_work_);
  if (w.streams > 0) {
    host_work_waits_.add(1);
    host_work_wait_ns_.add(w.waited_ns);
  }
  if (s.legacy) {
    legacy_h2d_.add(1);
    legacy_other_streams_.add(static_cast<uint64_t>(w.other_streams));
  }

  auto* dst = static_cast<char*>(c.dst);
  auto* src = static_cast<const char*>(c.src);
  const size_t spitch = c.src_pitch();
  const size_t dpitch = c.dst_pitch();
  cudaError_t result = chunk_loop(c, s, [&](const StagingBlock& b, const Chunk& k) {
    copy_rows(b.data, k.len, src + k.row * spitch + k.offset, spitch, k.len, k.rows, config_.copy_threads);
    cudaError_t e = dma_rows(dst + k.row * dpitch + k.offset, dpitch, b.data, k.len, k.len, k.rows,
                             cudaMemcpyHostToDevice, s);
    if (e == cudaSuccess) pool_.release_after(b, s);
    return e;
  });
  h2d_.staged.add(1);
  h2d_.staged_bytes.add(c.width * c.height);
  h2d_.blocked_ns.add(elapsed_ns(start));
  return result;
}

// ------------------------------------------------------------ device->host --

cudaError_t Stager::stage_d2h(const CopyCall& c, const StreamRef& s, NativeCopy native, void* real) {
  const size_t bytes = c.width * c.height;
  if (config_.async_d2h && !c.sync_api) {
    const uint64_t start = now_ns();
    cudaError_t r = d2h_async(c, s);
    async_d2h_copies_.add(1);
    d2h_.staged.add(1);
    d2h_.staged_bytes.add(bytes);
    d2h_.blocked_ns.add(elapsed_ns(start));
    return r;
  }
  // Both ways return once the data is in the buffer, which is after the
  // stream's earlier work: wait for that first, so that only the transfers
  // are compared.
  const uint64_t start = now_ns();
  if (cuda::stream_synchronize(s.handle) != cudaSuccess) {
    // An error of earlier work: the runtime's own call reports it.
    cuda::get_last_error();
    return pass(c, native, real, d2h_, passed_measured_);
  }
  const CopyWay way = config_.d2h_way == StagerConfig::D2hWay::kMeasure ? chooser_.pick(bytes)
                      : config_.d2h_way == StagerConfig::D2hWay::kStaged ? CopyWay::kStaged
                                                                         : CopyWay::kNative;
  const uint64_t t = now_ns();
  if (way == CopyWay::kNative) {
    cudaError_t r = pass(c, native, real, d2h_, passed_measured_);
    if (r == cudaSuccess) chooser_.record(CopyWay::kNative, bytes, elapsed_ns(t));
    return r;
  }
  size_t staged = 0;
  cudaError_t r = d2h_pipeline(c, s, &staged);
  const uint64_t took = elapsed_ns(t);
  if (r == cudaSuccess && staged == bytes) chooser_.record(CopyWay::kStaged, bytes, took);
  d2h_.staged.add(1);
  d2h_.staged_bytes.add(bytes);
  d2h_.blocked_ns.add(elapsed_ns(start));
  return r;
}

cudaError_t Stager::d2h_pipeline(const CopyCall& c, const StreamRef& s, size_t* staged_bytes) {
  auto* dst = static_cast<char*>(c.dst);
  auto* src = static_cast<const char*>(c.src);
  const size_t spitch = c.src_pitch();
  const size_t dpitch = c.dst_pitch();
  auto land = [&](const StagingBlock& b, const Chunk& k) {
    copy_rows(dst + k.row * dpitch + k.offset, dpitch, b.data, k.len, k.len, k.rows, config_.copy_threads);
    *staged_bytes += k.bytes();
  };
  const LandChunk copy_out = land;
  return chunk_loop(
      c, s,
      [&](const StagingBlock& b, const Chunk& k) {
        return dma_rows(b.data, k.len, src + k.row * spitch + k.offset, spitch, k.len, k.rows,
                        cudaMemcpyDeviceToHost, s);
      },
      &copy_out);
}

cudaError_t Stager::d2h_async(const CopyCall& c, const StreamRef& s) {
  auto* dst = static_cast<char*>(c.dst);
  auto* src = static_cast<const char*>(c.src);
  const size_t spitch = c.src_pitch();
  const size_t dpitch = c.dst_pitch();
  cudaError_t result = chunk_loop(c, s, [&](const StagingBlock& b, const Chunk& k) {
    cudaError_t e = dma_rows(b.data, k.len, src + k.row * spitch + k.offset, spitch, k.len, k.rows,
                             cudaMemcpyDeviceToHost, s);
    if (e != cudaSuccess) return e;
    auto* job = new CopyOut{dst + k.row * dpitch + k.offset, dpitch, b.data, k.len, k.rows};
    if (cuda::launch_host_func(s.handle, &run_copy_out, job) != cudaSuccess) {
      // Cannot defer it: finish this chunk now (a wait, as the runtime's
      // own call would have made).
      cuda::get_last_error();
      if (cuda::stream_synchronize(s.handle) != cudaSuccess) cuda::get_last_error();
      run_copy_out(job);
      pool_.release(b);
      return cudaSuccess;
    }
    pool_.release_after(b, s);
    return cudaSuccess;
  });
  // Later pageable H2D copies on this stream must wait for the host
  // functions (Note [The drain a staged copy keeps]).
  host_work_enqueued(s, /*may_call_runtime=*/true);
  return result;
}

void Stager::note_host_work(const CopyCall& c) { stage::note_host_work(c.stream, c.per_thread_default); }

StagingStats Stager::stats() const {
  StagingStats st;
  st.enabled = config_.enabled;
  st.exact = config_.exact;
  st.async_d2h = config_.async_d2h;
  st.threshold_bytes = config_.threshold_bytes;
  st.chunk_bytes = pool_.max_block();
  auto fill = [](const DirectionCounters& d, StagingStats::Direction* out) {
    out->seen = d.seen.get();
    out->seen_bytes = d.seen_bytes.get();
    out->staged = d.staged.get();
    out->staged_bytes = d.staged_bytes.get();
    out->passed = d.passed.get();
    out->passed_bytes = d.passed_bytes.get();
    out->blocked_ns = d.blocked_ns.get();
  };
  fill(h2d_, &st.h2d);
  fill(d2h_, &st.d2h);
  st.passed_off = passed_off_.get();
  st.passed_small = passed_small_.get();
  st.passed_capture = passed_capture_.get();
  st.passed_capture_unknown = passed_capture_unknown_.get();
  st.passed_exact = passed_exact_.get();
  st.passed_error_pending = passed_error_pending_.get();
  st.passed_unsupported = passed_unsupported_.get();
  st.passed_measured = passed_measured_.get();
  st.passed_unknown_work = passed_unknown_work_.get();
  st.partial = partial_.get();
  st.host_work_waits = host_work_waits_.get();
  st.host_work_wait_ns = host_work_wait_ns_.get();
  st.legacy_h2d = legacy_h2d_.get();
  st.legacy_other_streams = legacy_other_streams_.get();
  st.async_d2h_copies = async_d2h_copies_.get();
  StagingPoolStats p = pool_.stats();
  st.budget_waits = p.budget_waits;
  st.budget_wait_ns = p.budget_wait_ns;
  st.budget_bytes = p.budget_bytes;
  st.pinned_bytes = p.pinned_bytes;
  st.peak_in_use_bytes = p.peak_in_use_bytes;
  st.pin_failures = p.pin_failures;
  return st;
}

// ------------------------------------------------------------ the process --

namespace {
std::atomic<Stager*> g_stager{nullptr};
std::mutex g_stager_mu;
std::atomic<bool> g_made{false};          // a stager was made (or is being made), here or in a parent
std::atomic<bool> g_forked_child{false};  // a forked child of a process that made one

// Note [The stager after a fork]: the child of a fork (a data-loader
// worker, a subprocess about to exec) has one thread, the one that forked.
// The parent's other threads are gone, and with them any lock they held:
// the pool's (held while a copy takes or gives back a block), the
// chooser's, the pending host work's (held while its events are queried),
// the host copy helpers' queue lock (Note [Fork] in session/session.cc
// says why a child must never wait for one). What those locks guarded is
// the parent's anyway: its staging memory, events recorded on its streams,
// copies in flight. So the child of a process that made a stager forgets
// it: this handler unpublishes it (left behind, never read again) and
// makes its mutex anew; the child's own stager, made at its first copy, is
// off (as under stage_copies:false), so every copy of the child is the
// runtime's own call, as its pinned calls are
// (See Note [The allocators after a fork]): a real CUDA context is not
// usable after a fork anyway, and the runtime's answer is what the child
// would get without gpuslack.
// note_host_work records nothing in the child. A child whose parent never
// made a stager stages as any process does. The pending host work
// (host_work.cc) and the host copy helpers (host_copy.cc) forget theirs in
// handlers of their own: the pending work's list and lock start anew, and
// the helpers' queue, lock and threads too (the parent's helper threads
// are not in the child: a host copy there starts helpers of its own).
// Each handler takes no lock and allocates nothing. Each is registered by
// session::start (register_fork_handlers), before a hooked call can take
// the rooms' locks, never under them (base/fork_handler.h: a fork between a
// lock's taking and the registration would leave the child the lock held
// and no handler; and libgpuslack.so registers nothing when it loads).
// Test: tests/lib/stage/fork_test.cc (a fork while another thread holds
// every one of these locks; a host copy in a child whose parent had
// helpers).
// The parent's state the child leaves behind, kept reachable (never read,
// never freed: a thread of the parent may have held its locks), so that a
// leak checker in the child does not report it.
Stager* g_parents_stager = nullptr;

void forget_after_fork_child() {
  new (&g_stager_mu) std::mutex();
  if (!g_made.load(std::memory_order_relaxed)) return;  // a child that may stage, as its parent never did
  g_forked_child.store(true, std::memory_order_relaxed);
  g_parents_stager = g_stager.exchange(nullptr, std::memory_order_relaxed);
}
std::atomic<bool> g_fork_handler_registered{false};

}  // namespace

void register_fork_handlers() {
  register_fork_child_once(g_fork_handler_registered, forget_after_fork_child);
  register_host_copy_fork_handler();
  register_host_work_fork_handler();
}

Stager& stager() {
  Stager* s = g_stager.load(std::memory_order_acquire);
  if (__builtin_expect(s != nullptr, 1)) return *s;
  std::lock_guard<std::mutex> lock(g_stager_mu);
  s = g_stager.load(std::memory_order_relaxed);
  if (!s) {
    g_made.store(true, std::memory_order_relaxed);
    StagerConfig config = stager_config_from_options();
    if (g_forked_child.load(std::memory_order_relaxed)) config.enabled = false;  // Note [The stager after a fork]
    s = new Stager(config);  // leaked: host functions may use it until exit
    g_stager.store(s, std::memory_order_release);
  }
  return *s;
}

void Stager::while_locked(absl::FunctionRef<void()> during) {
  pool_.while_locked([&] { chooser_.while_locked(during); });
}

namespace testing {
void while_holding_stager_locks(absl::FunctionRef<void()> during) {
  register_fork_handlers();  // as session::start would have
  Stager& s = stager();
  std::lock_guard<std::mutex> lock(g_stager_mu);
  s.while_locked([&] {
    while_holding_host_work_lock([&] { while_holding_host_copy_lock(during); });
  });
}
}  // namespace testing

const Stager* existing_stager() { return g_stager.load(std::memory_order_acquire); }

void note_host_work(cudaStream_t stream, bool per_thread_default, bool always) {
  if (!options().stage_copies || g_forked_child.load(std::memory_order_relaxed)) return;
  if (!always && !host_work_pending()) return;
  // With an error pending, gpuslack may not call the runtime (a failure
  // would replace the application's error): the work is recorded unknown.
  bool clean = cuda::peek_at_last_error() == cudaSuccess;
  StreamRef s = stream_ref(stream, per_thread_default);
  if (clean && capture_of(s) != Capture::kNone) return;  // in the graph (or cautious); cudaGraphLaunch notes it
  host_work_enqueued(s, clean);
}

}  // namespace stage
}  // namespace gpuslack

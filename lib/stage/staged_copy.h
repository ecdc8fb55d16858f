// Staged copies: copies between device memory and pageable host memory,
// made through gpuslack's pinned staging memory instead of the driver's, so
// that a host→device copy no longer drains its stream.
//
// The driver copies pageable memory through its own pinned buffers and, to
// do so, first drains the stream (cudaMemcpyAsync from pageable memory is
// synchronous in practice). A Stager instead:
//   - host→device (cudaMemcpyAsync, cudaMemcpy, and their 2D forms): copies
//     the user's buffer into staging blocks at call time (so the buffer may
//     be overwritten as soon as the call returns, as with the driver) and
//     enqueues truly asynchronous DMAs from them, chunk by chunk (the host
//     copy of chunk i+1 overlaps the DMA of chunk i), without draining the
//     stream — except for what an application can observe of the drain:
//     device→host copies and host functions it enqueued earlier (Note [The
//     drain a staged copy keeps], host_work.h);
//   - device→host: the call returns only once the data is in the user's
//     buffer, as the driver's does. It waits for the stream, then copies
//     through staging in pipelined chunks or calls the runtime, whichever
//     measured faster on this machine (copy_chooser.h). With async_d2h
//     (off by default; docs/pinned-and-staged.md) an asynchronous D2H copy
//     returns at once instead: DMA into staging, and a host function
//     enqueued behind it copies into the user's buffer.
// Everything else — other directions, pinned memory, memory of unknown
// kind, copies below the threshold, a stream capturing a graph — goes to
// the runtime's own call untouched. Blocks come from a bounded StagingPool
// (staging_pool.h): a copy may wait for staging memory (a copy stall, in
// stats()) and falls back to the runtime's own call rather than fail.
//
// Errors: a copy the runtime refuses is refused the same way, with nothing
// written. Before staging anything, a copy's whole device range is known to
// be good (Note [The whole range first]); one that runs past its
// allocation goes to the runtime's own call, which refuses it, and is not
// counted in stats(). (A range that leaves a block of gpuslack's VMM
// allocator, which the runtime cannot check, never reaches the stager: the
// route refuses it, interpose/routes_copies.inc.) A chunk's DMA the runtime
// still refuses returns its error, left as the last error. gpuslack's own
// bookkeeping calls leave no error behind, and a thread with an error
// already pending is left untouched. The stager writes nothing to the
// ledger: the hook records the call, once (Note [Pageable call sites] in
// ledger/ledger.cc samples the pageable copies' call sites from that one
// record).
//
// Note [Small pageable copies]: the CUDA Programming Guide ("Asynchronous
// Concurrent Execution", "Concurrent Execution between Host and Device")
// lists "memory copies from host to device of a memory block of 64 KB or
// less" among the operations asynchronous to the host, while the Runtime
// API's "API synchronization behavior" says a stream sync is performed
// before a pageable host-to-device copy. gpuslack stages such a copy either
// way (the semantics are the same: the buffer may be reused on return). The
// simulated device follows the Programming Guide's reading by default
// (GPUSIM_PAGEABLE_ASYNC_BYTES, tests/simcuda/README.md);
// tests/conformance/copy_semantics_test.cc checks it against the device.
//
// Note [No native estimate]: the summary used to print, beside the staged
// copies' blocked time, "natively ~X": the host copy into staging plus the
// stream drains a staged copy skipped (timed by probe events), and for D2H
// the wait plus the runtime's own transfer time for that size as the
// chooser measured it. On a pageable bandwidth test (issue 17) it was wrong
// both ways: staged H2D copies blocked 320-361 ms "against ~160-222 ms
// natively" while the same copies run natively took 490-540 ms, and the D2H
// estimate said 611-984 ms against 450-485 ms measured. The native call's
// cost depends on the driver's own staging, pinning and the drains it
// would have done, none of which one run under gpuslack observes; so there
// is no estimate, in the text or the JSON (docs/summary.schema.json), and
// no drain probes. Compare with a run under stage_copies:false (or without
// gpuslack) instead.
//
// Note [The whole range first]: the runtime checks a copy against its
// allocation as a whole; a staged copy is many runtime copies of at most a
// chunk each, and each would pass on its own until one ran past the end:
// the chunks before it written (past the allocation's end, into its
// neighbour, for a copy starting inside it), the rest not. So the device
// side's span, (height - 1) * pitch + width, is checked first, once, by
// one of two owners: the route has already asked gpuslack's VMM allocator
// about both spans (Note [Ranges in VMM blocks]) and says in the CopyCall
// which lie inside one of its live blocks (dst_in_block, src_in_block:
// the stager asks no one again); any other device range is asked of the
// driver (cuda::within_allocation, cached per thread). A range the driver
// cannot vouch for (unknown to it, or spanning two mappings of an
// application's own VMM memory) goes to the runtime's own call: it is
// never staged on a guess.
//
// Thread safety: any thread, any number of streams.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "absl/functional/function_ref.h"
#include "stage/copy_chooser.h"
#include "stage/staging_pool.h"
#include "stage/staging_stats.h"
#include "stage/stream_ref.h"

namespace gpuslack {
namespace stage {

// One copy call as the application made it. A 1D copy is one row: height 1,
// width the byte count (pitches unused).
struct CopyCall {
  void* dst = nullptr;
  const void* src = nullptr;
  size_t width = 0;   // bytes per row
  size_t height = 1;  // rows
  size_t dpitch = 0, spitch = 0;
  cudaMemcpyKind kind = cudaMemcpyDefault;
  cudaStream_t stream = nullptr;    // as passed (cudaMemcpy: 0)
  bool per_thread_default = false;  // a _ptsz/_ptds entry point: 0 is the per-thread stream
  bool sync_api = false;            // cudaMemcpy/cudaMemcpy2D: returns as they do
  bool pitched = false;             // cudaMemcpy2D(Async): the pitches are checked, even for one row
  // The route's one range check (Note [The whole range first]): the span
  // lies inside a live block of gpuslack's VMM allocator. False: not in
  // that allocator's memory (the driver is asked), or not checked.
  bool dst_in_block = false, src_in_block = false;

  // The distance between rows' starts (a single row: its width).
  size_t src_pitch() const { return height > 1 ? spitch : width; }
  size_t dst_pitch() const { return height > 1 ? dpitch : width; }
  // The bytes from the first row's start to the last row's end (none for
  // a copy of nothing, which the runtime accepts whatever the pitches).
  size_t src_span() const { return width && height ? (height - 1) * src_pitch() + width : 0; }
  size_t dst_span() const { return width && height ? (height - 1) * dst_pitch() + width : 0; }
  // Pitches the runtime refuses (cudaErrorInvalidPitchValue).
  bool bad_pitch() const { return (pitched || height > 1) && (width > dpitch || width > spitch); }

  // A copy of `bytes` in one row, on `stream`; the rest as above.
  static CopyCall linear(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
    CopyCall c;
    c.dst = dst;
    c.src = src;
    c.width = bytes;
    c.kind = kind;
    c.stream = stream;
    return c;
  }
};

// The runtime's own call for `call`; `real` is its address.
using NativeCopy = cudaError_t (*)(const CopyCall& call, void* real);

struct StagerConfig {
  bool enabled = true;         // stage_copies
  bool exact = false;          // exact_copy_semantics: H2D copies drain as the driver does
  bool async_d2h = false;      // async_d2h
  size_t budget_bytes = 256u << 20;
  size_t chunk_bytes = 1u << 20;
  size_t threshold_bytes = 0;  // smaller copies pass through
  int copy_threads = 1;        // staging_copy_threads: host threads per chunk's copy (host_copy.h)
  // How device->host copies choose between the two ways: by measuring
  // (the product), or always one way (benchmarks).
  enum class D2hWay { kMeasure, kStaged, kNative } d2h_way = D2hWay::kMeasure;
};
StagerConfig stager_config_from_options();

class Stager {
 public:
  explicit Stager(const StagerConfig& config);
  Stager(const Stager&) = delete;
  Stager& operator=(const Stager&) = delete;

  // Does `call`, staged or through `native`; returns what the application
  // gets.
  cudaError_t copy(const CopyCall& call, NativeCopy native, void* real);

  StagingStats stats() const;
  const StagerConfig& config() const { return config_; }
  // Tests of Note [The stager after a fork] (staged_copy.cc) only: runs
  // `during` while the calling thread holds the pool's and the chooser's
  // locks.
  void while_locked(absl::FunctionRef<void()> during);

 private:
  struct Counter {
    std::atomic<uint64_t> v{0};
    void add(uint64_t n) { v.fetch_add(n, std::memory_order_relaxed); }
    uint64_t get() const { return v.load(std::memory_order_relaxed); }
  };
  struct DirectionCounters {
    Counter seen, seen_bytes, staged, staged_bytes, passed, passed_bytes, blocked_ns;
  };
  enum class Pass { kNone, kSmall, kCapture, kCaptureUnknown, kExact, kErrorPending, kUnsupported };
  struct Chunk;

  Pass pass_reason(const CopyCall& c, bool h2d, size_t bytes, const StreamRef& s) const;
  static bool refused(const CopyCall& c, bool h2d, cudaError_t* r, NativeCopy native, void* real);
  cudaError_t pass(const CopyCall& c, NativeCopy native, void* real, DirectionCounters& d, Counter& why);
  cudaError_t stage_h2d(const CopyCall& c, const StreamRef& s, NativeCopy native, void* real);
  cudaError_t stage_d2h(const CopyCall& c, const StreamRef& s, NativeCopy native, void* real);
  cudaError_t d2h_pipeline(const CopyCall& c, const StreamRef& s, size_t* staged_bytes);
  cudaError_t d2h_async(const CopyCall& c, const StreamRef& s);
  void note_host_work(const CopyCall& c);

  bool next_chunk(const CopyCall& c, Chunk* k) const;
  cudaError_t native_rest(const CopyCall& c, const Chunk& from, const StreamRef& s);
  // Note [One chunk loop] (staged_copy.cc): the one loop over a copy's
  // chunks; `enqueue` does a chunk's share with its staging block, `land`
  // (when given) copies a held chunk out of staging once its DMA is done.
  using EnqueueChunk = absl::FunctionRef<cudaError_t(const StagingBlock& b, const Chunk& k)>;
  using LandChunk = absl::FunctionRef<void(const StagingBlock& b, const Chunk& k)>;
  cudaError_t chunk_loop(const CopyCall& c, const StreamRef& s, EnqueueChunk enqueue,
                         const LandChunk* land = nullptr);

  StagerConfig config_;
  StagingPool pool_;
  CopyChooser chooser_;

  DirectionCounters h2d_, d2h_;
  Counter passed_off_, passed_small_, passed_capture_, passed_capture_unknown_, passed_exact_, passed_error_pending_,
      passed_unsupported_, passed_measured_, passed_unknown_work_, partial_;
  Counter host_work_waits_, host_work_wait_ns_, legacy_h2d_, legacy_other_streams_, async_d2h_copies_;
};

// The process's stager, made from options() on first use (never destroyed:
// host functions it enqueued may run until exit).
Stager& stager();
// The process's stager if one was made; nullptr otherwise (the summary).
const Stager* existing_stager();

// A hooked call that enqueued host-visible work other than a copy
// (cudaLaunchHostFunc, cudaStreamAddCallback, cudaGraphLaunch; and
// cudaStreamWaitEvent while such work is pending): records it for the
// staged copies (host_work.h). Nothing when staging is off, the stream
// captures, or `always` is false and nothing is pending anywhere.
void note_host_work(cudaStream_t stream, bool per_thread_default, bool always = true);

// Registers the child handlers of the staged copies' rooms (this one,
// host_copy, host_work) for a fork (Note [The stager after a fork],
// staged_copy.cc); once, idempotent; never under their locks
// (base/fork_handler.h). session::start calls it.
void register_fork_handlers();

namespace testing {
// Tests of Note [The stager after a fork] (staged_copy.cc) only: runs
// `during` while the calling thread holds every lock of the staged copies:
// the process stager's (made if need be), its pool's and chooser's, the
// pending host work's and the host copy helpers'.
void while_holding_stager_locks(absl::FunctionRef<void()> during);
}  // namespace testing

}  // namespace stage
}  // namespace gpuslack

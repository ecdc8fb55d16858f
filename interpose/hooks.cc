// Every hook, generated from the tables in hook_table.h (the CUDA runtime),
// nccl_hook_table.h (NCCL) and driver_hook_table.h (the CUDA driver) by one
// generator: each table is expanded through an adapter that adds its
// library and, for the runtime and the driver, an empty `track` column,
// into the GPUSLACK_HOOK_* rows below. The counted hooks
// (launch_hook_table.h and driver_hook_table.h: kernel launches) are a
// second kind of row, expanded at the end with a lighter body.
//
// A hook: finds the real function (once, lazily, lock-free: resolve_slow),
// starts the session on the process's first hooked call, times the call
// (clock::ticks, two reads), brackets it with an NVTX range when it can
// block, forwards, records the call in the ledger, and returns the real
// result unchanged. A call that blocked past the call-site threshold also
// records where it came from (slow_call, out of line). Every timed call is
// offered to the host activity (ledger::record_blocked: one relaxed load
// and a compare while the GPU timeline does not run).
//
// Note [What a hook may never do]: a hook runs inside someone else's
// process, on their thread, possibly during their static initialization or
// exit. On the forwarding path it takes no lock, allocates nothing (a
// thread's very first hooked call makes its ledger shard once), never
// throws, and never changes the call's result, errno or the runtime's
// last-error state (pointer lookups for the copy table take care of that:
// cuda/pointer_kind.h); a route that returns an error of its own records it
// as the runtime's last error, as the runtime's refusal would have
// (cuda/fail.h). Rare paths (first resolution, the session's start, slow
// calls, a pageable copy whose call site is sampled: Note [Pageable call
// sites] in ledger/ledger.cc) may lock, allocate and log.
//
// Note [Counted once]: a runtime call that reaches the driver is counted
// once, as the runtime call, because the runtime never reaches the driver
// through the process's global scope, where gpuslack's driver hooks are:
// libcudart.so.13 imports no cu* symbol (nm -D --undefined-only) and finds
// the driver's entry points through its own handle of libcuda.so.1
// (cuGetProcAddress), and the simulated runtime does the same. (A per-thread
// depth raised by every runtime hook would cover a runtime that did, at
// about 13 ns on every hook, a thread-local access through __tls_get_addr:
// measured and left out.) A runtime that imported the driver's symbols would
// have its driver calls counted beside its own. gpuslack's own driver calls
// (cuda/driver_api.h) are resolved on libcuda.so.1's handle and never reach
// a hook at all.
//
// Note [Two ABIs of cudaMemcpyBatchAsync] (hook_table.h): its hook takes
// parameters that cover CUDA 12's and 13's, so the CUDA 13 header's
// declaration is renamed out of its way, here, before anything includes it.
#define cudaMemcpyBatchAsync gpuslack_cuda13_header_cudaMemcpyBatchAsync
#include <cuda_runtime_api.h>
#undef cudaMemcpyBatchAsync

#include <cerrno>

#include <atomic>
#include <cstring>

#include "cuda/pointer_kind.h"
#include "cuda/runtime_symbols.h"
#include "driver_hook_table.h"
#include "entry_points.h"
#include "hooked_calls.h"
#include "hook_table.h"
#include "launch_hook_table.h"
#include "nccl_hook_table.h"
#include "ledger/host_activity.h"
#include "base/clock.h"
#include "ledger/ledger.h"
#include "ledger/python_frames.h"
#include "log/log.h"
#include "nvtx/ranges.h"
#include "session/session.h"

namespace gpuslack {
namespace interpose {
namespace {

// One per hooked symbol: its name, its library and the cached real address.
struct Slot {
  const char* name;
  cuda::Library library;
  std::atomic<void*> real;
};

// Every table, as rows of one shape:
//   X(library, sym, ret, params, args, cat, bytes, info, track)
#define GPUSLACK_ALL_HOOKS(X)                                             \
  GPUSLACK_RUNTIME_HOOKS(GPUSLACK_ADAPT_RUNTIME_##X)                      \
  GPUSLACK_NCCL_HOOKS(GPUSLACK_ADAPT_NCCL_##X)                            \
  GPUSLACK_DRIVER_HOOKS(GPUSLACK_ADAPT_DRIVER_##X)

// Whether a symbol is an asynchronous call (ApiCall::async_api): its name
// says so (cudaMemcpyAsync, cudaMemcpy2DAsync_ptsz, cuMemcpyHtoDAsync_v2,
// cuMemsetD8Async, ncclAllReduce is not a copy and never reads it).
constexpr bool async_name(const char* name) {
  for (const char* p = name; *p != '\0'; ++p)
    if (p[0] == 'A' && p[1] == 's' && p[2] == 'y' && p[3] == 'n' && p[4] == 'c') return true;
  return false;
}
static_assert(async_name("cudaMemcpyAsync_ptsz") && !async_name("cudaMemcpy"), "async_name");

// Whether a symbol is one of the copies the staged copies serve
// (routes_copies.inc: cudaMemcpy, cudaMemcpyAsync, cudaMemcpy2D,
// cudaMemcpy2DAsync and their per-thread forms), whose pageable copies'
// call sites the ledger samples (ApiCall::samples_pageable_sites).
constexpr bool same_name(const char* a, const char* b) {
  for (; *a != '\0' && *a == *b; ++a, ++b) {
  }
  return *a == *b;
}
constexpr bool staged_copy_name(const char* name) {
  for (const char* staged : {"cudaMemcpy", "cudaMemcpy_ptds", "cudaMemcpyAsync", "cudaMemcpyAsync_ptsz", "cudaMemcpy2D",
                             "cudaMemcpy2D_ptds", "cudaMemcpy2DAsync", "cudaMemcpy2DAsync_ptsz"})
    if (same_name(name, staged)) return true;
  return false;
}
static_assert(staged_copy_name("cudaMemcpy2DAsync_ptsz") && !staged_copy_name("cudaMemcpyPeer") &&
                  !staged_copy_name("cuMemcpyHtoD_v2"),
              "staged_copy_name");

// Whether a symbol waits for the whole device (ApiCall::synchronizes_device).
constexpr bool device_sync_name(const char* name) {
  for (const char* syncing : {"cudaDeviceSynchronize", "cuCtxSynchronize", "cuCtxSynchronize_v2", "cudaFree",
                              "cudaFreeHost", "cuMemFree_v2", "cuMemFreeHost"})
    if (same_name(name, syncing)) return true;
  return false;
}
static_assert(device_sync_name("cuMemFree_v2") && !device_sync_name("cudaStreamSynchronize"), "device_sync_name");

// The calls' ids, in table order.
#define GPUSLACK_CALL_ID(lib, sym, ...) kId_##sym,
#define GPUSLACK_DEFINE_CALL(lib, sym, ret, params, args, cat, ...) \
  constexpr ApiCall kCall_##sym{kId_##sym, #sym, cat, async_name(#sym), staged_copy_name(#sym), \
                             device_sync_name(#sym)};                                               \
  Slot slot_##sym{#sym, cuda::Library::lib, {nullptr}};
#define GPUSLACK_CALL_PTR(lib, sym, ...) &kCall_##sym,

// The adapters: one per table and generator step.
#define GPUSLACK_ADAPT_RUNTIME_GPUSLACK_CALL_ID(...) GPUSLACK_CALL_ID(kCudaRuntime, __VA_ARGS__, Untracked{})
#define GPUSLACK_ADAPT_NCCL_GPUSLACK_CALL_ID(...) GPUSLACK_CALL_ID(kNccl, __VA_ARGS__)
#define GPUSLACK_ADAPT_RUNTIME_GPUSLACK_DEFINE_CALL(...) GPUSLACK_DEFINE_CALL(kCudaRuntime, __VA_ARGS__, Untracked{})
#define GPUSLACK_ADAPT_NCCL_GPUSLACK_DEFINE_CALL(...) GPUSLACK_DEFINE_CALL(kNccl, __VA_ARGS__)
#define GPUSLACK_ADAPT_RUNTIME_GPUSLACK_CALL_PTR(...) GPUSLACK_CALL_PTR(kCudaRuntime, __VA_ARGS__, Untracked{})
#define GPUSLACK_ADAPT_NCCL_GPUSLACK_CALL_PTR(...) GPUSLACK_CALL_PTR(kNccl, __VA_ARGS__)
#define GPUSLACK_ADAPT_RUNTIME_GPUSLACK_DEFINE_HOOK(...) GPUSLACK_DEFINE_HOOK(kCudaRuntime, __VA_ARGS__, Untracked{})
#define GPUSLACK_ADAPT_NCCL_GPUSLACK_DEFINE_HOOK(...) GPUSLACK_DEFINE_HOOK(kNccl, __VA_ARGS__)
#define GPUSLACK_ADAPT_DRIVER_GPUSLACK_CALL_ID(...) GPUSLACK_CALL_ID(kCudaDriver, __VA_ARGS__, Untracked{})
#define GPUSLACK_ADAPT_DRIVER_GPUSLACK_DEFINE_CALL(...) GPUSLACK_DEFINE_CALL(kCudaDriver, __VA_ARGS__, Untracked{})
#define GPUSLACK_ADAPT_DRIVER_GPUSLACK_CALL_PTR(...) GPUSLACK_CALL_PTR(kCudaDriver, __VA_ARGS__, Untracked{})
#define GPUSLACK_ADAPT_DRIVER_GPUSLACK_DEFINE_HOOK(...) GPUSLACK_DEFINE_HOOK(kCudaDriver, __VA_ARGS__, Untracked{})

enum CallId : uint16_t { GPUSLACK_ALL_HOOKS(GPUSLACK_CALL_ID) kCallCount };
static_assert(kCallCount <= ledger::kMaxCalls, "raise ledger::kMaxCalls");

GPUSLACK_ALL_HOOKS(GPUSLACK_DEFINE_CALL)

const ApiCall* const kCalls[] = {GPUSLACK_ALL_HOOKS(GPUSLACK_CALL_PTR)};

// Out of line: the first call of each hook. Racing threads may both look the
// symbol up; they find the same address, and the store is idempotent.
__attribute__((noinline, cold)) void* resolve_slow(Slot& slot) {
  cuda::RuntimeSymbol sym = cuda::find_symbol(slot.library, slot.name);
  if (!sym.address) {
    log::error("cannot find the real {}: no {} is loaded; returning an error", slot.name,
               slot.library == cuda::Library::kNccl         ? "NCCL library"
               : slot.library == cuda::Library::kCudaDriver ? "CUDA driver"
                                                            : "CUDA runtime");
    return nullptr;
  }
  log::debug("resolved {} via {} ({})", slot.name, cuda::found_by_name(sym.found_by, slot.library),
             sym.library ? sym.library : "?");
  slot.real.store(sym.address, std::memory_order_release);
  return sym.address;
}

inline void* real_address(Slot& slot) {
  void* p = slot.real.load(std::memory_order_acquire);
  return p ? p : resolve_slow(slot);
}

// What a hook returns when no real function exists to forward to.
template <typename R>
R unresolved();
template <>
cudaError_t unresolved<cudaError_t>() {
  return cudaErrorSharedObjectInitFailed;
}
template <>
ncclResult_t unresolved<ncclResult_t>() {
  return ncclSystemError;
}
template <>
CUresult unresolved<CUresult>() {
  return CUDA_ERROR_SHARED_OBJECT_INIT_FAILED;
}

// Whether a call succeeded, so that its `info` is recorded.
inline bool succeeded(cudaError_t r) { return r == cudaSuccess; }
inline bool succeeded(ncclResult_t r) { return r == ncclSuccess; }
inline bool succeeded(CUresult r) { return r == CUDA_SUCCESS; }

__attribute__((noinline, cold)) void start_session() { session::start(kCalls, kCallCount); }

// Out of line: a call that blocked past the current threshold (first
// refined once the clock is calibrated). Returns its call site's key, or 0.
__attribute__((noinline, cold)) uint64_t slow_call(const ApiCall& call, uint64_t ticks) {
  session::refine_threshold();
  if (ticks <= session::call_site_threshold_ticks()) return 0;
  constexpr int kCapture = ledger::kMaxPythonFrames + ledger::kMaxFrames + 4;
  void* frames[kCapture];
  int n = ledger::capture_call_site(frames, kCapture);
  return ledger::record_call_site(call, ticks, frames, n);
}

// Brackets one forwarded call. Construct right before the call, stop() right
// after it, then record() with what the call did.
class HookScope {
 public:
  HookScope(const ApiCall& call, uint64_t bytes) : call_(call) {
    if (__builtin_expect(!session::active(), 0)) start_session();
    if (call_.category != Category::kOther) nvtx::push(call_, bytes);
  }

  // Starts the clock: after the `track` column's work, so that the host
  // time recorded is the real call's.
  void start() { start_ = clock::ticks(); }

  uint64_t stop() const { return clock::ticks() - start_; }

  // Inlined into each hook, as it was before the host activity made it
  // longer: an out-of-line call costs a few ns per hooked call.
  __attribute__((always_inline)) void record(uint64_t ticks, const CallInfo& info) const {
    int saved_errno = errno;  // the caller may read errno after the call
    if (call_.category != Category::kOther) nvtx::pop();
    if (info.changes_memory) cuda::invalidate_pointer_kinds();
    ledger::record(call_, ticks, info);
    uint64_t site = 0;
    if (__builtin_expect(ticks > session::call_site_threshold_ticks(), 0)) site = slow_call(call_, ticks);
    ledger::record_blocked(call_, start_, start_ + ticks, site);
    errno = saved_errno;
  }

 private:
  const ApiCall& call_;
  uint64_t start_ = 0;
};

}  // namespace

void ensure_session() {
  if (!session::active()) start_session();
}

HookedCalls hooked_calls() { return {kCalls, kCallCount}; }

}  // namespace interpose
}  // namespace gpuslack

#include "routes.inc"

#define GPUSLACK_DEFINE_HOOK(lib, sym, ret, params, args, cat, bytes, info, track)           \
  extern "C" __attribute__((visibility("default"))) ret sym params {                          \
    using namespace ::gpuslack;                                                               \
    using namespace ::gpuslack::interpose;                                                    \
    using Real = ret(*) params;                                                               \
    void* real = real_address(slot_##sym);                                                    \
    if (__builtin_expect(real == nullptr, 0)) return unresolved<ret>();                       \
    HookScope scope(kCall_##sym, static_cast<uint64_t>(bytes));                               \
    auto tracked = track_begin(track);                                                        \
    scope.start();                                                                            \
    ret result = route<kId_##sym>(reinterpret_cast<Real>(real)) args;                         \
    uint64_t ticks = scope.stop();                                                            \
    track_end(tracked, result, ticks);                                                        \
    scope.record(ticks, succeeded(result) ? CallInfo(info) : CallInfo{});                     \
    if constexpr (cuda::Library::lib == cuda::Library::kCudaRuntime)                          \
      if (succeeded(result)) session::after_runtime_call();                                   \
    return result;                                                                            \
  }
GPUSLACK_ALL_HOOKS(GPUSLACK_DEFINE_HOOK)
#undef GPUSLACK_DEFINE_HOOK

// Each driver hook under a second, hidden name: the address the entry
// points hand out (entry_points.h). Taking the exported name's address
// would go through the GOT and could find another object's definition
// (libcuda.so.1 itself, when libgpuslack.so was dlopen()ed RTLD_LOCAL).
#define GPUSLACK_DRIVER_HOOK_ALIAS(sym, ret, params, ...) \
  extern "C" __attribute__((visibility("hidden"), alias(#sym))) ret gpuslack_own_##sym params;
GPUSLACK_DRIVER_HOOKS(GPUSLACK_DRIVER_HOOK_ALIAS)
#undef GPUSLACK_DRIVER_HOOK_ALIAS

// The counted hooks (launch_hook_table.h): no timing, no ledger row, no
// NVTX range, no route; count and tail-call.
namespace gpuslack {
namespace interpose {
namespace {
#define GPUSLACK_DEFINE_COUNTED_SLOT(sym, ...) Slot counted_slot_##sym{#sym, cuda::Library::kCudaRuntime, {nullptr}};
GPUSLACK_COUNTED_HOOKS(GPUSLACK_DEFINE_COUNTED_SLOT)
#undef GPUSLACK_DEFINE_COUNTED_SLOT
#define GPUSLACK_DEFINE_COUNTED_SLOT(sym, ...) Slot counted_slot_##sym{#sym, cuda::Library::kCudaDriver, {nullptr}};
GPUSLACK_DRIVER_COUNTED_HOOKS(GPUSLACK_DEFINE_COUNTED_SLOT)
#undef GPUSLACK_DEFINE_COUNTED_SLOT
}  // namespace
}  // namespace interpose
}  // namespace gpuslack

#define GPUSLACK_DEFINE_COUNTED_HOOK(sym, ret, params, args)                     \
  extern "C" __attribute__((visibility("default"))) ret sym params {             \
    using namespace ::gpuslack::interpose;                                       \
    using Real = ret(*) params;                                                  \
    void* real = real_address(counted_slot_##sym);                               \
    if (__builtin_expect(real == nullptr, 0)) return unresolved<ret>();          \
    if (__builtin_expect(!::gpuslack::session::active(), 0)) start_session();    \
    ::gpuslack::ledger::count_launch();                                          \
    return reinterpret_cast<Real>(real) args;                                    \
  }
GPUSLACK_COUNTED_HOOKS(GPUSLACK_DEFINE_COUNTED_HOOK)
#undef GPUSLACK_DEFINE_COUNTED_HOOK

// The driver's launches: the same (Note [Counted once]: the runtime's own
// launches never come through here).
#define GPUSLACK_DEFINE_COUNTED_HOOK(sym, ret, params, args)                                 \
  extern "C" __attribute__((visibility("default"))) ret sym params {                         \
    using namespace ::gpuslack::interpose;                                                   \
    using Real = ret(*) params;                                                              \
    void* real = real_address(counted_slot_##sym);                                           \
    if (__builtin_expect(real == nullptr, 0)) return unresolved<ret>();                      \
    if (__builtin_expect(!::gpuslack::session::active(), 0)) start_session();                \
    ::gpuslack::ledger::count_launch();                                                      \
    return reinterpret_cast<Real>(real) args;                                                \
  }                                                                                          \
  extern "C" __attribute__((visibility("hidden"), alias(#sym))) ret gpuslack_own_##sym params;
GPUSLACK_DRIVER_COUNTED_HOOKS(GPUSLACK_DEFINE_COUNTED_HOOK)
#undef GPUSLACK_DEFINE_COUNTED_HOOK

// The hook of an exported driver symbol, by name (entry_points.h).
namespace gpuslack {
namespace interpose {
void* driver_hook(const char* exported) {
#define GPUSLACK_DRIVER_HOOK_ENTRY(sym, ...) {#sym, reinterpret_cast<void*>(&gpuslack_own_##sym)},
  struct Entry {
    const char* name;
    void* hook;
  };
  static const Entry kHooks[] = {GPUSLACK_DRIVER_HOOKS(GPUSLACK_DRIVER_HOOK_ENTRY)
                                     GPUSLACK_DRIVER_COUNTED_HOOKS(GPUSLACK_DRIVER_HOOK_ENTRY)};
#undef GPUSLACK_DRIVER_HOOK_ENTRY
  if (!exported) return nullptr;
  for (const Entry& e : kHooks)
    if (std::strcmp(e.name, exported) == 0) return e.hook;
  return nullptr;
}
}  // namespace interpose
}  // namespace gpuslack

// Every hook, generated from the table in hook_table.h.
//
// A hook: finds the real function (once, lazily, lock-free: resolve_slow),
// starts the session on the process's first hooked call, times the call
// (clock::ticks, two reads), brackets it with an NVTX range when it can
// block, forwards, records the call in the ledger, and returns the real
// result unchanged. A call that blocked past the call-site threshold also
// records where it came from (slow_call, out of line).
//
// Note [What a hook may never do]: a hook runs inside someone else's
// process, on their thread, possibly during their static initialization or
// exit. On the forwarding path it takes no lock, allocates nothing (a
// thread's very first hooked call makes its ledger shard once), never
// throws, and never changes the call's result, errno or the runtime's
// last-error state (pointer lookups for the copy table take care of that:
// cuda/pointer_kind.h). Rare paths (first resolution, the session's start,
// slow calls) may lock, allocate and log.
#include <cerrno>

#include <atomic>

#include "cuda/pointer_kind.h"
#include "cuda/runtime_symbols.h"
#include "hook_table.h"
#include "ledger/backtrace.h"
#include "ledger/clock.h"
#include "ledger/ledger.h"
#include "log/log.h"
#include "nvtx/ranges.h"
#include "session/session.h"

namespace gpuslack {
namespace interpose {
namespace {

// One per hooked symbol: its name and the cached real address.
struct Slot {
  const char* name;
  std::atomic<void*> real;
};

// The calls' ids, in table order.
enum CallId : uint16_t {
#define GPUSLACK_CALL_ID(sym, ret, params, args, cat, bytes, info) kId_##sym,
  GPUSLACK_RUNTIME_HOOKS(GPUSLACK_CALL_ID)
#undef GPUSLACK_CALL_ID
  kCallCount
};
static_assert(kCallCount <= ledger::kMaxCalls, "raise ledger::kMaxCalls");

#define GPUSLACK_DEFINE_CALL(sym, ret, params, args, cat, bytes, info) \
  constexpr ApiCall kCall_##sym{kId_##sym, #sym, cat};                 \
  Slot slot_##sym{#sym, {nullptr}};
GPUSLACK_RUNTIME_HOOKS(GPUSLACK_DEFINE_CALL)
#undef GPUSLACK_DEFINE_CALL

const ApiCall* const kCalls[] = {
#define GPUSLACK_CALL_PTR(sym, ret, params, args, cat, bytes, info) &kCall_##sym,
    GPUSLACK_RUNTIME_HOOKS(GPUSLACK_CALL_PTR)
#undef GPUSLACK_CALL_PTR
};

// Out of line: the first call of each hook. Racing threads may both look the
// symbol up; they find the same address, and the store is idempotent.
__attribute__((noinline, cold)) void* resolve_slow(Slot& slot) {
  cuda::RuntimeSymbol sym = cuda::find_runtime_symbol(slot.name);
  if (!sym.address) {
    log::error("cannot find the real {}: no CUDA runtime is loaded; returning an error", slot.name);
    return nullptr;
  }
  log::debug("resolved {} via {} ({})", slot.name, cuda::found_by_name(sym.found_by),
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

__attribute__((noinline, cold)) void start_session() { session::start(kCalls, kCallCount); }

// Out of line: a call that blocked past the current threshold (first
// refined once the clock is calibrated).
__attribute__((noinline, cold)) void slow_call(const ApiCall& call, uint64_t ticks) {
  session::refine_threshold();
  if (ticks <= session::call_site_threshold_ticks()) return;
  void* frames[ledger::kMaxFrames + 4];
  int n = ledger::capture_backtrace(frames, ledger::kMaxFrames + 4);
  ledger::record_call_site(call, ticks, frames, n);
}

// Brackets one forwarded call. Construct right before the call, stop() right
// after it, then record() with what the call did.
class HookScope {
 public:
  HookScope(const ApiCall& call, uint64_t bytes) : call_(call) {
    if (__builtin_expect(!session::active(), 0)) start_session();
    if (call_.category != Category::kOther) nvtx::push(call_, bytes);
    start_ = clock::ticks();
  }

  uint64_t stop() const { return clock::ticks() - start_; }

  void record(uint64_t ticks, const CallInfo& info) const {
    int saved_errno = errno;  // the caller may read errno after the call
    if (call_.category != Category::kOther) nvtx::pop();
    if (info.changes_memory) cuda::invalidate_pointer_kinds();
    ledger::record(call_, ticks, info);
    if (__builtin_expect(ticks > session::call_site_threshold_ticks(), 0)) slow_call(call_, ticks);
    errno = saved_errno;
  }

 private:
  const ApiCall& call_;
  uint64_t start_;
};

}  // namespace
}  // namespace interpose
}  // namespace gpuslack

#define GPUSLACK_DEFINE_HOOK(sym, ret, params, args, cat, bytes, info)                        \
  extern "C" __attribute__((visibility("default"))) ret sym params {                          \
    using namespace ::gpuslack;                                                               \
    using namespace ::gpuslack::interpose;                                                    \
    using Real = ret(*) params;                                                               \
    void* real = real_address(slot_##sym);                                                    \
    if (__builtin_expect(real == nullptr, 0)) return unresolved<ret>();                       \
    HookScope scope(kCall_##sym, static_cast<uint64_t>(bytes));                               \
    ret result = reinterpret_cast<Real>(real) args;                                           \
    uint64_t ticks = scope.stop();                                                            \
    scope.record(ticks, result == cudaSuccess ? CallInfo(info) : CallInfo{});                 \
    return result;                                                                            \
  }
GPUSLACK_RUNTIME_HOOKS(GPUSLACK_DEFINE_HOOK)
#undef GPUSLACK_DEFINE_HOOK

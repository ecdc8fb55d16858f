// Every hook, generated from the table in hook_table.h.
//
// A hook resolves the real function once (lazily, lock-free: see
// resolve_slow), forwards the call and returns the real result unchanged.
// The fast path is one relaxed-acquire load, a null check and the call.
//
// Note [What a hook may never do]: a hook runs inside someone else's
// process, on their thread, possibly during their static initialization or
// exit. It must not take a lock on the forwarding path, allocate on it,
// throw, change the result or errno-visible behaviour of the call, or do
// anything in a constructor. Rare paths (first resolution, failures) may
// log.
#include <atomic>

#include "cuda/runtime_symbols.h"
#include "hook_table.h"
#include "log/log.h"

namespace gpuslack {
namespace interpose {
namespace {

// One per hooked symbol: its name and the cached real address.
struct Slot {
  const char* name;
  std::atomic<void*> real;
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

#define GPUSLACK_DEFINE_SLOT(sym, ret, params, args, cat) Slot slot_##sym{#sym, {nullptr}};
GPUSLACK_RUNTIME_HOOKS(GPUSLACK_DEFINE_SLOT)
#undef GPUSLACK_DEFINE_SLOT

}  // namespace
}  // namespace interpose
}  // namespace gpuslack

#define GPUSLACK_DEFINE_HOOK(sym, ret, params, args, cat)                                   \
  extern "C" __attribute__((visibility("default"))) ret sym params {                       \
    using Real = ret(*) params;                                                             \
    void* real = ::gpuslack::interpose::real_address(::gpuslack::interpose::slot_##sym);   \
    if (__builtin_expect(real == nullptr, 0)) return ::gpuslack::interpose::unresolved<ret>(); \
    return reinterpret_cast<Real>(real) args;                                               \
  }
GPUSLACK_RUNTIME_HOOKS(GPUSLACK_DEFINE_HOOK)
#undef GPUSLACK_DEFINE_HOOK

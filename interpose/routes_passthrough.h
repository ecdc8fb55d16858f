// Routes of the device allocations gpuslack passes to the runtime:
// cudaMallocFromPoolAsync (explicit pools are the application's),
// cudaMallocManaged, cudaMallocPitch, cudaMalloc3D, and cudaMalloc /
// cudaMallocAsync when the VMM allocator cannot serve them (routes_alloc.h
// calls passed_through()). routes.h has the list.
//
// Note [Retrying a pass-through allocation]: memory the VMM allocators keep
// mapped with no live block in it (cached granules, blocks freed but still
// fenced) is charged to the device, so the runtime cannot give it to a call
// gpuslack passes through. Such a call that fails with
// cudaErrorMemoryAllocation gets it back: every allocator is trimmed
// (alloc::trim_all: it waits for pending frees, a stall, as
// torch.cuda.empty_cache does) and, if that released anything, the call is
// made once more; the application gets the second answer. The runtime's
// last error is left as one native call would have left it:
//   - the retry failed: the retry's error, which the runtime recorded;
//   - the retry succeeded: the error pending before the call (read with
//     cudaPeekAtLastError first). cudaSuccess is restored by reading the
//     first failure's error away; a pending cudaErrorMemoryAllocation is
//     what the first failure recorded anyway. The runtime has no call that
//     records any other code, so with another error pending the retry would
//     lose it: then the memory is released before the one call instead,
//     when the runtime's free memory (cudaMemGetInfo) is short of what the
//     call asks for (requested_bytes(), an estimate for pitched memory),
//     and no retry follows.
// Nothing is retried during a graph capture (trim_all releases nothing
// then: Note [Frees during capture]) nor under allocator:native (no
// allocator holds memory: one branch, then the runtime).
//
// Included through routes.h (routes_alloc.h includes it first).
#pragma once

#include <cuda_runtime_api.h>

#include <cerrno>
#include <cstddef>

#include "alloc/vmm.h"
#include "cuda/runtime_api.h"
#include "route.h"

namespace gpuslack {
namespace interpose {
namespace {

// What a pass-through allocation asks of the device, in bytes, from its
// arguments (saturating): the size; for pitched memory, rows of the width
// rounded up to the runtime's usual 512-byte pitch.
inline size_t times(size_t a, size_t b) {
  size_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? ~size_t{0} : r;
}
inline size_t pitched_bytes(size_t width, size_t rows) {
  constexpr size_t kPitch = 512;
  return times(width / kPitch + (width % kPitch != 0), times(kPitch, rows));
}
template <typename... Rest>
size_t requested_bytes(void**, size_t size, Rest...) {
  return size;
}
inline size_t requested_bytes(void**, size_t*, size_t width, size_t height) { return pitched_bytes(width, height); }
inline size_t requested_bytes(cudaPitchedPtr*, cudaExtent e) {
  return pitched_bytes(e.width, times(e.height, e.depth));
}

// Whether the runtime has fewer free bytes than `bytes` (Note [Retrying a
// pass-through allocation]: asked only with an error pending).
inline bool runtime_short_of(size_t bytes) {
  size_t free_bytes = 0, total = 0;
  return real_of<MemGetInfoFn>(slot_cudaMemGetInfo)(&free_bytes, &total) == cudaSuccess && free_bytes < bytes;
}

// errno as the application left it when it made the call. gpuslack's own
// work inside a routed allocation (reserving, mapping, trimming) may set
// errno; the application must see only what the runtime's call left
// (README, "What is hooked"): restore() before the runtime's call, or
// before returning without one.
class CallersErrno {
 public:
  void restore() const { errno = errno_; }

 private:
  int errno_ = errno;
};

// Calls `real` with `args`; releases the allocators' memory and calls it
// once more if it failed for memory (Note [Retrying a pass-through
// allocation]). `caller`: errno before gpuslack did anything; each call of
// `real` starts from it, so that errno ends as one runtime call left it.
template <typename Fn, typename... Args>
cudaError_t passed_through_from(const CallersErrno& caller, Fn real, Args... args) {
  if (!alloc::vmm_selected()) return real(args...);
  const cudaError_t pending = cuda::peek_at_last_error();
  if (pending != cudaSuccess && pending != cudaErrorMemoryAllocation) {
    // A retry could not leave `pending` as it is: release first if needed.
    if (runtime_short_of(requested_bytes(args...))) alloc::trim_all();
    caller.restore();
    return real(args...);
  }
  caller.restore();
  cudaError_t r = real(args...);
  if (r != cudaErrorMemoryAllocation || alloc::trim_all() == 0) return r;
  caller.restore();
  r = real(args...);
  if (r == cudaSuccess && pending == cudaSuccess) cuda::get_last_error();  // the first failure's
  return r;
}
template <typename Fn, typename... Args>
cudaError_t passed_through(Fn real, Args... args) {
  return passed_through_from(CallersErrno(), real, args...);
}

// The route of a hooked allocation that goes to the runtime: through
// passed_through(), to the real function of `kSlot`.
template <typename Fn, Slot& kSlot>
struct PassedThrough;
template <Slot& kSlot, typename... Args>
struct PassedThrough<cudaError_t (*)(Args...), kSlot> {
  static cudaError_t call(Args... args) {
    return passed_through(real_of<cudaError_t (*)(Args...)>(kSlot), args...);
  }
};

// Expanded inside namespace gpuslack::interpose::{anonymous}, like
// route.h's macros; routes.h undefines it. `sym` goes to the runtime
// through passed_through().
#define GPUSLACK_ROUTE_PASSED_THROUGH(sym)                                   \
  template <>                                                                \
  struct Route<kId_##sym> {                                                  \
    template <typename Fn>                                                   \
    static Fn get(Fn) {                                                      \
      return &PassedThrough<Fn, slot_##sym>::call;                           \
    }                                                                        \
  };

GPUSLACK_ROUTE_PASSED_THROUGH(cudaMallocFromPoolAsync)
GPUSLACK_ROUTE_PASSED_THROUGH(cudaMallocFromPoolAsync_ptsz)
GPUSLACK_ROUTE_PASSED_THROUGH(cudaMallocManaged)
GPUSLACK_ROUTE_PASSED_THROUGH(cudaMallocPitch)
GPUSLACK_ROUTE_PASSED_THROUGH(cudaMalloc3D)

}  // namespace
}  // namespace interpose
}  // namespace gpuslack

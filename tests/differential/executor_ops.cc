// One function per op (executor_state.h). Result::v, per kind:
//   allocations: v[0] the out-pointer afterwards (0 NULL, 1 set, 2 left
//     untouched), v[1] the pitch (pitched), v[2] the rc of freeing what an
//     edge case unexpectedly allocated;
//   kDoubleFree: v[0] the second free's rc, v[1] the synchronization's;
//   kEventSync / kWaitEvent: v[1] cudaEventRecord's rc;
//   kStreamCreate / edge stream calls: v[0] whether a handle came back,
//     v[1] the destroy's rc;
//   kMemGetInfo: v[0] total (free is not compared: other threads allocate).
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "executor_state.h"
#include "gpusim.h"

extern "C" cudaError_t cudaEventRecord_ptsz(cudaEvent_t, cudaStream_t);

namespace differential {
namespace detail {
namespace {

void* bogus_pointer(ThreadState& t, const Ref& ref) {
  switch (ref.bogus) {
    case Bogus::kNull: return nullptr;
    case Bogus::kStack: return t.stack + ref.off;
    case Bogus::kLow: return reinterpret_cast<void*>(0x1000);
    case Bogus::kKernelSpace: return reinterpret_cast<void*>(0xffff800000000000ull);
  }
  return nullptr;
}

uint64_t span_2d(uint64_t pitch, uint64_t width, uint64_t height) {
  return width && height ? pitch * (height - 1) + width : 0;
}

void adopt(ThreadState& t, int slot, BufKind kind, void* p, uint64_t size, uint64_t pitch, cudaError_t rc) {
  if (rc != cudaSuccess || p == nullptr || p == kSentinel) return;
  Slot& s = t.slots[slot];
  s.kind = kind;
  s.p = static_cast<char*>(p);
  s.size = size;
  s.pitch = pitch;
  s.registered = false;
}

void forget(Slot& s) {
  s.kind = BufKind::kEmpty;
  s.p = nullptr;
  s.pageable.reset();
  s.registered = false;
}

// 0 cudaFree, 1 cudaFreeHost, 2 cudaFreeAsync (on the op's stream).
cudaError_t free_with(ThreadState& t, int which, void* p, const Op& op) {
  const Api& a = *t.api;
  if (which == 0) return a.cudaFree(p);
  if (which == 1) return a.cudaFreeHost(p);
  cudaStream_t s = stream_of(t, op.ctx, op.ptsz);
  return op.ptsz ? a.cudaFreeAsync_ptsz(p, s) : a.cudaFreeAsync(p, s);
}
int right_free(BufKind k) {
  if (k == BufKind::kPinned) return 1;
  if (stream_ordered(k)) return 2;
  return 0;
}

bool allocate(ThreadState& t, const Op& op, Result* r) {
  const Api& a = *t.api;
  const int slot = op.dst.slot;
  if (slot < 0 || t.slots[slot].live()) return false;
  void* p = kSentinel;
  cudaStream_t s = stream_of(t, op.ctx, op.ptsz);
  cudaError_t rc = cudaSuccess;
  switch (op.kind) {
    case OpKind::kMalloc:
      rc = call(r, [&] { return a.cudaMalloc(&p, op.n); });
      adopt(t, slot, BufKind::kDevice, p, op.n, 0, rc);
      break;
    case OpKind::kMallocAsync:
      rc = call(r, [&] { return op.ptsz ? a.cudaMallocAsync_ptsz(&p, op.n, s) : a.cudaMallocAsync(&p, op.n, s); });
      adopt(t, slot, BufKind::kAsync, p, op.n, 0, rc);
      break;
    case OpKind::kMallocFromPool:
      rc = call(r, [&] {
        return op.ptsz ? a.cudaMallocFromPoolAsync_ptsz(&p, op.n, t.pool, s) : a.cudaMallocFromPoolAsync(&p, op.n, t.pool, s);
      });
      adopt(t, slot, BufKind::kPool, p, op.n, 0, rc);
      break;
    case OpKind::kMallocPitch: {
      size_t pitch = 0;
      rc = call(r, [&] { return a.cudaMallocPitch(&p, &pitch, op.n, op.height); });
      r->v[1] = static_cast<int64_t>(pitch);
      adopt(t, slot, BufKind::kPitched, p, pitch * op.height, pitch, rc);
      break;
    }
    case OpKind::kMalloc3D: {
      cudaPitchedPtr pp{};
      pp.ptr = kSentinel;
      rc = call(r, [&] { return a.cudaMalloc3D(&pp, extent(op.n, op.height)); });
      p = pp.ptr;
      r->v[1] = static_cast<int64_t>(pp.pitch);
      adopt(t, slot, BufKind::kPitched, p, pp.pitch * op.height, pp.pitch, rc);
      break;
    }
    case OpKind::kMallocManaged:
      rc = call(r, [&] { return a.cudaMallocManaged(&p, op.n, cudaMemAttachGlobal); });
      adopt(t, slot, BufKind::kManaged, p, op.n, 0, rc);
      break;
    case OpKind::kMallocHost:
      rc = call(r, [&] { return a.cudaMallocHost(&p, op.n); });
      adopt(t, slot, BufKind::kPinned, p, op.n, 0, rc);
      break;
    case OpKind::kHostAlloc:
      rc = call(r, [&] { return a.cudaHostAlloc(&p, op.n, op.flags); });
      adopt(t, slot, BufKind::kPinned, p, op.n, 0, rc);
      break;
    case OpKind::kPageable: {
      Slot& sl = t.slots[slot];
      sl.pageable.reset(new char[op.n ? op.n : 1]);
      fill_bytes(sl.pageable.get(), op.n, t.seed ^ (static_cast<uint64_t>(t.thread) << 48) ^ t.index);
      sl.kind = BufKind::kPageable;
      sl.p = sl.pageable.get();
      sl.size = op.n;
      sl.pitch = 0;
      sl.registered = false;
      p = sl.p;
      break;
    }
    default: return false;
  }
  r->rc = rc;
  r->v[0] = out_state(p);
  return true;
}

bool free_op(ThreadState& t, const Op& op, Result* r) {
  if (op.kind == OpKind::kFreeBogus) {
    char* p = nullptr;
    resolve(t, op.dst, 0, true, &p);
    r->rc = call(r, [&] { return free_with(t, op.variant, p, op); });
    return true;
  }
  if (op.dst.slot < 0 || !t.slots[op.dst.slot].live()) return false;
  Slot& s = t.slots[op.dst.slot];
  switch (op.kind) {
    case OpKind::kFree:
      if (s.kind == BufKind::kPageable) {
        if (s.registered) cudaHostUnregister(s.p);  // the harness's safety net; the program unregistered first
        r->rc = cudaSuccess;
      } else {
        r->rc = call(r, [&] { return free_with(t, right_free(s.kind), s.p, op); });
      }
      forget(s);
      return true;
    case OpKind::kFreeWrong:
      r->rc = call(r, [&] { return free_with(t, op.variant, s.p, op); });
      if (r->rc == cudaSuccess) forget(s);  // it did free it: never touched again
      return true;
    case OpKind::kFreeInterior:
      if (s.kind == BufKind::kPageable || op.dst.off == 0 || op.dst.off >= s.size) return false;
      r->rc = call(r, [&] { return free_with(t, right_free(s.kind), s.p + op.dst.off, op); });
      if (r->rc == cudaSuccess) forget(s);
      return true;
    case OpKind::kDoubleFree: {
      if (s.kind == BufKind::kPageable) return false;
      const int which = right_free(s.kind);
      r->rc = call(r, [&] { return free_with(t, which, s.p, op); });
      if (which == 2) {
        cudaStream_t st = stream_of(t, op.ctx, op.ptsz);
        r->v[1] = op.ptsz ? t.api->cudaStreamSynchronize_ptsz(st) : t.api->cudaStreamSynchronize(st);
      }
      r->v[0] = free_with(t, which, s.p, op);
      forget(s);
      return true;
    }
    default: return false;
  }
}

bool registration(ThreadState& t, const Op& op, Result* r) {
  const Api& a = *t.api;
  if (op.kind == OpKind::kHostUnregister) {
    if (op.variant == 1) {
      r->rc = call(r, [&] { return a.cudaHostUnregister(t.stack); });
      return true;
    }
    if (op.dst.slot < 0 || t.slots[op.dst.slot].kind != BufKind::kPageable) return false;
    Slot& s = t.slots[op.dst.slot];
    r->rc = call(r, [&] { return a.cudaHostUnregister(s.p); });
    if (r->rc == cudaSuccess) s.registered = false;
    return true;
  }
  if (op.variant == 3) {
    r->rc = call(r, [&] { return a.cudaHostRegister(nullptr, 4096, op.flags); });
    return true;
  }
  Slot* s = op.dst.slot >= 0 ? &t.slots[op.dst.slot] : nullptr;
  if (op.variant == 2) {
    void* p = s && s->kind == BufKind::kPageable ? s->p : t.stack;
    r->rc = call(r, [&] { return a.cudaHostRegister(p, 0, op.flags); });
    return true;
  }
  if (!s || s->kind != BufKind::kPageable || s->size == 0) return false;
  r->rc = call(r, [&] { return a.cudaHostRegister(s->p, s->size, op.flags); });
  if (r->rc == cudaSuccess) s->registered = true;
  return true;
}

bool memset_op(ThreadState& t, const Op& op, Result* r) {
  const Api& a = *t.api;
  const bool two_d = op.kind == OpKind::kMemset2D;
  const uint64_t span = two_d ? span_2d(op.dpitch, op.n, op.height) : op.n;
  char* p = nullptr;
  if (!resolve(t, op.dst, span, op.dst.slot < 0, &p)) return false;
  cudaStream_t s = stream_of(t, op.ctx, op.ptsz);
  r->rc = call(r, [&] {
    if (!two_d) {
      switch (op.variant) {
        case 0: return a.cudaMemset(p, op.value, op.n);
        case 1: return a.cudaMemset_ptds(p, op.value, op.n);
        case 2: return a.cudaMemsetAsync(p, op.value, op.n, s);
        default: return a.cudaMemsetAsync_ptsz(p, op.value, op.n, s);
      }
    }
    switch (op.variant) {
      case 0: return a.cudaMemset2D(p, op.dpitch, op.value, op.n, op.height);
      case 1: return a.cudaMemset2D_ptds(p, op.dpitch, op.value, op.n, op.height);
      case 2: return a.cudaMemset2DAsync(p, op.dpitch, op.value, op.n, op.height, s);
      default: return a.cudaMemset2DAsync_ptsz(p, op.dpitch, op.value, op.n, op.height, s);
    }
  });
  return true;
}

bool memcpy_op(ThreadState& t, const Op& op, Result* r) {
  const Api& a = *t.api;
  const bool two_d = op.kind == OpKind::kMemcpy2D;
  const uint64_t dspan = two_d ? span_2d(op.dpitch, op.n, op.height) : op.n;
  const uint64_t sspan = two_d ? span_2d(op.spitch, op.n, op.height) : op.n;
  char *d = nullptr, *src = nullptr;
  if (!resolve(t, op.dst, dspan, false, &d) || !resolve(t, op.src, sspan, false, &src)) return false;
  cudaStream_t s = stream_of(t, op.ctx, op.ptsz);
  const cudaMemcpyKind k = op.copy_kind;
  r->rc = call(r, [&] {
    if (op.kind == OpKind::kMemcpyPeer)
      return op.variant ? a.cudaMemcpyPeerAsync(d, 0, src, 0, op.n, s) : a.cudaMemcpyPeer(d, 0, src, 0, op.n);
    if (!two_d) {
      switch (op.variant) {
        case 0: return a.cudaMemcpy(d, src, op.n, k);
        case 1: return a.cudaMemcpy_ptds(d, src, op.n, k);
        case 2: return a.cudaMemcpyAsync(d, src, op.n, k, s);
        default: return a.cudaMemcpyAsync_ptsz(d, src, op.n, k, s);
      }
    }
    switch (op.variant) {
      case 0: return a.cudaMemcpy2D(d, op.dpitch, src, op.spitch, op.n, op.height, k);
      case 1: return a.cudaMemcpy2D_ptds(d, op.dpitch, src, op.spitch, op.n, op.height, k);
      case 2: return a.cudaMemcpy2DAsync(d, op.dpitch, src, op.spitch, op.n, op.height, k, s);
      default: return a.cudaMemcpy2DAsync_ptsz(d, op.dpitch, src, op.spitch, op.n, op.height, k, s);
    }
  });
  return true;
}

bool batch(ThreadState& t, const Op& op, Result* r) {
  std::vector<void*> dsts;
  std::vector<const void*> srcs;
  std::vector<size_t> sizes;
  for (const Part& part : op.parts) {
    char *d = nullptr, *s = nullptr;
    if (!resolve(t, part.dst, part.n, false, &d) || !resolve(t, part.src, part.n, false, &s)) return false;
    dsts.push_back(d);
    srcs.push_back(s);
    sizes.push_back(part.n);
  }
  cudaStream_t st = stream_of(t, op.ctx, op.ptsz);
  const Api& a = *t.api;
  r->rc = call(r, [&] {
    // The table's rows take both ABIs' tails (interpose/hook_table.h): a
    // CUDA 13 call passes the stream, then an unused slot.
    return op.ptsz ? a.cudaMemcpyBatchAsync_ptsz(dsts.data(), srcs.data(), sizes.data(), sizes.size(), nullptr,
                                                 nullptr, 0, st, nullptr)
                   : a.cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), sizes.size(), nullptr, nullptr,
                                            0, st, nullptr);
  });
  return true;
}

void CUDART_CB host_fn(void*) {}
void CUDART_CB callback_fn(cudaStream_t, cudaError_t, void*) {}

bool stream_op(ThreadState& t, const Op& op, Result* r) {
  const Api& a = *t.api;
  cudaStream_t s = stream_of(t, op.ctx, op.ptsz);
  switch (op.kind) {
    case OpKind::kStreamCreate: {
      cudaStream_t& own = t.own[op.variant % kOwnStreams];
      r->rc = call(r, [&] {
        switch (op.variant) {
          case 0: return a.cudaStreamCreate(&own);
          case 1: return a.cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking);
          default: return a.cudaStreamCreateWithPriority(&own, 0, -1);
        }
      });
      r->v[0] = own != nullptr;
      return true;
    }
    case OpKind::kStreamDestroy: {
      cudaStream_t& own = t.own[op.variant % kOwnStreams];
      r->rc = call(r, [&] { return a.cudaStreamDestroy(own); });
      own = nullptr;
      return true;
    }
    case OpKind::kStreamSync:
      r->rc = call(r, [&] { return op.ptsz ? a.cudaStreamSynchronize_ptsz(s) : a.cudaStreamSynchronize(s); });
      return true;
    case OpKind::kDeviceSync: r->rc = call(r, [&] { return a.cudaDeviceSynchronize(); }); return true;
    case OpKind::kEventSync:
      r->v[1] = op.ptsz ? cudaEventRecord_ptsz(t.events[0], s) : cudaEventRecord(t.events[0], s);
      r->rc = call(r, [&] { return a.cudaEventSynchronize(t.events[0]); });
      return true;
    case OpKind::kHostFunc:
      r->rc = call(r, [&] {
        if (op.variant == 0)
          return op.ptsz ? a.cudaLaunchHostFunc_ptsz(s, host_fn, nullptr) : a.cudaLaunchHostFunc(s, host_fn, nullptr);
        return op.ptsz ? a.cudaStreamAddCallback_ptsz(s, callback_fn, nullptr, 0)
                       : a.cudaStreamAddCallback(s, callback_fn, nullptr, 0);
      });
      return true;
    case OpKind::kWaitEvent:
      r->v[1] = cudaEventRecord(t.events[1], stream_of(t, op.ctx2, false));
      r->rc = call(r, [&] {
        return op.ptsz ? a.cudaStreamWaitEvent_ptsz(s, t.events[1], 0) : a.cudaStreamWaitEvent(s, t.events[1], 0);
      });
      return true;
    case OpKind::kMemGetInfo: {
      size_t f = 0, total = 0;
      r->rc = call(r, [&] { return a.cudaMemGetInfo(&f, &total); });
      r->v[0] = static_cast<int64_t>(total);
      return true;
    }
    default: return false;
  }
}

bool harness_op(ThreadState& t, const Op& op, Result* r) {
  char* p = nullptr;
  if (op.kind == OpKind::kIpcHandle) {
    if (op.dst.slot >= 0 && !resolve(t, op.dst, 0, false, &p)) return false;
    cudaIpcMemHandle_t h;
    r->rc = call(r, [&] { return t.api->cudaIpcGetMemHandle(&h, p); });
    if (r->rc != cudaSuccess) return true;
    // A handle opened in the process that made it: "invalid device context"
    // either way (v[0]). gpuslack cannot record that code as the runtime's
    // last error (cuda/fail.h), so the harness clears it. Closing memory
    // that no open returned (v[1]): cudaErrorInvalidValue, as last error.
    void* opened = nullptr;
    r->v[0] = t.api->cudaIpcOpenMemHandle(&opened, h, cudaIpcMemLazyEnablePeerAccess);
    cudaGetLastError();
    r->v[1] = t.api->cudaIpcCloseMemHandle(p);
    return true;
  }
  if (op.kind == OpKind::kKernel) {
    if (op.dst.slot < 0 || !device_side(t.slots[op.dst.slot].kind) || !resolve(t, op.dst, op.n, false, &p) ||
        op.dst.off + op.n > t.slots[op.dst.slot].size)
      return false;
    r->rc = gpusim_busy_kernel(stream_of(t, op.ctx, false), p, op.n, op.micros, static_cast<uint32_t>(op.value),
                               nullptr);
    return true;
  }
  if (op.kind == OpKind::kFill) {
    if (op.dst.slot < 0 || device_side(t.slots[op.dst.slot].kind) || !resolve(t, op.dst, op.n, false, &p))
      return false;
    fill_bytes(p, op.n, static_cast<uint64_t>(op.value) * 0x9E3779B97F4A7C15ull + t.index);
    return true;
  }
  if (op.dst.slot < 0 || !t.slots[op.dst.slot].live()) return false;
  Slot& s = t.slots[op.dst.slot];
  if (op.kind == OpKind::kInit) {
    if (device_side(s.kind)) r->rc = cudaMemsetAsync(s.p, op.value, s.size, stream_of(t, op.ctx, false));
    else std::memset(s.p, op.value, s.size);
    return true;
  }
  // kObserve: device memory through the runtime's own copy, host memory directly.
  std::vector<char> bytes(s.size);
  if (device_side(s.kind)) r->rc = cudaMemcpy(bytes.data(), s.p, s.size, cudaMemcpyDeviceToHost);
  else if (s.size) std::memcpy(bytes.data(), s.p, s.size);
  r->bytes = s.size;
  r->hashes = block_hashes(bytes.data(), s.size);
  return true;
}

}  // namespace

// See Note [What an op may ask the runtime to touch]: the pointer `ref` names,
// for an access of `span` bytes, or false when this run must not make it.
// `refused_untouched`: the call refuses a bogus pointer without touching it
// (memsets, frees), so any span is fine for one.
bool resolve(ThreadState& t, const Ref& ref, uint64_t span, bool refused_untouched, char** out) {
  if (ref.slot < 0) {
    *out = static_cast<char*>(bogus_pointer(t, ref));
    if (ref.bogus == Bogus::kStack) return ref.off + span <= kStackBytes || refused_untouched;
    return span == 0 || refused_untouched;
  }
  if (static_cast<size_t>(ref.slot) >= t.slots.size()) return false;
  const Slot& s = t.slots[ref.slot];
  if (!s.live() || ref.off > s.size || (span && ref.off == s.size)) return false;
  if (!device_side(s.kind) && ref.off + span > s.size && !(s.kind == BufKind::kPinned && ref.may_overrun))
    return false;
  *out = s.p + ref.off;
  return true;
}

// A pointer an edge case returned where it should not have: given back.
int64_t give_back(ThreadState& t, void* p, bool host) {
  if (p == nullptr || p == kSentinel) return 0;
  return host ? t.api->cudaFreeHost(p) : t.api->cudaFree(p);
}

cudaStream_t stream_of(const ThreadState& t, Ctx c, bool ptsz) {
  switch (c) {
    case Ctx::kNone: return nullptr;
    case Ctx::kLegacy: return ptsz ? cudaStreamLegacy : nullptr;
    case Ctx::kPerThread: return ptsz ? nullptr : cudaStreamPerThread;
    case Ctx::kOwn0: return t.own[0];
    case Ctx::kOwn1: return t.own[1];
    case Ctx::kOwn2: return t.own[2];
    case Ctx::kBogus: return kBogusStream;
  }
  return nullptr;
}

bool run_op(ThreadState& t, const Op& op, Result* r) {
  if (op.driver) return run_driver(t, op, r);
  switch (op.kind) {
    case OpKind::kDriverAlloc: case OpKind::kDriverVmm: return run_driver(t, op, r);
    case OpKind::kMalloc: case OpKind::kMallocAsync: case OpKind::kMallocFromPool: case OpKind::kMallocPitch:
    case OpKind::kMalloc3D: case OpKind::kMallocManaged: case OpKind::kMallocHost: case OpKind::kHostAlloc:
    case OpKind::kPageable:
      return allocate(t, op, r);
    case OpKind::kFree: case OpKind::kFreeWrong: case OpKind::kFreeInterior: case OpKind::kDoubleFree:
    case OpKind::kFreeBogus:
      return free_op(t, op, r);
    case OpKind::kHostRegister: case OpKind::kHostUnregister: return registration(t, op, r);
    case OpKind::kAllocEdge: return run_edge(t, op, r);
    case OpKind::kMemset: case OpKind::kMemset2D: return memset_op(t, op, r);
    case OpKind::kMemcpy: case OpKind::kMemcpy2D: case OpKind::kMemcpyPeer: return memcpy_op(t, op, r);
    case OpKind::kMemcpyBatch: return batch(t, op, r);
    case OpKind::kStreamCreate: case OpKind::kStreamDestroy: case OpKind::kStreamSync: case OpKind::kDeviceSync:
    case OpKind::kEventSync: case OpKind::kHostFunc: case OpKind::kWaitEvent: case OpKind::kMemGetInfo:
      return stream_op(t, op, r);
    case OpKind::kIpcHandle: case OpKind::kKernel: case OpKind::kFill: case OpKind::kInit: case OpKind::kObserve:
      return harness_op(t, op, r);
    case OpKind::kBarrier: return false;
  }
  return false;
}

void release_all(ThreadState& t) {
  for (Slot& s : t.slots) {
    if (!s.live()) continue;
    if (s.kind == BufKind::kPageable && s.registered) cudaHostUnregister(s.p);
    else if (s.kind == BufKind::kPinned) t.api->cudaFreeHost(s.p);
    else if (stream_ordered(s.kind)) t.api->cudaFreeAsync(s.p, nullptr);
    else if (s.kind != BufKind::kPageable) t.api->cudaFree(s.p);
    forget(s);
  }
  cudaGetLastError();
}

void fill_bytes(char* p, uint64_t n, uint64_t key) {
  uint64_t x = key * 0x2545F4914F6CDD1Dull + 0x9E3779B97F4A7C15ull;
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    const uint64_t w = x * 0x2545F4914F6CDD1Dull;
    std::memcpy(p + i, &w, 8);
  }
  for (; i < n; ++i) p[i] = static_cast<char>(x >> (8 * (i & 7)));
}

std::vector<uint32_t> block_hashes(const char* p, uint64_t n) {
  std::vector<uint32_t> out;
  out.reserve((n + kHashBlock - 1) / kHashBlock);
  for (uint64_t at = 0; at < n; at += kHashBlock) {
    const uint64_t end = std::min(n, at + kHashBlock);
    uint64_t h = 0xcbf29ce484222325ull ^ (end - at);
    uint64_t i = at;
    for (; i + 8 <= end; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      h = (h ^ w) * 0x100000001B3ull;
      h ^= h >> 29;
    }
    for (; i < end; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 0x100000001B3ull;
    out.push_back(static_cast<uint32_t>(h ^ (h >> 32)));
  }
  return out;
}

}  // namespace detail
}  // namespace differential

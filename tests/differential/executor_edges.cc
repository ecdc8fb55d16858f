// The invalid and degenerate allocation and stream calls of kAllocEdge
// (EdgeCase, program.h): NULL out-parameters, zero and impossible sizes,
// handles no stream or pool has. Result::v as executor_ops.cc says.
#include "executor_state.h"

namespace differential {
namespace detail {

bool run_edge(ThreadState& t, const Op& op, Result* r) {
  const Api& a = *t.api;
  void* p = kSentinel;
  size_t pitch = 0;
  cudaStream_t s = stream_of(t, op.ctx, op.ptsz);
  char* slot_p = nullptr;
  if (op.dst.slot >= 0 && !resolve(t, op.dst, 0, false, &slot_p)) slot_p = nullptr;
  auto async = [&](void** out, uint64_t n, cudaStream_t st) {
    return op.ptsz ? a.cudaMallocAsync_ptsz(out, n, st) : a.cudaMallocAsync(out, n, st);
  };
  auto pool = [&](void** out, uint64_t n, cudaMemPool_t pl) {
    return op.ptsz ? a.cudaMallocFromPoolAsync_ptsz(out, n, pl, s) : a.cudaMallocFromPoolAsync(out, n, pl, s);
  };
  bool host = false;
  cudaError_t rc = cudaSuccess;
  switch (static_cast<EdgeCase>(op.variant)) {
    case EdgeCase::kMallocNullOut: rc = call(r, [&] { return a.cudaMalloc(nullptr, op.n); }); break;
    case EdgeCase::kMallocZero: rc = call(r, [&] { return a.cudaMalloc(&p, 0); }); break;
    case EdgeCase::kMallocHuge: rc = call(r, [&] { return a.cudaMalloc(&p, kHuge); }); break;
    case EdgeCase::kMallocOverCapacity: rc = call(r, [&] { return a.cudaMalloc(&p, uint64_t{1} << 40); }); break;
    case EdgeCase::kMallocAsyncNullOut: rc = call(r, [&] { return async(nullptr, op.n, s); }); break;
    case EdgeCase::kMallocAsyncZero: rc = call(r, [&] { return async(&p, 0, s); }); break;
    case EdgeCase::kMallocAsyncBogusStream: rc = call(r, [&] { return async(&p, op.n, kBogusStream); }); break;
    case EdgeCase::kMallocAsyncHuge: rc = call(r, [&] { return async(&p, kHuge, s); }); break;
    case EdgeCase::kPoolBogusPool: rc = call(r, [&] { return pool(&p, op.n, kBogusPool); }); break;
    case EdgeCase::kPoolNullOut: rc = call(r, [&] { return pool(nullptr, op.n, t.pool); }); break;
    case EdgeCase::kMallocHostNullOut: rc = call(r, [&] { return a.cudaMallocHost(nullptr, op.n); }); break;
    case EdgeCase::kMallocHostZero:
      host = true;
      rc = call(r, [&] { return a.cudaMallocHost(&p, 0); });
      break;
    case EdgeCase::kMallocHostHuge:
      host = true;
      rc = call(r, [&] { return a.cudaMallocHost(&p, kHuge); });
      break;
    case EdgeCase::kHostAllocHuge:
      host = true;
      rc = call(r, [&] { return a.cudaHostAlloc(&p, kHuge, cudaHostAllocPortable); });
      break;
    case EdgeCase::kPitchNullPitch: rc = call(r, [&] { return a.cudaMallocPitch(&p, nullptr, op.n, op.height); }); break;
    case EdgeCase::kPitchNullOut:
      rc = call(r, [&] { return a.cudaMallocPitch(nullptr, &pitch, op.n, op.height); });
      r->v[1] = static_cast<int64_t>(pitch);
      break;
    case EdgeCase::kMalloc3DNull:
      rc = call(r, [&] { return a.cudaMalloc3D(nullptr, extent(op.n, op.height)); });
      break;
    case EdgeCase::kManagedNullOut:
      rc = call(r, [&] { return a.cudaMallocManaged(nullptr, op.n, cudaMemAttachGlobal); });
      break;
    case EdgeCase::kStreamCreateNull: rc = call(r, [&] { return a.cudaStreamCreate(nullptr); }); break;
    case EdgeCase::kStreamCreateBadFlags: {
      cudaStream_t st = kBogusStream;
      rc = call(r, [&] { return a.cudaStreamCreateWithFlags(&st, 0xdead); });
      r->v[0] = st != kBogusStream;
      if (rc == cudaSuccess && st != kBogusStream) r->v[1] = a.cudaStreamDestroy(st);
      p = nullptr;
      break;
    }
    case EdgeCase::kStreamPriorityNull:
      rc = call(r, [&] { return a.cudaStreamCreateWithPriority(nullptr, 0, 0); });
      break;
    case EdgeCase::kStreamDestroyNull: rc = call(r, [&] { return a.cudaStreamDestroy(nullptr); }); break;
    case EdgeCase::kStreamDestroyBogus: rc = call(r, [&] { return a.cudaStreamDestroy(kBogusStream); }); break;
    case EdgeCase::kStreamCreateDestroy: {
      cudaStream_t st = nullptr;
      rc = call(r, [&] { return a.cudaStreamCreateWithFlags(&st, op.n & 1 ? cudaStreamNonBlocking : 0); });
      r->v[0] = st != nullptr;
      if (rc == cudaSuccess) r->v[1] = a.cudaStreamDestroy(st);
      p = nullptr;
      break;
    }
    case EdgeCase::kMemGetInfoNulls: rc = call(r, [&] { return a.cudaMemGetInfo(nullptr, nullptr); }); break;
    case EdgeCase::kMemGetInfoNullTotal: {
      size_t f = 0;
      rc = call(r, [&] { return a.cudaMemGetInfo(&f, nullptr); });
      break;
    }
    case EdgeCase::kIpcNullHandle: rc = call(r, [&] { return a.cudaIpcGetMemHandle(nullptr, slot_p); }); break;
    case EdgeCase::kEventSyncNull: rc = call(r, [&] { return a.cudaEventSynchronize(nullptr); }); break;
    case EdgeCase::kHostFuncNull:
      rc = call(r, [&] { return op.ptsz ? a.cudaLaunchHostFunc_ptsz(s, nullptr, nullptr) : a.cudaLaunchHostFunc(s, nullptr, nullptr); });
      break;
    case EdgeCase::kBatchEmpty: {
      void* dsts[1] = {t.stack};
      const void* srcs[1] = {t.stack};
      size_t sizes[1] = {0};
      rc = call(r, [&] { return a.cudaMemcpyBatchAsync(dsts, srcs, sizes, 0, nullptr, nullptr, 0, s, nullptr); });
      break;
    }
    case EdgeCase::kBatchNullArrays:
      rc = call(r, [&] { return a.cudaMemcpyBatchAsync(nullptr, nullptr, nullptr, 1, nullptr, nullptr, 0, s, nullptr); });
      break;
    case EdgeCase::kFreeAsyncBogusStream: rc = call(r, [&] { return a.cudaFreeAsync(nullptr, kBogusStream); }); break;
    case EdgeCase::kPeerBadDevice:
      rc = call(r, [&] { return a.cudaMemcpyPeer(slot_p, 7, slot_p, 0, op.n); });
      break;
    case EdgeCase::kCount: return false;
  }
  r->rc = rc;
  r->v[0] = r->v[0] ? r->v[0] : out_state(p);
  if (rc == cudaSuccess) r->v[2] = give_back(t, p, host);
  return true;
}

}  // namespace detail
}  // namespace differential

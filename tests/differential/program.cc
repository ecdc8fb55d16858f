// See program.h: the names of things, and describe().
#include "program.h"

#include <cstdio>

namespace differential {

bool device_side(BufKind k) {
  return k == BufKind::kDevice || k == BufKind::kAsync || k == BufKind::kPool || k == BufKind::kPitched ||
         k == BufKind::kManaged;
}
bool stream_ordered(BufKind k) { return k == BufKind::kAsync || k == BufKind::kPool; }

const char* ctx_name(Ctx c) {
  switch (c) {
    case Ctx::kNone: return "-";
    case Ctx::kLegacy: return "legacy";
    case Ctx::kPerThread: return "per-thread";
    case Ctx::kOwn0: return "own0(blocking)";
    case Ctx::kOwn1: return "own1(non-blocking)";
    case Ctx::kOwn2: return "own2(priority)";
    case Ctx::kBogus: return "bogus-handle";
  }
  return "?";
}

const char* kind_name(BufKind k) {
  switch (k) {
    case BufKind::kEmpty: return "empty";
    case BufKind::kDevice: return "cudaMalloc";
    case BufKind::kAsync: return "cudaMallocAsync";
    case BufKind::kPool: return "cudaMallocFromPoolAsync";
    case BufKind::kPitched: return "cudaMallocPitch";
    case BufKind::kManaged: return "cudaMallocManaged";
    case BufKind::kPinned: return "pinned";
    case BufKind::kPageable: return "pageable";
  }
  return "?";
}

const char* edge_name(EdgeCase e) {
  static const char* const kNames[] = {
      "cudaMalloc(NULL, n)", "cudaMalloc(&p, 0)", "cudaMalloc(&p, 1<<50)", "cudaMalloc(&p, 1<<40)",
      "cudaMallocAsync(NULL, n, s)", "cudaMallocAsync(&p, 0, s)", "cudaMallocAsync(&p, n, bogus stream)",
      "cudaMallocAsync(&p, 1<<50, s)", "cudaMallocFromPoolAsync(&p, n, bogus pool, s)",
      "cudaMallocFromPoolAsync(NULL, n, pool, s)", "cudaMallocHost(NULL, n)", "cudaMallocHost(&p, 0)",
      "cudaMallocHost(&p, 1<<50)", "cudaHostAlloc(&p, 1<<50, portable)", "cudaMallocPitch(&p, NULL, w, h)",
      "cudaMallocPitch(NULL, &pitch, w, h)", "cudaMalloc3D(NULL, extent)", "cudaMallocManaged(NULL, n)",
      "cudaStreamCreate(NULL)", "cudaStreamCreateWithFlags(&s, 0xdead)",
      "cudaStreamCreateWithPriority(NULL, 0, 0)", "cudaStreamDestroy(NULL)", "cudaStreamDestroy(bogus)",
      "cudaStreamCreateWithFlags + cudaStreamDestroy", "cudaMemGetInfo(NULL, NULL)",
      "cudaMemGetInfo(&free, NULL)", "cudaIpcGetMemHandle(NULL, p)", "cudaEventSynchronize(NULL)",
      "cudaLaunchHostFunc(s, NULL, NULL)", "cudaMemcpyBatchAsync(count 0)",
      "cudaMemcpyBatchAsync(NULL arrays)", "cudaFreeAsync(NULL, bogus stream)",
      "cudaMemcpyPeer(dst, device 7, src, 0, n)",
  };
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(EdgeCase::kCount), "one name per case");
  return e < EdgeCase::kCount ? kNames[static_cast<int>(e)] : "?";
}

namespace {

std::string ref(const Ref& r) {
  char buf[64];
  if (r.slot >= 0) {
    std::snprintf(buf, sizeof buf, "s%d+%llu%s", r.slot, static_cast<unsigned long long>(r.off),
                  r.may_overrun ? "(may overrun)" : "");
    return buf;
  }
  switch (r.bogus) {
    case Bogus::kNull: return "NULL";
    case Bogus::kStack:
      std::snprintf(buf, sizeof buf, "stack+%llu", static_cast<unsigned long long>(r.off));
      return buf;
    case Bogus::kLow: return "0x1000";
    case Bogus::kKernelSpace: return "0xffff800000000000";
  }
  return "?";
}

const char* copy_kind_name(cudaMemcpyKind k) {
  switch (k) {
    case cudaMemcpyHostToHost: return "H2H";
    case cudaMemcpyHostToDevice: return "H2D";
    case cudaMemcpyDeviceToHost: return "D2H";
    case cudaMemcpyDeviceToDevice: return "D2D";
    default: return "Default";
  }
}

const char* free_name(int variant) {
  return variant == 0 ? "cudaFree" : variant == 1 ? "cudaFreeHost" : "cudaFreeAsync";
}

// The entry point of a copy or memset with variants 0..3.
std::string entry(const char* base, const Op& op, bool sync_suffix_ptds) {
  std::string s = base;
  if (op.variant >= 2) s += "Async";
  if (op.ptsz) s += op.variant >= 2 || !sync_suffix_ptds ? "_ptsz" : "_ptds";
  return s;
}

}  // namespace

std::string driver_entry(const Op& op) {
  const bool async = op.variant >= 2;
  std::string s;
  switch (op.kind) {
    case OpKind::kMemset:
      s = op.flags == 32 ? "cuMemsetD32" : "cuMemsetD8";
      s += async ? "Async" : "_v2";
      break;
    case OpKind::kMemcpy:
      s = op.copy_kind == cudaMemcpyHostToDevice   ? "cuMemcpyHtoD"
          : op.copy_kind == cudaMemcpyDeviceToHost ? "cuMemcpyDtoH"
                                                   : "cuMemcpyDtoD";
      s += async ? "Async_v2" : "_v2";
      break;
    case OpKind::kStreamSync: s = "cuStreamSynchronize"; break;
    case OpKind::kDeviceSync: return op.variant ? "cuCtxSynchronize_v2" : "cuCtxSynchronize";
    default: return "?";
  }
  if (op.ptsz) s += async || op.kind == OpKind::kStreamSync ? "_ptsz" : "_ptds";
  return s;
}

std::string describe(const Op& op) {
  char buf[512];
  const auto n = static_cast<unsigned long long>(op.n), h = static_cast<unsigned long long>(op.height);
  const auto dp = static_cast<unsigned long long>(op.dpitch), sp = static_cast<unsigned long long>(op.spitch);
  const char* ctx = ctx_name(op.ctx);
  const std::string d = ref(op.dst), s = ref(op.src);
  const char* ps = op.ptsz ? "_ptsz" : "";
  static const char* const kAllocCases[] = {
      "cuMemAlloc_v2 + cuMemsetD32_v2 + cuMemcpyDtoH_v2 + cuMemFree_v2", "cuMemAlloc_v2(NULL, n)",
      "cuMemAlloc_v2(&p, 0)", "cuMemAlloc_v2(&p, 1<<50)", "cuMemFree_v2(0)", "cuMemFree_v2(interior)",
      "cuMemFree_v2 twice", "cuMemFree_v2(0x1000)"};
  static const char* const kVmmCases[] = {
      "VMM round (reserve, create, map, set access, memset, read, unmap, release, free)",
      "cuMemMap(reserved, bogus handle)", "cuMemRelease twice", "cuMemSetAccess(unmapped)",
      "cuMemCreate(granule + 1)", "cuMemUnmap(unmapped)"};
  if (op.driver) {
    const std::string e = driver_entry(op);
    if (op.kind == OpKind::kMemset)
      std::snprintf(buf, sizeof buf, "%s(%s, %d, %llu%s%s)", e.c_str(), d.c_str(), op.value, n,
                    op.variant >= 2 ? ", " : "", op.variant >= 2 ? ctx : "");
    else if (op.kind == OpKind::kMemcpy)
      std::snprintf(buf, sizeof buf, "%s(%s, %s, %llu%s%s)", e.c_str(), d.c_str(), s.c_str(), n,
                    op.variant >= 2 ? ", " : "", op.variant >= 2 ? ctx : "");
    else if (op.kind == OpKind::kStreamSync)
      std::snprintf(buf, sizeof buf, "%s(%s)", e.c_str(), ctx);
    else
      std::snprintf(buf, sizeof buf, "%s()", e.c_str());
  } else switch (op.kind) {
    case OpKind::kDriverAlloc:
      std::snprintf(buf, sizeof buf, "%s [n=%llu]", kAllocCases[op.variant % 8], n);
      break;
    case OpKind::kDriverVmm:
      std::snprintf(buf, sizeof buf, "%s [%llu granules]", kVmmCases[op.variant % 6], n);
      break;
    case OpKind::kMalloc: std::snprintf(buf, sizeof buf, "cudaMalloc(&%s, %llu)", d.c_str(), n); break;
    case OpKind::kMallocAsync:
      std::snprintf(buf, sizeof buf, "cudaMallocAsync%s(&%s, %llu, %s)", ps, d.c_str(), n, ctx);
      break;
    case OpKind::kMallocFromPool:
      std::snprintf(buf, sizeof buf, "cudaMallocFromPoolAsync%s(&%s, %llu, default pool, %s)", ps, d.c_str(), n, ctx);
      break;
    case OpKind::kMallocPitch:
      std::snprintf(buf, sizeof buf, "cudaMallocPitch(&%s, &pitch, %llu, %llu)", d.c_str(), n, h);
      break;
    case OpKind::kMalloc3D:
      std::snprintf(buf, sizeof buf, "cudaMalloc3D(&%s, {%llu, %llu, 1})", d.c_str(), n, h);
      break;
    case OpKind::kMallocManaged: std::snprintf(buf, sizeof buf, "cudaMallocManaged(&%s, %llu)", d.c_str(), n); break;
    case OpKind::kMallocHost: std::snprintf(buf, sizeof buf, "cudaMallocHost(&%s, %llu)", d.c_str(), n); break;
    case OpKind::kHostAlloc:
      std::snprintf(buf, sizeof buf, "cudaHostAlloc(&%s, %llu, 0x%x)", d.c_str(), n, op.flags);
      break;
    case OpKind::kPageable: std::snprintf(buf, sizeof buf, "%s = new char[%llu] (harness)", d.c_str(), n); break;
    case OpKind::kFree:
      std::snprintf(buf, sizeof buf, "free %s (the right call; async on %s%s)", d.c_str(), ctx, ps);
      break;
    case OpKind::kFreeWrong:
    case OpKind::kFreeBogus:
      std::snprintf(buf, sizeof buf, "%s%s(%s%s%s)", free_name(op.variant), op.variant == 2 ? ps : "", d.c_str(),
                    op.variant == 2 ? ", " : "", op.variant == 2 ? ctx : "");
      break;
    case OpKind::kFreeInterior:
      std::snprintf(buf, sizeof buf, "free %s (interior, the right call; async on %s)", d.c_str(), ctx);
      break;
    case OpKind::kDoubleFree:
      std::snprintf(buf, sizeof buf, "free %s twice (the right call; async on %s%s, synchronized between)",
                    d.c_str(), ctx, ps);
      break;
    case OpKind::kHostRegister:
      std::snprintf(buf, sizeof buf, "cudaHostRegister(%s, %s, 0x%x)",
                    op.variant == 3 ? "NULL" : d.c_str(), op.variant == 2 ? "0" : "whole", op.flags);
      break;
    case OpKind::kHostUnregister:
      std::snprintf(buf, sizeof buf, "cudaHostUnregister(%s)", op.variant ? "stack (not registered)" : d.c_str());
      break;
    case OpKind::kAllocEdge:
      std::snprintf(buf, sizeof buf, "%s [n=%llu, stream %s%s, p=%s]", edge_name(static_cast<EdgeCase>(op.variant)),
                    n, ctx, ps, d.c_str());
      break;
    case OpKind::kMemset:
      std::snprintf(buf, sizeof buf, "%s(%s, %d, %llu%s%s)", entry("cudaMemset", op, true).c_str(), d.c_str(),
                    op.value, n, op.variant >= 2 ? ", " : "", op.variant >= 2 ? ctx : "");
      break;
    case OpKind::kMemset2D:
      std::snprintf(buf, sizeof buf, "%s(%s, pitch %llu, %d, w %llu, h %llu%s%s)",
                    entry("cudaMemset2D", op, true).c_str(), d.c_str(), dp, op.value, n, h,
                    op.variant >= 2 ? ", " : "", op.variant >= 2 ? ctx : "");
      break;
    case OpKind::kMemcpy:
      std::snprintf(buf, sizeof buf, "%s(%s, %s, %llu, %s%s%s)", entry("cudaMemcpy", op, true).c_str(), d.c_str(),
                    s.c_str(), n, copy_kind_name(op.copy_kind), op.variant >= 2 ? ", " : "",
                    op.variant >= 2 ? ctx : "");
      break;
    case OpKind::kMemcpy2D:
      std::snprintf(buf, sizeof buf, "%s(%s, dpitch %llu, %s, spitch %llu, w %llu, h %llu, %s%s%s)",
                    entry("cudaMemcpy2D", op, true).c_str(), d.c_str(), dp, s.c_str(), sp, n, h,
                    copy_kind_name(op.copy_kind), op.variant >= 2 ? ", " : "", op.variant >= 2 ? ctx : "");
      break;
    case OpKind::kMemcpyPeer:
      std::snprintf(buf, sizeof buf, "cudaMemcpyPeer%s(%s, 0, %s, 0, %llu%s%s)", op.variant ? "Async" : "",
                    d.c_str(), s.c_str(), n, op.variant ? ", " : "", op.variant ? ctx : "");
      break;
    case OpKind::kMemcpyBatch: {
      std::string parts;
      for (const Part& p : op.parts)
        parts += (parts.empty() ? "" : "; ") + ref(p.dst) + " <- " + ref(p.src) + " " +
                 std::to_string(static_cast<unsigned long long>(p.n));
      std::snprintf(buf, sizeof buf, "cudaMemcpyBatchAsync%s([%s], %s)", ps, parts.c_str(), ctx);
      break;
    }
    case OpKind::kKernel:
      std::snprintf(buf, sizeof buf, "gpusim_busy_kernel(%s, %s, %llu B, %u us, 0x%x)", ctx, d.c_str(), n, op.micros,
                    static_cast<unsigned>(op.value));
      break;
    case OpKind::kStreamCreate: std::snprintf(buf, sizeof buf, "create own stream %d", op.variant); break;
    case OpKind::kStreamDestroy: std::snprintf(buf, sizeof buf, "cudaStreamDestroy(own%d)", op.variant); break;
    case OpKind::kStreamSync: std::snprintf(buf, sizeof buf, "cudaStreamSynchronize%s(%s)", ps, ctx); break;
    case OpKind::kDeviceSync: std::snprintf(buf, sizeof buf, "cudaDeviceSynchronize()"); break;
    case OpKind::kEventSync:
      std::snprintf(buf, sizeof buf, "cudaEventRecord%s(e, %s); cudaEventSynchronize(e)", ps, ctx);
      break;
    case OpKind::kHostFunc:
      std::snprintf(buf, sizeof buf, "%s%s(%s, fn, ...)", op.variant ? "cudaStreamAddCallback" : "cudaLaunchHostFunc",
                    ps, ctx);
      break;
    case OpKind::kWaitEvent:
      std::snprintf(buf, sizeof buf, "cudaEventRecord(e, %s); cudaStreamWaitEvent%s(%s, e, 0)", ctx_name(op.ctx2), ps,
                    ctx);
      break;
    case OpKind::kMemGetInfo: std::snprintf(buf, sizeof buf, "cudaMemGetInfo(&free, &total)"); break;
    case OpKind::kIpcHandle:
      std::snprintf(buf, sizeof buf, "cudaIpcGetMemHandle(&h, %s), then open h here, close %s", d.c_str(), d.c_str());
      break;
    case OpKind::kFill: std::snprintf(buf, sizeof buf, "fill %s, %llu B (harness, host)", d.c_str(), n); break;
    case OpKind::kInit:
      std::snprintf(buf, sizeof buf, "initialize %s to %d (harness, the runtime's own call, %s)", d.c_str(), op.value,
                    ctx);
      break;
    case OpKind::kObserve: std::snprintf(buf, sizeof buf, "read back %s (harness)", d.c_str()); break;
    case OpKind::kBarrier: std::snprintf(buf, sizeof buf, "barrier (global checks)"); break;
  }
  std::string out = buf;
  if (op.exclusive) out += " [exclusive]";
  if (!op.clear_error) out += " [error left pending]";
  if (!op.note.empty()) out += "  {" + op.note + "}";
  return out;
}

}  // namespace differential

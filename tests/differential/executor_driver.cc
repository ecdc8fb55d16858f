// The driver API ops (program.h: Op::driver, kDriverAlloc, kDriverVmm),
// through the Api's driver rows: libcuda.so.1's own functions in the
// runtime's run, gpuslack's hooks in the other. Result, per kind:
//   memsets, copies, synchronizations: rc, the CUresult;
//   kDriverAlloc, kDriverVmm: rc the last call's CUresult, v[0] every
//     call's CUresult, 10 bits each (the first call lowest), v[1] the
//     out-parameter's state afterwards where there is one, v[2] a hash of
//     the bytes read back (valid rounds).
#include <cuda.h>

#include <cstring>
#include <vector>

#include "executor_state.h"

namespace differential {
namespace detail {
namespace {

CUdeviceptr dptr(const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }
CUstream cu(cudaStream_t s) { return reinterpret_cast<CUstream>(s); }

// Every call's CUresult, packed (Result::v[0]).
struct Codes {
  Result* r;
  int shift = 0;
  CUresult add(CUresult c) {
    if (shift < 60) r->v[0] |= static_cast<int64_t>(c & 0x3ff) << shift;
    shift += 10;
    r->rc = c;
    return c;
  }
};

uint32_t hash_of(const std::vector<char>& bytes) {
  std::vector<uint32_t> h = block_hashes(bytes.data(), bytes.size());
  uint32_t x = 0x811c9dc5u;
  for (uint32_t w : h) x = (x ^ w) * 0x01000193u;
  return x;
}

bool memset_op(ThreadState& t, const Op& op, Result* r) {
  const Api& a = *t.api;
  const uint64_t span = op.flags == 32 ? op.n * 4 : op.n;
  char* p = nullptr;
  if (!resolve(t, op.dst, span, op.dst.slot < 0, &p)) return false;
  const CUstream s = cu(stream_of(t, op.ctx, op.ptsz));
  const CUdeviceptr d = dptr(p);
  const auto v8 = static_cast<unsigned char>(op.value);
  const auto v32 = static_cast<unsigned int>(op.value);
  r->rc = call(r, [&] {
    if (op.flags == 32) {
      switch (op.variant) {
        case 0: return static_cast<cudaError_t>(a.cuMemsetD32_v2(d, v32, op.n));
        case 1: return static_cast<cudaError_t>(a.cuMemsetD32_v2_ptds(d, v32, op.n));
        case 2: return static_cast<cudaError_t>(a.cuMemsetD32Async(d, v32, op.n, s));
        default: return static_cast<cudaError_t>(a.cuMemsetD32Async_ptsz(d, v32, op.n, s));
      }
    }
    switch (op.variant) {
      case 0: return static_cast<cudaError_t>(a.cuMemsetD8_v2(d, v8, op.n));
      case 1: return static_cast<cudaError_t>(a.cuMemsetD8_v2_ptds(d, v8, op.n));
      case 2: return static_cast<cudaError_t>(a.cuMemsetD8Async(d, v8, op.n, s));
      default: return static_cast<cudaError_t>(a.cuMemsetD8Async_ptsz(d, v8, op.n, s));
    }
  });
  return true;
}

bool memcpy_op(ThreadState& t, const Op& op, Result* r) {
  const Api& a = *t.api;
  char *d = nullptr, *src = nullptr;
  if (!resolve(t, op.dst, op.n, false, &d) || !resolve(t, op.src, op.n, false, &src)) return false;
  const CUstream s = cu(stream_of(t, op.ctx, op.ptsz));
  const size_t n = op.n;
  const int v = op.variant;
  r->rc = call(r, [&] {
    CUresult c;
    if (op.copy_kind == cudaMemcpyHostToDevice) {
      c = v == 0   ? a.cuMemcpyHtoD_v2(dptr(d), src, n)
          : v == 1 ? a.cuMemcpyHtoD_v2_ptds(dptr(d), src, n)
          : v == 2 ? a.cuMemcpyHtoDAsync_v2(dptr(d), src, n, s)
                   : a.cuMemcpyHtoDAsync_v2_ptsz(dptr(d), src, n, s);
    } else if (op.copy_kind == cudaMemcpyDeviceToHost) {
      c = v == 0   ? a.cuMemcpyDtoH_v2(d, dptr(src), n)
          : v == 1 ? a.cuMemcpyDtoH_v2_ptds(d, dptr(src), n)
          : v == 2 ? a.cuMemcpyDtoHAsync_v2(d, dptr(src), n, s)
                   : a.cuMemcpyDtoHAsync_v2_ptsz(d, dptr(src), n, s);
    } else {
      c = v == 0   ? a.cuMemcpyDtoD_v2(dptr(d), dptr(src), n)
          : v == 1 ? a.cuMemcpyDtoD_v2_ptds(dptr(d), dptr(src), n)
          : v == 2 ? a.cuMemcpyDtoDAsync_v2(dptr(d), dptr(src), n, s)
                   : a.cuMemcpyDtoDAsync_v2_ptsz(dptr(d), dptr(src), n, s);
    }
    return static_cast<cudaError_t>(c);
  });
  return true;
}

bool alloc_round(ThreadState& t, const Op& op, Result* r) {
  const Api& a = *t.api;
  Codes codes{r};
  CUdeviceptr p = 0x1;  // kSentinel: was it set?
  errno = 0;
  switch (static_cast<DriverAllocCase>(op.variant)) {
    case DriverAllocCase::kRound: {
      if (codes.add(a.cuMemAlloc_v2(&p, op.n)) != CUDA_SUCCESS) break;
      codes.add(a.cuMemsetD32_v2(p, 0xa5a50000u + static_cast<unsigned>(op.n & 0xffff), op.n / 4));
      std::vector<char> back(op.n);
      if (codes.add(a.cuMemcpyDtoH_v2(back.data(), p, op.n)) == CUDA_SUCCESS) r->v[2] = hash_of(back);
      codes.add(a.cuMemFree_v2(p));
      break;
    }
    case DriverAllocCase::kNullOut: codes.add(a.cuMemAlloc_v2(nullptr, op.n)); break;
    case DriverAllocCase::kZero:
    case DriverAllocCase::kHuge:
      codes.add(a.cuMemAlloc_v2(&p, static_cast<DriverAllocCase>(op.variant) == DriverAllocCase::kZero ? 0 : kHuge));
      if (r->rc == CUDA_SUCCESS && p && p != 0x1) codes.add(a.cuMemFree_v2(p));  // should not have been given
      break;
    case DriverAllocCase::kFreeNull: codes.add(a.cuMemFree_v2(0)); break;
    case DriverAllocCase::kFreeInterior:
      if (codes.add(a.cuMemAlloc_v2(&p, op.n + 1)) != CUDA_SUCCESS) break;
      codes.add(a.cuMemFree_v2(p + 1));
      codes.add(a.cuMemFree_v2(p));
      break;
    case DriverAllocCase::kDoubleFree:  // an exclusive op: no thread can be given p in between
      if (codes.add(a.cuMemAlloc_v2(&p, op.n)) != CUDA_SUCCESS) break;
      codes.add(a.cuMemFree_v2(p));
      codes.add(a.cuMemFree_v2(p));
      break;
    case DriverAllocCase::kFreeBogus: codes.add(a.cuMemFree_v2(0x1000)); break;
    case DriverAllocCase::kCount: return false;
  }
  r->err = errno;
  r->v[1] = p == 0 ? 0 : p == 0x1 ? 2 : 1;
  return true;
}

bool vmm_round(ThreadState& t, const Op& op, Result* r) {
  const Api& a = *t.api;
  Codes codes{r};
  errno = 0;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t granule = 0;
  // Not a hooked row: the driver's own, in both runs.
  if (cuMemGetAllocationGranularity(&granule, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS || !granule)
    return false;
  const size_t size = granule * (op.n ? op.n : 1);
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CUdeviceptr va = 0;
  CUmemGenericAllocationHandle h = 0;
  switch (static_cast<DriverVmmCase>(op.variant)) {
    case DriverVmmCase::kRound: {
      if (codes.add(a.cuMemAddressReserve(&va, size, 0, 0, 0)) != CUDA_SUCCESS) break;
      if (codes.add(a.cuMemCreate(&h, size, &prop, 0)) == CUDA_SUCCESS) {
        if (codes.add(a.cuMemMap(va, size, 0, h, 0)) == CUDA_SUCCESS) {
          if (codes.add(a.cuMemSetAccess(va, size, &access, 1)) == CUDA_SUCCESS &&
              codes.add(a.cuMemsetD8_v2(va, static_cast<unsigned char>(op.n * 37), size)) == CUDA_SUCCESS) {
            std::vector<char> back(size);
            if (codes.add(a.cuMemcpyDtoH_v2(back.data(), va, size)) == CUDA_SUCCESS) r->v[2] = hash_of(back);
          }
          codes.add(a.cuMemUnmap(va, size));
        }
        codes.add(a.cuMemRelease(h));
      }
      codes.add(a.cuMemAddressFree(va, size));
      break;
    }
    case DriverVmmCase::kMapBogusHandle:
      if (codes.add(a.cuMemAddressReserve(&va, size, 0, 0, 0)) != CUDA_SUCCESS) break;
      if (codes.add(a.cuMemMap(va, size, 0, 0xdead0000u, 0)) == CUDA_SUCCESS) codes.add(a.cuMemUnmap(va, size));
      codes.add(a.cuMemAddressFree(va, size));
      break;
    case DriverVmmCase::kReleaseTwice:
      if (codes.add(a.cuMemCreate(&h, size, &prop, 0)) != CUDA_SUCCESS) break;
      codes.add(a.cuMemRelease(h));
      codes.add(a.cuMemRelease(h));
      break;
    case DriverVmmCase::kAccessUnmapped:
      if (codes.add(a.cuMemAddressReserve(&va, size, 0, 0, 0)) != CUDA_SUCCESS) break;
      codes.add(a.cuMemSetAccess(va, size, &access, 1));
      codes.add(a.cuMemAddressFree(va, size));
      break;
    case DriverVmmCase::kCreateOddSize:
      if (codes.add(a.cuMemCreate(&h, size + 1, &prop, 0)) == CUDA_SUCCESS) codes.add(a.cuMemRelease(h));
      break;
    case DriverVmmCase::kUnmapUnmapped:
      if (codes.add(a.cuMemAddressReserve(&va, size, 0, 0, 0)) != CUDA_SUCCESS) break;
      codes.add(a.cuMemUnmap(va, size));
      codes.add(a.cuMemAddressFree(va, size));
      break;
    case DriverVmmCase::kCount: return false;
  }
  r->err = errno;
  return true;
}

}  // namespace

bool run_driver(ThreadState& t, const Op& op, Result* r) {
  const Api& a = *t.api;
  if (op.kind == OpKind::kDriverAlloc) return alloc_round(t, op, r);
  if (op.kind == OpKind::kDriverVmm) return vmm_round(t, op, r);
  switch (op.kind) {
    case OpKind::kMemset: return memset_op(t, op, r);
    case OpKind::kMemcpy: return memcpy_op(t, op, r);
    case OpKind::kStreamSync: {
      const CUstream s = cu(stream_of(t, op.ctx, op.ptsz));
      r->rc = call(r, [&] {
        return static_cast<cudaError_t>(op.ptsz ? a.cuStreamSynchronize_ptsz(s) : a.cuStreamSynchronize(s));
      });
      return true;
    }
    case OpKind::kDeviceSync:
      r->rc = call(r, [&] {
        return static_cast<cudaError_t>(op.variant ? a.cuCtxSynchronize_v2(nullptr) : a.cuCtxSynchronize());
      });
      return true;
    default: return false;
  }
}

}  // namespace detail
}  // namespace differential

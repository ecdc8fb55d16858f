// libcuda.so.1 of the simulated device: memory, copies, memsets, streams,
// events and the launches' remaining entry points of the driver API, on the
// same core as the runtime's (sim.h), for programs that use the driver only
// (JAX/XLA, Triton: tests/interpose/programs/driver_client_app.cc).
//
//   - cuMemAlloc/cuMemFree: device memory of the current context's device
//     (none current: CUDA_ERROR_INVALID_CONTEXT); cuMemFree waits for the
//     device, as cudaFree does here; cuMemFree(0) succeeds, as cudaFree(NULL);
//   - cuMemAllocAsync/cuMemFreeAsync: stream ordered, as cudaMallocAsync;
//   - host memory: cuMemAllocHost, cuMemHostAlloc, cuMemFreeHost (waits for
//     the device), cuMemHostRegister/Unregister;
//   - copies: the device side of cuMemcpyHtoD/DtoH/DtoD (and the peer
//     copies) must lie in device memory (else CUDA_ERROR_INVALID_VALUE);
//     the synchronous calls return when the copy is done, the Async ones at
//     once unless the host side is pageable; 2D/3D descriptors with host,
//     device or unified memory (arrays: CUDA_ERROR_NOT_SUPPORTED);
//   - memsets: the range must lie in device memory;
//   - streams and events as the runtime's.
// Every entry point calls the core, never another exported function, so a
// preloaded interposer sees each application call once.
#include <cstring>

#include "driver_internal.h"

using namespace gpusim;

extern "C" {
CUresult cuMemAllocAsync_ptsz(CUdeviceptr*, size_t, CUstream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr, CUstream);
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr, const void*, size_t);
CUresult cuMemcpyDtoH_v2_ptds(void*, CUdeviceptr, size_t);
CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr, CUdeviceptr, size_t);
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr, const void*, size_t, CUstream);
CUresult cuMemcpyDtoHAsync_v2_ptsz(void*, CUdeviceptr, size_t, CUstream);
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr, CUdeviceptr, size_t, CUstream);
CUresult cuMemcpy_ptds(CUdeviceptr, CUdeviceptr, size_t);
CUresult cuMemcpyAsync_ptsz(CUdeviceptr, CUdeviceptr, size_t, CUstream);
CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D*);
CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D*, CUstream);
CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D*);
CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D*, CUstream);
CUresult cuMemcpyPeer_ptds(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t);
CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream);
CUresult cuMemsetD8_v2_ptds(CUdeviceptr, unsigned char, size_t);
CUresult cuMemsetD16_v2_ptds(CUdeviceptr, unsigned short, size_t);
CUresult cuMemsetD32_v2_ptds(CUdeviceptr, unsigned int, size_t);
CUresult cuMemsetD8Async_ptsz(CUdeviceptr, unsigned char, size_t, CUstream);
CUresult cuMemsetD16Async_ptsz(CUdeviceptr, unsigned short, size_t, CUstream);
CUresult cuMemsetD32Async_ptsz(CUdeviceptr, unsigned int, size_t, CUstream);
CUresult cuStreamSynchronize_ptsz(CUstream);
CUresult cuLaunchKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void**, void**);
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig*, CUfunction, void**, void**);
}

namespace {

constexpr size_t kAlign = 512;
size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
void* ptr(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

bool in_device(const void* p, size_t bytes) { return bytes == 0 || classify(p, bytes) == Where::kDevice; }

// The stream a handle names; the special handles need a current context.
CUresult stream_of(CUstream h, bool per_thread, CUstream_st** out) {
  if (h == nullptr || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
    if (CUresult r = drv::ready_with_context()) return r;
  }
  *out = resolve(h, per_thread);
  return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult device_alloc(CUdeviceptr* p, size_t size, MemKind kind, int device, double cost_us, const char* name) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  *p = 0;
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (should_fail(name)) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t charged = round_up(size);
  if (!Memory::get().reserve(device, charged)) return CUDA_ERROR_OUT_OF_MEMORY;
  void* mem = Memory::map_anonymous(size);
  if (!mem) {
    Memory::get().unreserve(device, charged);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  charge(cost_us);
  Memory::get().add(Region(mem, size, kind, device, 0, charged));
  *p = reinterpret_cast<uintptr_t>(mem);
  return CUDA_SUCCESS;
}

void release(const Region& r, bool unmap) {
  if (unmap) Memory::unmap(reinterpret_cast<void*>(r.base), r.size);
  if (r.charged) Memory::get().unreserve(r.device, r.charged);
}

CUresult alloc_async(CUdeviceptr* p, size_t size, CUstream h, bool per_thread) {
  READY();
  CUstream_st* s = nullptr;
  if (CUresult r = stream_of(h, per_thread, &s)) return r;
  if (is_capturing(s)) return CUDA_ERROR_NOT_SUPPORTED;  // graph memory nodes are not simulated
  return device_alloc(p, size, MemKind::kDeviceAsync, s->device, config().malloc_async_us, "cuMemAllocAsync");
}

CUresult free_async(CUdeviceptr p, CUstream h, bool per_thread) {
  READY();
  CUstream_st* s = nullptr;
  if (CUresult r = stream_of(h, per_thread, &s)) return r;
  Region r;
  if (!Memory::get().find_start(ptr(p), MemKind::kDeviceAsync, MemKind::kDeviceAsync, &r))
    return CUDA_ERROR_INVALID_VALUE;
  if (is_capturing(s)) return CUDA_ERROR_NOT_SUPPORTED;
  charge(config().malloc_async_us);
  enqueue(s, [r] {
    if (Memory::get().remove(r.base, nullptr)) release(r, true);
  });
  return CUDA_SUCCESS;
}

// ---------------------------------------------------------------- copies --

// `height` rows of `width` bytes, `depth` times.
struct Rows {
  char* dst;
  const char* src;
  size_t dpitch, spitch, width, height, depth = 1, dslice = 0, sslice = 0;
  size_t bytes() const { return width * height * depth; }
  void run() const {
    for (size_t z = 0; z < depth; ++z)
      for (size_t y = 0; y < height; ++y)
        std::memmove(dst + z * dslice + y * dpitch, src + z * sslice + y * spitch, width);
  }
};

Rows flat(void* dst, const void* src, size_t n) {
  return Rows{static_cast<char*>(dst), static_cast<const char*>(src), n, n, n, 1};
}

CUresult copy(const Rows& c, CUstream h, bool per_thread, bool sync, bool peer = false) {
  CUstream_st* s = nullptr;
  if (CUresult r = stream_of(h, per_thread, &s)) return r;
  if (c.bytes() == 0) return CUDA_SUCCESS;
  const void* src_end = c.src;
  Where src = classify(src_end, 1), dst = classify(c.dst, 1);
  const Config& cfg = config();
  double gbps = src == Where::kDevice && dst == Where::kDevice ? cfg.d2d_gbps / 2
                : src == Where::kDevice                       ? cfg.pinned_d2h_gbps
                                                              : cfg.pinned_h2d_gbps;
  bool pageable = src == Where::kPageable || dst == Where::kPageable;
  if (pageable) gbps = cfg.pageable_gbps;
  double us = cfg.copy_latency_us + transfer_us(c.bytes(), gbps);
  OpInfo info;
  info.kind = OpKind::kMemcpy;
  info.src = src;
  info.dst = dst;
  info.peer = peer;
  info.bytes = c.bytes();
  info.modeled_ns = static_cast<uint64_t>(us * 1000);
  uint64_t seq = enqueue(s, [c, us] {
    auto t0 = Clock::now();
    c.run();
    wait_until(after(t0, us));
  }, info);
  if (seq && (sync || pageable)) wait_op(s, seq);
  return CUDA_SUCCESS;
}

CUresult copy_checked(void* dst, const void* src, size_t n, bool dst_device, bool src_device, CUstream h,
                      bool per_thread, bool sync) {
  READY();
  if (n && (!dst || !src)) return CUDA_ERROR_INVALID_VALUE;
  if ((dst_device && !in_device(dst, n)) || (src_device && !in_device(src, n))) return CUDA_ERROR_INVALID_VALUE;
  return copy(flat(dst, src, n), h, per_thread, sync);
}

// One side of a 2D/3D descriptor: its first byte, or nullptr (arrays).
template <typename Desc>
const char* side(CUmemorytype type, const void* host, CUdeviceptr device, size_t x, size_t y, size_t z,
                 size_t pitch, size_t height) {
  const char* base = type == CU_MEMORYTYPE_HOST ? static_cast<const char*>(host)
                     : type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED
                         ? static_cast<const char*>(ptr(device))
                         : nullptr;
  return base ? base + x + y * pitch + z * pitch * height : nullptr;
}

CUresult copy_3d(const CUDA_MEMCPY3D* c, CUstream h, bool per_thread, bool sync) {
  READY();
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  if (c->srcMemoryType == CU_MEMORYTYPE_ARRAY || c->dstMemoryType == CU_MEMORYTYPE_ARRAY)
    return CUDA_ERROR_NOT_SUPPORTED;
  const char* src = side<CUDA_MEMCPY3D>(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY,
                                        c->srcZ, c->srcPitch, c->srcHeight);
  const char* dst = side<CUDA_MEMCPY3D>(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY,
                                        c->dstZ, c->dstPitch, c->dstHeight);
  size_t depth = c->Depth ? c->Depth : 1;
  if (c->WidthInBytes * c->Height * depth == 0) return CUDA_SUCCESS;
  if (!src || !dst || c->WidthInBytes > c->srcPitch || c->WidthInBytes > c->dstPitch) return CUDA_ERROR_INVALID_VALUE;
  Rows r{const_cast<char*>(dst), src, c->dstPitch, c->srcPitch, c->WidthInBytes, c->Height, depth,
         c->dstPitch * c->dstHeight, c->srcPitch * c->srcHeight};
  size_t dspan = (depth - 1) * r.dslice + (c->Height - 1) * r.dpitch + r.width;
  size_t sspan = (depth - 1) * r.sslice + (c->Height - 1) * r.spitch + r.width;
  if ((c->dstMemoryType == CU_MEMORYTYPE_DEVICE && !in_device(dst, dspan)) ||
      (c->srcMemoryType == CU_MEMORYTYPE_DEVICE && !in_device(src, sspan)))
    return CUDA_ERROR_INVALID_VALUE;
  return copy(r, h, per_thread, sync);
}

CUresult copy_2d(const CUDA_MEMCPY2D* c, CUstream h, bool per_thread, bool sync) {
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  CUDA_MEMCPY3D d{};
  d.srcXInBytes = c->srcXInBytes;
  d.srcY = c->srcY;
  d.srcMemoryType = c->srcMemoryType;
  d.srcHost = c->srcHost;
  d.srcDevice = c->srcDevice;
  d.srcArray = c->srcArray;
  d.srcPitch = c->srcPitch;
  d.srcHeight = c->Height + c->srcY;
  d.dstXInBytes = c->dstXInBytes;
  d.dstY = c->dstY;
  d.dstMemoryType = c->dstMemoryType;
  d.dstHost = c->dstHost;
  d.dstDevice = c->dstDevice;
  d.dstArray = c->dstArray;
  d.dstPitch = c->dstPitch;
  d.dstHeight = c->Height + c->dstY;
  d.WidthInBytes = c->WidthInBytes;
  d.Height = c->Height;
  d.Depth = 1;
  return copy_3d(&d, h, per_thread, sync);
}

CUresult peer(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n, CUstream h, bool per_thread,
              bool sync) {
  READY();
  if (!dc || !sc) return CUDA_ERROR_INVALID_CONTEXT;
  if (!in_device(ptr(dst), n) || !in_device(ptr(src), n)) return CUDA_ERROR_INVALID_VALUE;
  return copy(flat(ptr(dst), ptr(src), n), h, per_thread, sync, true);
}

// --------------------------------------------------------------- memsets --

template <typename T>
CUresult fill(CUdeviceptr p, T value, size_t n, CUstream h, bool per_thread, bool sync) {
  READY();
  CUstream_st* s = nullptr;
  if (CUresult r = stream_of(h, per_thread, &s)) return r;
  if (n == 0) return CUDA_SUCCESS;
  if (p % sizeof(T) || !in_device(ptr(p), n * sizeof(T))) return CUDA_ERROR_INVALID_VALUE;
  double us = config().copy_latency_us + transfer_us(n * sizeof(T), config().memset_gbps);
  T* words = static_cast<T*>(ptr(p));
  OpInfo info;
  info.kind = OpKind::kMemset;
  info.bytes = n * sizeof(T);
  info.memset_value = static_cast<uint8_t>(value);
  info.modeled_ns = static_cast<uint64_t>(us * 1000);
  uint64_t seq = enqueue(s, [words, value, n, us] {
    auto end = after(Clock::now(), us);
    for (size_t i = 0; i < n; ++i) words[i] = value;
    wait_until(end);
  }, info);
  if (seq && sync) wait_op(s, seq);
  return CUDA_SUCCESS;
}

CUresult launch_ex(const CUlaunchConfig* c, CUfunction f, bool per_thread) {
  READY();
  if (!c || !f) return CUDA_ERROR_INVALID_VALUE;
  uint64_t blocks = static_cast<uint64_t>(c->gridDimX) * c->gridDimY * c->gridDimZ;
  if (blocks == 0) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (CUresult r = stream_of(c->hStream, per_thread, &s)) return r;
  launch_kernel(s, blocks, f);
  return CUDA_SUCCESS;
}

}  // namespace

// ---- allocation ----
GPUSIM_EXPORT CUresult cuMemAlloc(CUdeviceptr* p, size_t size) {
  READY_WITH_CONTEXT();
  const Config& cfg = config();
  double us = cfg.malloc_us + cfg.malloc_per_gib_us * static_cast<double>(size) / (1ull << 30);
  return device_alloc(p, size, MemKind::kDevice, current_device(), us, "cuMemAlloc");
}
GPUSIM_EXPORT CUresult cuMemFree(CUdeviceptr p) {
  READY_WITH_CONTEXT();
  if (p == 0) return CUDA_SUCCESS;
  Region r;
  if (!Memory::get().find_start(ptr(p), MemKind::kDevice, MemKind::kDevice, &r)) return CUDA_ERROR_INVALID_VALUE;
  sync_device(r.device);
  charge(config().free_us);
  if (Memory::get().remove(r.base, nullptr)) release(r, true);
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* p, size_t size, CUstream h) { return alloc_async(p, size, h, false); }
GPUSIM_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* p, size_t size, CUstream h) {
  return alloc_async(p, size, h, true);
}
GPUSIM_EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream h) { return free_async(p, h, false); }
GPUSIM_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream h) { return free_async(p, h, true); }

namespace {
CUresult host_alloc(void** p, size_t size, unsigned int flags) {
  READY_WITH_CONTEXT();
  if (!p || size == 0) return CUDA_ERROR_INVALID_VALUE;
  *p = nullptr;
  if (should_fail("cuMemHostAlloc")) return CUDA_ERROR_OUT_OF_MEMORY;
  void* mem = Memory::map_anonymous(size);
  if (!mem) return CUDA_ERROR_OUT_OF_MEMORY;
  charge(config().host_alloc_us + transfer_us(size, config().host_pin_gbps));
  Memory::get().add(Region(mem, size, MemKind::kPinned, current_device(), flags));
  *p = mem;
  return CUDA_SUCCESS;
}
}  // namespace
GPUSIM_EXPORT CUresult cuMemHostAlloc(void** p, size_t size, unsigned int flags) { return host_alloc(p, size, flags); }
GPUSIM_EXPORT CUresult cuMemAllocHost(void** p, size_t size) { return host_alloc(p, size, 0); }
GPUSIM_EXPORT CUresult cuMemFreeHost(void* p) {
  READY();
  Region r;
  if (!Memory::get().find_start(p, MemKind::kPinned, MemKind::kPinned, &r)) return CUDA_ERROR_INVALID_VALUE;
  sync_device(r.device);
  charge(config().free_host_us);
  if (Memory::get().remove(r.base, nullptr)) release(r, true);
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuMemHostRegister(void* p, size_t size, unsigned int flags) {
  READY_WITH_CONTEXT();
  if (!p || size == 0) return CUDA_ERROR_INVALID_VALUE;
  Region existing;
  if (Memory::get().find(p, 1, &existing)) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  charge(config().host_alloc_us + transfer_us(size, config().host_pin_gbps));
  Memory::get().add(Region(p, size, MemKind::kRegistered, current_device(), flags));
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuMemHostUnregister(void* p) {
  READY();
  Region r;
  if (!Memory::get().find_start(p, MemKind::kRegistered, MemKind::kRegistered, &r))
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  Memory::get().remove(r.base, nullptr);
  return CUDA_SUCCESS;
}

// ---- copies ----
#define GPUSIM_COPY_PAIR(name, suffix, params, body_legacy, body_pt)    \
  GPUSIM_EXPORT CUresult name params { return body_legacy; }          \
  GPUSIM_EXPORT CUresult name##suffix params { return body_pt; }

GPUSIM_COPY_PAIR(cuMemcpyHtoD_v2, _ptds, (CUdeviceptr d, const void* s, size_t n),
                 copy_checked(ptr(d), s, n, true, false, nullptr, false, true),
                 copy_checked(ptr(d), s, n, true, false, nullptr, true, true))
GPUSIM_COPY_PAIR(cuMemcpyDtoH_v2, _ptds, (void* d, CUdeviceptr s, size_t n),
                 copy_checked(d, ptr(s), n, false, true, nullptr, false, true),
                 copy_checked(d, ptr(s), n, false, true, nullptr, true, true))
GPUSIM_COPY_PAIR(cuMemcpyDtoD_v2, _ptds, (CUdeviceptr d, CUdeviceptr s, size_t n),
                 copy_checked(ptr(d), ptr(s), n, true, true, nullptr, false, true),
                 copy_checked(ptr(d), ptr(s), n, true, true, nullptr, true, true))
GPUSIM_COPY_PAIR(cuMemcpyHtoDAsync_v2, _ptsz, (CUdeviceptr d, const void* s, size_t n, CUstream h),
                 copy_checked(ptr(d), s, n, true, false, h, false, false),
                 copy_checked(ptr(d), s, n, true, false, h, true, false))
GPUSIM_COPY_PAIR(cuMemcpyDtoHAsync_v2, _ptsz, (void* d, CUdeviceptr s, size_t n, CUstream h),
                 copy_checked(d, ptr(s), n, false, true, h, false, false),
                 copy_checked(d, ptr(s), n, false, true, h, true, false))
GPUSIM_COPY_PAIR(cuMemcpyDtoDAsync_v2, _ptsz, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h),
                 copy_checked(ptr(d), ptr(s), n, true, true, h, false, false),
                 copy_checked(ptr(d), ptr(s), n, true, true, h, true, false))
GPUSIM_COPY_PAIR(cuMemcpy, _ptds, (CUdeviceptr d, CUdeviceptr s, size_t n),
                 copy_checked(ptr(d), ptr(s), n, false, false, nullptr, false, true),
                 copy_checked(ptr(d), ptr(s), n, false, false, nullptr, true, true))
GPUSIM_COPY_PAIR(cuMemcpyAsync, _ptsz, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h),
                 copy_checked(ptr(d), ptr(s), n, false, false, h, false, false),
                 copy_checked(ptr(d), ptr(s), n, false, false, h, true, false))
GPUSIM_COPY_PAIR(cuMemcpy2D_v2, _ptds, (const CUDA_MEMCPY2D* c), copy_2d(c, nullptr, false, true),
                 copy_2d(c, nullptr, true, true))
GPUSIM_COPY_PAIR(cuMemcpy2DAsync_v2, _ptsz, (const CUDA_MEMCPY2D* c, CUstream h), copy_2d(c, h, false, false),
                 copy_2d(c, h, true, false))
GPUSIM_COPY_PAIR(cuMemcpy3D_v2, _ptds, (const CUDA_MEMCPY3D* c), copy_3d(c, nullptr, false, true),
                 copy_3d(c, nullptr, true, true))
GPUSIM_COPY_PAIR(cuMemcpy3DAsync_v2, _ptsz, (const CUDA_MEMCPY3D* c, CUstream h), copy_3d(c, h, false, false),
                 copy_3d(c, h, true, false))
GPUSIM_COPY_PAIR(cuMemcpyPeer, _ptds, (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n),
                 peer(d, dc, s, sc, n, nullptr, false, true), peer(d, dc, s, sc, n, nullptr, true, true))
GPUSIM_COPY_PAIR(cuMemcpyPeerAsync, _ptsz,
                 (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream h),
                 peer(d, dc, s, sc, n, h, false, false), peer(d, dc, s, sc, n, h, true, false))

// ---- memsets (cuMemsetD32Async's legacy entry point is in driver_launch.cc) ----
GPUSIM_COPY_PAIR(cuMemsetD8_v2, _ptds, (CUdeviceptr p, unsigned char v, size_t n),
                 fill(p, v, n, nullptr, false, true), fill(p, v, n, nullptr, true, true))
GPUSIM_COPY_PAIR(cuMemsetD16_v2, _ptds, (CUdeviceptr p, unsigned short v, size_t n),
                 fill(p, v, n, nullptr, false, true), fill(p, v, n, nullptr, true, true))
GPUSIM_COPY_PAIR(cuMemsetD32_v2, _ptds, (CUdeviceptr p, unsigned int v, size_t n),
                 fill(p, v, n, nullptr, false, true), fill(p, v, n, nullptr, true, true))
GPUSIM_COPY_PAIR(cuMemsetD8Async, _ptsz, (CUdeviceptr p, unsigned char v, size_t n, CUstream h),
                 fill(p, v, n, h, false, false), fill(p, v, n, h, true, false))
GPUSIM_COPY_PAIR(cuMemsetD16Async, _ptsz, (CUdeviceptr p, unsigned short v, size_t n, CUstream h),
                 fill(p, v, n, h, false, false), fill(p, v, n, h, true, false))
GPUSIM_EXPORT CUresult cuMemsetD32Async_ptsz(CUdeviceptr p, unsigned int v, size_t n, CUstream h) {
  return fill(p, v, n, h, true, false);
}
#undef GPUSIM_COPY_PAIR

// ---- streams and events ----
GPUSIM_EXPORT CUresult cuStreamCreateWithPriority(CUstream* s, unsigned int flags, int priority) {
  READY_WITH_CONTEXT();
  if (!s || (flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING))) return CUDA_ERROR_INVALID_VALUE;
  *s = new_stream(current_device(), flags, priority);
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuStreamCreate(CUstream* s, unsigned int flags) {
  READY_WITH_CONTEXT();
  if (!s || (flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING))) return CUDA_ERROR_INVALID_VALUE;
  *s = new_stream(current_device(), flags, 0);
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuStreamDestroy(CUstream h) {
  READY();
  if (h == nullptr || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) return CUDA_ERROR_INVALID_HANDLE;
  CUstream_st* s = resolve(h, false);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  destroy_stream(s);
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuStreamSynchronize(CUstream h) {
  READY();
  CUstream_st* s = nullptr;
  if (CUresult r = stream_of(h, false, &s)) return r;
  sync_stream(s);
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream h) {
  READY();
  CUstream_st* s = nullptr;
  if (CUresult r = stream_of(h, true, &s)) return r;
  sync_stream(s);
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuEventCreate(CUevent* e, unsigned int flags) {
  READY_WITH_CONTEXT();
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  *e = new CUevent_st();
  (*e)->flags = flags;
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuEventDestroy(CUevent e) {
  READY();
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  delete e;
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuEventRecord(CUevent e, CUstream h) {
  READY();
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  CUstream_st* s = nullptr;
  if (CUresult r = stream_of(h, false, &s)) return r;
  record_event(e, s);
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuEventQuery(CUevent e) {
  READY();
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  return event_done(e) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
GPUSIM_EXPORT CUresult cuEventSynchronize(CUevent e) {
  READY();
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  sync_event(e);
  return CUDA_SUCCESS;
}

// ---- launches (cuLaunchKernel itself is in driver_launch.cc) ----
GPUSIM_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                           unsigned by, unsigned bz, unsigned shared, CUstream h, void** params,
                                           void** extra) {
  (void)bx, (void)by, (void)bz, (void)shared, (void)params, (void)extra;
  READY();
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  uint64_t blocks = static_cast<uint64_t>(gx) * gy * gz;
  if (blocks == 0) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (CUresult r = stream_of(h, true, &s)) return r;
  launch_kernel(s, blocks, f);
  return CUDA_SUCCESS;
}
GPUSIM_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* c, CUfunction f, void** params, void** extra) {
  (void)params, (void)extra;
  return launch_ex(c, f, false);
}
GPUSIM_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* c, CUfunction f, void** params, void** extra) {
  (void)params, (void)extra;
  return launch_ex(c, f, true);
}

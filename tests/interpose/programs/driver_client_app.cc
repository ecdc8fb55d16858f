// A program that uses the CUDA driver only, as JAX/XLA and Triton do: it
// dlopen()s libcuda.so.1 (RTLD_GLOBAL), finds cuGetProcAddress_v2 by name in
// the process and then every function it calls through cuGetProcAddress,
// never by its exported name. driver_client_test.py runs it natively and
// under LD_PRELOAD and reads the summary.
//
//   driver_client_app [iterations] [--runtime | --dlsym]
//
// Each iteration: cuMemAlloc/cuMemFree of 4 MiB, a pinned buffer
// (cuMemAllocHost/cuMemFreeHost), copies H2D (legacy and per-thread
// variants), D2D, D2H, async H2D on a stream of its own, memsets (D8, D32
// async), cuStreamSynchronize, cuEventSynchronize, cuCtxSynchronize, and a
// VMM round (cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess,
// cuMemUnmap, cuMemRelease, cuMemAddressFree) of 2 MiB. With --runtime, the
// VMM functions are found as PyTorch's expandable segments find them:
// cudaGetDriverEntryPointByVersion(name, 12000) of libcudart.so.13, and each
// iteration also makes one cudaMalloc/cudaFree of 8 MiB (under
// allocator:vmm, gpuslack's own VMM calls, which must not be counted as the
// program's). With --dlsym, every driver function is found by dlsym on the
// handle of libcuda.so.1, by its exported name (cuMemsetD32Async through the
// cuGetProcAddress_v2 found so, as a statically linked runtime finds
// everything), and the lookups whose answer
// must not change under gpuslack are printed ("same: ..." lines, with
// dlerror()'s text; dlsym_probe.h) beside the object each hooked lookup's
// pointer lies in ("hooked: ..."). Prints
// "driver_client_app: ok" when every call succeeded and the bytes came back.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "dlsym_probe.h"

namespace {

using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
using GetRuntimeEntry = cudaError_t (*)(const char*, void**, unsigned int, unsigned long long,
                                        cudaDriverEntryPointQueryResult*);
GetProc g_get = nullptr;
GetRuntimeEntry g_runtime_get = nullptr;
cudaError_t (*g_cuda_malloc)(void**, size_t) = nullptr;
cudaError_t (*g_cuda_free)(void*) = nullptr;
void* g_cuda = nullptr;   // the handle of libcuda.so.1
bool g_by_dlsym = false;  // --dlsym

[[noreturn]] void die(const char* what, int code) {
  std::printf("driver_client_app: FAILED %s (%d)\n", what, code);
  std::exit(1);
}

// The exported name the lookups below resolve to (the simulated and the
// real libcuda.so.1 agree), for --dlsym.
const char* exported_name(const char* base, int version, cuuint64_t flags) {
  if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) return "cuMemcpyHtoD_v2_ptds";  // the one asked
  if (std::strcmp(base, "cuCtxSynchronize") == 0) return version >= 13000 ? "cuCtxSynchronize_v2" : base;
  static const char* const kV2[][2] = {
      {"cuMemAlloc", "cuMemAlloc_v2"},           {"cuMemFree", "cuMemFree_v2"},
      {"cuMemAllocHost", "cuMemAllocHost_v2"},   {"cuMemcpyHtoD", "cuMemcpyHtoD_v2"},
      {"cuMemcpyDtoH", "cuMemcpyDtoH_v2"},       {"cuMemcpyDtoD", "cuMemcpyDtoD_v2"},
      {"cuMemcpyHtoDAsync", "cuMemcpyHtoDAsync_v2"}, {"cuMemsetD8", "cuMemsetD8_v2"},
      {"cuStreamDestroy", "cuStreamDestroy_v2"}};
  for (const auto& row : kV2)
    if (std::strcmp(base, row[0]) == 0) return row[1];
  return base;
}

template <typename Fn>
Fn find(const char* name, int version = 13000, cuuint64_t flags = 0) {
  // cuMemsetD32Async through the cuGetProcAddress_v2 that dlsym found.
  if (g_by_dlsym && std::strcmp(name, "cuMemsetD32Async") != 0) {
    const char* exported = exported_name(name, version, flags);
    void* f = dlsym(g_cuda, exported);
    if (!f) die(exported, 0);
    return reinterpret_cast<Fn>(f);
  }
  void* f = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult r = g_get(name, &f, version, flags, &status);
  if (r != CUDA_SUCCESS || !f || status != CU_GET_PROC_ADDRESS_SUCCESS) die(name, r);
  return reinterpret_cast<Fn>(f);
}

template <typename Fn>
Fn find_vmm(const char* name, bool via_runtime) {
  if (!via_runtime) return find<Fn>(name);
  void* f = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  cudaError_t r = g_runtime_get(name, &f, 12000, cudaEnableDefault, &status);
  if (r != cudaSuccess || !f || status != cudaDriverEntryPointSuccess) die(name, r);
  return reinterpret_cast<Fn>(f);
}

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) die(what, r);
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = argc > 1 ? std::atoi(argv[1]) : 20;
  bool via_runtime = argc > 2 && std::strcmp(argv[2], "--runtime") == 0;
  g_by_dlsym = argc > 2 && std::strcmp(argv[2], "--dlsym") == 0;
  g_cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!g_cuda) die(dlerror(), 0);
  if (g_by_dlsym) dlsym_probe::print_lookups(g_cuda);
  // What the process resolves the name to (gpuslack's hook when preloaded);
  // with --dlsym, what libcuda.so.1's handle gives (gpuslack's too).
  g_get = reinterpret_cast<GetProc>(dlsym(g_by_dlsym ? g_cuda : RTLD_DEFAULT, "cuGetProcAddress_v2"));
  if (!g_get) die("cuGetProcAddress_v2", 0);
  if (via_runtime) {
    if (!dlopen("libcudart.so.13", RTLD_NOW | RTLD_GLOBAL)) die(dlerror(), 0);
    g_runtime_get = reinterpret_cast<GetRuntimeEntry>(dlsym(RTLD_DEFAULT, "cudaGetDriverEntryPointByVersion"));
    if (!g_runtime_get) die("cudaGetDriverEntryPointByVersion", 0);
    g_cuda_malloc = reinterpret_cast<decltype(g_cuda_malloc)>(dlsym(RTLD_DEFAULT, "cudaMalloc"));
    g_cuda_free = reinterpret_cast<decltype(g_cuda_free)>(dlsym(RTLD_DEFAULT, "cudaFree"));
    if (!g_cuda_malloc || !g_cuda_free) die("cudaMalloc", 0);
  }

  auto init = find<CUresult (*)(unsigned)>("cuInit");
  check(init(0), "cuInit");
  auto device_get = find<CUresult (*)(CUdevice*, int)>("cuDeviceGet");
  auto retain = find<CUresult (*)(CUcontext*, CUdevice)>("cuDevicePrimaryCtxRetain");
  auto set_current = find<CUresult (*)(CUcontext)>("cuCtxSetCurrent");
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  check(device_get(&dev, 0), "cuDeviceGet");
  check(retain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(set_current(ctx), "cuCtxSetCurrent");

  auto mem_alloc = find<CUresult (*)(CUdeviceptr*, size_t)>("cuMemAlloc");
  auto mem_free = find<CUresult (*)(CUdeviceptr)>("cuMemFree");
  auto alloc_host = find<CUresult (*)(void**, size_t)>("cuMemAllocHost");
  auto free_host = find<CUresult (*)(void*)>("cuMemFreeHost");
  auto htod = find<CUresult (*)(CUdeviceptr, const void*, size_t)>("cuMemcpyHtoD");
  auto htod_pt = find<CUresult (*)(CUdeviceptr, const void*, size_t)>(
      "cuMemcpyHtoD", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  auto dtoh = find<CUresult (*)(void*, CUdeviceptr, size_t)>("cuMemcpyDtoH");
  auto dtod = find<CUresult (*)(CUdeviceptr, CUdeviceptr, size_t)>("cuMemcpyDtoD");
  auto htod_async = find<CUresult (*)(CUdeviceptr, const void*, size_t, CUstream)>("cuMemcpyHtoDAsync");
  auto memset8 = find<CUresult (*)(CUdeviceptr, unsigned char, size_t)>("cuMemsetD8");
  auto memset32_async = find<CUresult (*)(CUdeviceptr, unsigned int, size_t, CUstream)>("cuMemsetD32Async");
  auto stream_create = find<CUresult (*)(CUstream*, unsigned)>("cuStreamCreate");
  auto stream_sync = find<CUresult (*)(CUstream)>("cuStreamSynchronize");
  auto stream_destroy = find<CUresult (*)(CUstream)>("cuStreamDestroy");
  auto event_create = find<CUresult (*)(CUevent*, unsigned)>("cuEventCreate");
  auto event_record = find<CUresult (*)(CUevent, CUstream)>("cuEventRecord");
  auto event_sync = find<CUresult (*)(CUevent)>("cuEventSynchronize");
  // cuCtxSynchronize of CUDA 12 (no argument; 13.0's takes the context).
  auto ctx_sync = find<CUresult (*)()>("cuCtxSynchronize", 12000);
  auto granularity = find<CUresult (*)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags)>(
      "cuMemGetAllocationGranularity");
  auto reserve = find_vmm<CUresult (*)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long)>(
      "cuMemAddressReserve", via_runtime);
  auto create = find_vmm<CUresult (*)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                                      unsigned long long)>("cuMemCreate", via_runtime);
  auto map = find_vmm<CUresult (*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long)>(
      "cuMemMap", via_runtime);
  auto set_access = find_vmm<CUresult (*)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t)>("cuMemSetAccess",
                                                                                                via_runtime);
  auto unmap = find<CUresult (*)(CUdeviceptr, size_t)>("cuMemUnmap");
  auto release = find<CUresult (*)(CUmemGenericAllocationHandle)>("cuMemRelease");
  auto address_free = find<CUresult (*)(CUdeviceptr, size_t)>("cuMemAddressFree");

  const size_t kBytes = 4 << 20;
  CUstream stream = nullptr;
  CUevent event = nullptr;
  check(stream_create(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(event_create(&event, 0), "cuEventCreate");
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  size_t granule = 0;
  check(granularity(&granule, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "cuMemGetAllocationGranularity");
  std::vector<unsigned char> pageable(kBytes), back(kBytes);
  for (int it = 0; it < iterations; ++it) {
    for (size_t i = 0; i < kBytes; ++i) pageable[i] = static_cast<unsigned char>(i * 7 + it);
    CUdeviceptr a = 0, b = 0;
    void* pinned = nullptr;
    check(mem_alloc(&a, kBytes), "cuMemAlloc");
    check(mem_alloc(&b, kBytes), "cuMemAlloc");
    check(alloc_host(&pinned, kBytes), "cuMemAllocHost");
    check(htod(a, pageable.data(), kBytes), "cuMemcpyHtoD");
    check(htod_pt(a, pageable.data(), kBytes / 2), "cuMemcpyHtoD (per-thread)");
    check(dtod(b, a, kBytes), "cuMemcpyDtoD");
    check(dtoh(back.data(), b, kBytes), "cuMemcpyDtoH");
    if (std::memcmp(back.data(), pageable.data(), kBytes) != 0) die("bytes differ after the round trip", it);
    std::memcpy(pinned, pageable.data(), kBytes);
    check(htod_async(a, pinned, kBytes, stream), "cuMemcpyHtoDAsync");
    check(memset32_async(b, 0x01010101u, kBytes / 4, stream), "cuMemsetD32Async");
    check(event_record(event, stream), "cuEventRecord");
    check(event_sync(event), "cuEventSynchronize");
    check(stream_sync(stream), "cuStreamSynchronize");
    check(memset8(a, 0x01, kBytes), "cuMemsetD8");
    check(dtoh(back.data(), a, 64), "cuMemcpyDtoH");
    if (back[0] != 0x01 || back[63] != 0x01) die("memset did not reach the device", it);
    check(ctx_sync(), "cuCtxSynchronize");
    // Another allocator's VMM traffic.
    CUdeviceptr va = 0;
    CUmemGenericAllocationHandle handle = 0;
    check(reserve(&va, granule, 0, 0, 0), "cuMemAddressReserve");
    check(create(&handle, granule, &prop, 0), "cuMemCreate");
    check(map(va, granule, 0, handle, 0), "cuMemMap");
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    check(set_access(va, granule, &access, 1), "cuMemSetAccess");
    check(unmap(va, granule), "cuMemUnmap");
    check(release(handle), "cuMemRelease");
    check(address_free(va, granule), "cuMemAddressFree");
    check(free_host(pinned), "cuMemFreeHost");
    check(mem_free(a), "cuMemFree");
    check(mem_free(b), "cuMemFree");
    if (via_runtime) {
      void* p = nullptr;
      if (cudaError_t e = g_cuda_malloc(&p, 8 << 20)) die("cudaMalloc", e);
      if (cudaError_t e = g_cuda_free(p)) die("cudaFree", e);
    }
  }
  check(stream_destroy(stream), "cuStreamDestroy");
  std::printf("driver_client_app: ok iterations %d granule %zu\n", iterations, granule);
  return 0;
}

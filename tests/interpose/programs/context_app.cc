// A program whose first CUDA call on a thread is cudaMalloc, in the ways a
// real program makes it (context_test.cc runs it natively and under
// gpuslack with allocator:vmm, and compares):
//   first_call      the process's first CUDA call, on the main thread;
//   fresh_thread    the main thread allocated; a new thread's first call;
//   device1         after cudaSetDevice(1) (GPUSIM_DEVICE_COUNT=2);
//   driver_thread   a thread that used only the driver (cuInit, no context);
//   app_context     a thread on which the application pushed device 1's
//                   primary context itself (the runtime's device then is 1).
// Each prints what the application can observe, one fact per line: the
// runtime's return codes, the device of the memory, the context current
// afterwards (and the one below it), and whether a driver call that needs
// a context then works. Under gpuslack it also prints, from gpuslack's C
// API, whether its VMM allocator served the device ("vmm device D
// allocations N"), which the native run cannot print.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "gpuslack/gpuslack.h"

namespace {

std::string context_name(CUcontext c) {
  if (!c) return "none";
  for (int d = 0; d < 2; ++d) {
    CUcontext p = nullptr;
    // Retaining to compare, then releasing: the reference count is unchanged.
    if (cuDevicePrimaryCtxRetain(&p, d) != CUDA_SUCCESS) continue;
    cuDevicePrimaryCtxRelease(d);
    if (p == c) return "primary" + std::to_string(d);
  }
  return "other";
}

// One allocation, as the application sees it.
void allocate(const char* who) {
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, 3 << 20);
  std::printf("%s cudaMalloc %d\n", who, static_cast<int>(e));
  std::printf("%s last_error %d\n", who, static_cast<int>(cudaGetLastError()));
  if (e != cudaSuccess) return;
  cudaPointerAttributes a;
  std::memset(&a, 0, sizeof(a));
  if (cudaPointerGetAttributes(&a, p) == cudaSuccess)
    std::printf("%s memory type %d device %d\n", who, static_cast<int>(a.type), a.device);
  CUcontext c = nullptr;
  cuCtxGetCurrent(&c);
  std::printf("%s context %s\n", who, context_name(c).c_str());
  size_t free_b = 0, total = 0;
  std::printf("%s cuMemGetInfo %d\n", who, static_cast<int>(cuMemGetInfo(&free_b, &total)));
  std::printf("%s cudaMemset %d\n", who, static_cast<int>(cudaMemset(p, 0, 3 << 20)));
  std::printf("%s cudaDeviceSynchronize %d\n", who, static_cast<int>(cudaDeviceSynchronize()));
  std::printf("%s cudaFree %d\n", who, static_cast<int>(cudaFree(p)));
}

void report_vmm() {
  using StatsGet = int (*)(int, gpuslack_device_stats*);
  auto get = reinterpret_cast<StatsGet>(dlsym(RTLD_DEFAULT, "gpuslack_device_stats_get"));
  if (!get) return;  // not under gpuslack
  for (int d = 0; d < 2; ++d) {
    gpuslack_device_stats s;
    if (get(d, &s) == 0) std::printf("vmm device %d allocations %llu\n", d, s.allocations);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "first_call") {
    allocate("main");
  } else if (mode == "fresh_thread") {
    allocate("main");
    std::thread([] { allocate("thread"); }).join();
  } else if (mode == "device1") {
    std::printf("main cudaSetDevice %d\n", static_cast<int>(cudaSetDevice(1)));
    allocate("main");
  } else if (mode == "driver_thread") {
    std::thread([] {
      std::printf("thread cuInit %d\n", static_cast<int>(cuInit(0)));
      CUcontext c = reinterpret_cast<CUcontext>(1);
      cuCtxGetCurrent(&c);
      std::printf("thread context before %s\n", context_name(c).c_str());
      allocate("thread");
    }).join();
  } else if (mode == "app_context") {
    std::thread([] {
      cuInit(0);
      CUcontext c1 = nullptr;
      cuDevicePrimaryCtxRetain(&c1, 1);
      std::printf("thread cuCtxPushCurrent %d\n", static_cast<int>(cuCtxPushCurrent(c1)));
      allocate("thread");
      CUcontext popped = nullptr;
      CUresult r = cuCtxPopCurrent(&popped);
      std::printf("thread cuCtxPopCurrent %d %s\n", static_cast<int>(r), context_name(popped).c_str());
      CUcontext below = reinterpret_cast<CUcontext>(1);
      cuCtxGetCurrent(&below);
      std::printf("thread context below %s\n", context_name(below).c_str());
      cuDevicePrimaryCtxRelease(1);
    }).join();
  } else {
    std::fprintf(stderr, "usage: context_app first_call|fresh_thread|device1|driver_thread|app_context\n");
    return 2;
  }
  report_vmm();
  return 0;
}

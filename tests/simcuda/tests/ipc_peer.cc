// The other process of ipc_process_test.cc: opens what the test exported
// and checks and writes its bytes. Prints one line: "ok", or what failed,
// or for "open-error" the error number of the open.
//
//   ipc_peer mem <handle hex> <size> <expect byte> <write byte> [flags]
//   ipc_peer open-error <handle hex>
//   ipc_peer twice <handle hex>                      (open, open, close, close)
//   ipc_peer event <event hex> <handle hex> <size> <expect byte>
//   ipc_peer vmm <pid> <fd> <size> <expect byte> <write byte>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

template <typename H>
H from_hex(const char* s) {
  H h;
  auto* b = reinterpret_cast<unsigned char*>(&h);
  for (size_t i = 0; i < sizeof(H); ++i) {
    unsigned v = 0;
    std::sscanf(s + 2 * i, "%2x", &v);
    b[i] = static_cast<unsigned char>(v);
  }
  return h;
}

int fail(const char* what, int code) {
  std::printf("%s failed: %d\n", what, code);
  return 1;
}

bool all_are(const std::vector<unsigned char>& v, int byte) {
  for (unsigned char c : v)
    if (c != byte) return false;
  return true;
}

int mem(const char* hex, size_t size, int expect, int write, unsigned flags) {
  void* p = nullptr;
  if (cudaError_t e = cudaIpcOpenMemHandle(&p, from_hex<cudaIpcMemHandle_t>(hex), flags)) return fail("open", e);
  std::vector<unsigned char> host(size);
  if (cudaError_t e = cudaMemcpy(host.data(), p, size, cudaMemcpyDeviceToHost)) return fail("copy", e);
  if (!all_are(host, expect)) return fail("bytes", host[0]);
  cudaPointerAttributes a{};
  if (cudaError_t e = cudaPointerGetAttributes(&a, p)) return fail("attributes", e);
  if (a.type != cudaMemoryTypeDevice || a.devicePointer != p) return fail("attributes type", a.type);
  CUdeviceptr base = 0;
  size_t range = 0;
  if (CUresult r = cuMemGetAddressRange(&base, &range, reinterpret_cast<CUdeviceptr>(p) + size / 2))
    return fail("cuMemGetAddressRange", r);
  if (base != reinterpret_cast<CUdeviceptr>(p) || range != size) return fail("address range", static_cast<int>(range));
  if (cudaError_t e = cudaFree(p); e != cudaErrorInvalidValue) return fail("cudaFree of imported memory", e);
  if (cudaError_t e = cudaMemset(p, write, size)) return fail("memset", e);
  if (cudaError_t e = cudaDeviceSynchronize()) return fail("sync", e);
  if (cudaError_t e = cudaIpcCloseMemHandle(p)) return fail("close", e);
  if (cudaError_t e = cudaIpcCloseMemHandle(p); e != cudaErrorInvalidValue) return fail("second close", e);
  std::printf("ok\n");
  return 0;
}

int twice(const char* hex) {
  void *a = nullptr, *b = nullptr;
  auto h = from_hex<cudaIpcMemHandle_t>(hex);
  if (cudaError_t e = cudaIpcOpenMemHandle(&a, h, cudaIpcMemLazyEnablePeerAccess)) return fail("open", e);
  if (cudaError_t e = cudaIpcOpenMemHandle(&b, h, cudaIpcMemLazyEnablePeerAccess)) return fail("open again", e);
  if (a != b) return fail("same pointer", 0);
  if (cudaError_t e = cudaIpcCloseMemHandle(a)) return fail("close", e);
  unsigned char c = 0;
  if (cudaError_t e = cudaMemcpy(&c, a, 1, cudaMemcpyDeviceToHost)) return fail("copy after one close", e);
  if (cudaError_t e = cudaIpcCloseMemHandle(a)) return fail("close again", e);
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, a) == cudaSuccess && attr.type == cudaMemoryTypeDevice)
    return fail("still device memory after the last close", attr.type);
  std::printf("ok\n");
  return 0;
}

int event(const char* ev_hex, const char* mem_hex, size_t size, int expect) {
  cudaEvent_t ev;
  if (cudaError_t e = cudaIpcOpenEventHandle(&ev, from_hex<cudaIpcEventHandle_t>(ev_hex))) return fail("open event", e);
  cudaError_t first = cudaEventQuery(ev);
  void* p = nullptr;
  if (cudaError_t e = cudaIpcOpenMemHandle(&p, from_hex<cudaIpcMemHandle_t>(mem_hex), 0)) return fail("open", e);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (cudaError_t e = cudaStreamWaitEvent(s, ev, 0)) return fail("wait", e);
  std::vector<unsigned char> host(size);
  if (cudaError_t e = cudaMemcpyAsync(host.data(), p, size, cudaMemcpyDeviceToHost, s)) return fail("copy", e);
  cudaStreamSynchronize(s);
  if (!all_are(host, expect)) return fail("bytes after the wait", host[0]);
  if (cudaError_t e = cudaEventQuery(ev)) return fail("query after", e);
  cudaIpcCloseMemHandle(p);
  cudaEventDestroy(ev);
  cudaStreamDestroy(s);
  std::printf("ok %s\n", first == cudaErrorNotReady ? "not-ready-at-first" : "ready-at-first");
  return 0;
}

int vmm(int pid, int fd, size_t size, int expect, int write) {
  cuInit(0);
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return fail("pidfd_open", errno);
  int mine = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0));
  close(pidfd);
  if (mine < 0) return fail("pidfd_getfd", errno);
  CUmemGenericAllocationHandle h;
  if (CUresult r = cuMemImportFromShareableHandle(&h, reinterpret_cast<void*>(static_cast<intptr_t>(mine)),
                                                  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    return fail("import", r);
  close(mine);
  CUdeviceptr va = 0;
  if (CUresult r = cuMemAddressReserve(&va, size, 0, 0, 0)) return fail("reserve", r);
  if (CUresult r = cuMemMap(va, size, 0, h, 0)) return fail("map", r);
  CUmemAccessDesc d{};
  d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  d.location.id = 0;
  d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (CUresult r = cuMemSetAccess(va, size, &d, 1)) return fail("access", r);
  std::vector<unsigned char> host(size);
  void* p = reinterpret_cast<void*>(va);
  if (cudaError_t e = cudaMemcpy(host.data(), p, size, cudaMemcpyDeviceToHost)) return fail("copy", e);
  if (!all_are(host, expect)) return fail("bytes", host[0]);
  if (cudaError_t e = cudaMemset(p, write, size)) return fail("memset", e);
  cudaDeviceSynchronize();
  cuMemUnmap(va, size);
  cuMemRelease(h);
  cuMemAddressFree(va, size);
  std::printf("ok\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  std::string mode = argv[1];
  if (mode == "mem" && argc >= 6)
    return mem(argv[2], std::strtoull(argv[3], nullptr, 0), std::atoi(argv[4]), std::atoi(argv[5]),
               argc > 6 ? static_cast<unsigned>(std::atoi(argv[6])) : 0);
  if (mode == "open-error") {
    void* p = nullptr;
    std::printf("%d\n", static_cast<int>(cudaIpcOpenMemHandle(&p, from_hex<cudaIpcMemHandle_t>(argv[2]), 0)));
    return 0;
  }
  if (mode == "twice") return twice(argv[2]);
  if (mode == "event" && argc >= 6)
    return event(argv[2], argv[3], std::strtoull(argv[4], nullptr, 0), std::atoi(argv[5]));
  if (mode == "vmm" && argc >= 7)
    return vmm(std::atoi(argv[2]), std::atoi(argv[3]), std::strtoull(argv[4], nullptr, 0), std::atoi(argv[5]),
               std::atoi(argv[6]));
  return 2;
}

// "An application built against CUDA 12": linked against libcudart.so.12
// (the simulated one, tests/simcuda: version node libcudart.so.12), calling
// the entry points whose parameters CUDA 12.9 declares otherwise than 13
// with CUDA 12's parameters (cuda12_test.py runs it).
//
//   cuda12_app run           allocations, copies, cudaMemcpyBatchAsync with
//                            failIdx (made, refused at copy 1, at copy 0,
//                            empty; _ptsz), a capture queried through the
//                            three-argument cudaStreamGetCaptureInfo and
//                            _v2, cudaPointerGetAttributes into CUDA 12's
//                            struct: one line per step, with no address in
//                            it, so that a run under gpuslack prints the
//                            same lines as a native one.
//   cuda12_app capi <so>     gpuslack's C API (dlopen'd RTLD_LOCAL, no
//                            hooks) under a capture, as in
//                            vmm_capi_test.cc's CaptureWithoutHooks: its
//                            capture check must find the graph through
//                            CUDA 12's cudaStreamGetCaptureInfo_v2, or the
//                            graph's blocks are never given back.
//
// The types are CUDA 13's (the same in 12.9 for what this uses); the calls
// that differ are declared here as the CUDA 12.9 cuda_runtime_api.h declares
// them, under the names libcudart.so.12 exports (asm labels: the CUDA 13
// header declares the same names with other parameters).
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "gpuslack/gpuslack.h"

extern "C" {
cudaError_t cuda12_memcpy_batch_async(void** dsts, void** srcs, size_t* sizes, size_t count,
                                      cudaMemcpyAttributes* attrs, size_t* attrs_idxs, size_t num_attrs,
                                      size_t* fail_idx, cudaStream_t stream) __asm__("cudaMemcpyBatchAsync");
cudaError_t cuda12_memcpy_batch_async_ptsz(void** dsts, void** srcs, size_t* sizes, size_t count,
                                           cudaMemcpyAttributes* attrs, size_t* attrs_idxs, size_t num_attrs,
                                           size_t* fail_idx, cudaStream_t stream) __asm__("cudaMemcpyBatchAsync_ptsz");
cudaError_t cuda12_stream_get_capture_info(cudaStream_t stream, cudaStreamCaptureStatus* status,
                                           unsigned long long* id) __asm__("cudaStreamGetCaptureInfo");
cudaError_t cuda12_stream_get_capture_info_v2(cudaStream_t stream, cudaStreamCaptureStatus* status,
                                              unsigned long long* id, cudaGraph_t* graph,
                                              const cudaGraphNode_t** deps, size_t* n_deps)
    __asm__("cudaStreamGetCaptureInfo_v2");
// CUDA 12's cudaPointerAttributes: CUDA 13 appended reserved words.
struct Cuda12PointerAttributes {
  cudaMemoryType type;
  int device;
  void* devicePointer;
  void* hostPointer;
};
cudaError_t cuda12_pointer_get_attributes(Cuda12PointerAttributes* attributes, const void* ptr)
    __asm__("cudaPointerGetAttributes");
}

namespace {

constexpr size_t kBytes = 1 << 16;
constexpr size_t kUntouched = 77;  // failIdx before a call

// One step's line: the call's result, the thread's last error after it.
void step(const char* what, cudaError_t rc) {
  std::printf("%s: rc %d last %d\n", what, static_cast<int>(rc), static_cast<int>(cudaGetLastError()));
}
// (Called after the call returned: an argument list has no order.)
void batch_step(const char* what, cudaError_t rc, size_t fail_idx) {
  std::printf("%s: rc %d failIdx %s%zu last %d\n", what, static_cast<int>(rc),
              fail_idx == SIZE_MAX ? "SIZE_MAX " : "", fail_idx == SIZE_MAX ? 0 : fail_idx,
              static_cast<int>(cudaGetLastError()));
}
unsigned sum(const void* p, size_t n) {
  unsigned s = 0;
  for (size_t i = 0; i < n; ++i) s = s * 31 + static_cast<const unsigned char*>(p)[i];
  return s;
}

int run() {
  int version = 0;
  step("cudaRuntimeGetVersion", cudaRuntimeGetVersion(&version));
  std::printf("runtime %d\n", version);
  void *a = nullptr, *b = nullptr, *host = nullptr, *back = nullptr;
  step("cudaMalloc a", cudaMalloc(&a, kBytes));
  step("cudaMalloc b", cudaMalloc(&b, kBytes));
  step("cudaMallocHost", cudaMallocHost(&host, kBytes));
  step("cudaMallocHost back", cudaMallocHost(&back, kBytes));
  if (!a || !b || !host || !back) return 1;
  for (size_t i = 0; i < kBytes; ++i) static_cast<unsigned char*>(host)[i] = static_cast<unsigned char>(i * 7 + 3);
  step("cudaMemcpy H2D", cudaMemcpy(a, host, kBytes, cudaMemcpyHostToDevice));

  cudaStream_t s = nullptr;
  step("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // Made: a -> b whole, a's second half -> back's first half.
  {
    void* dsts[2] = {b, back};
    void* srcs[2] = {a, static_cast<char*>(a) + kBytes / 2};
    size_t sizes[2] = {kBytes, kBytes / 2};
    size_t fail = kUntouched;
    cudaError_t rc = cuda12_memcpy_batch_async(dsts, srcs, sizes, 2, nullptr, nullptr, 0, &fail, s);
    batch_step("batch made", rc, fail);
    step("cudaStreamSynchronize", cudaStreamSynchronize(s));
    std::printf("back %08x\n", sum(back, kBytes / 2));
  }
  // Refused at copy 1 (past the end of b): copy 0 is made first.
  {
    std::memset(back, 0, kBytes);
    void* dsts[2] = {back, b};
    void* srcs[2] = {b, a};
    size_t sizes[2] = {kBytes / 4, kBytes * 2};
    size_t fail = kUntouched;
    cudaError_t rc = cuda12_memcpy_batch_async(dsts, srcs, sizes, 2, nullptr, nullptr, 0, &fail, s);
    batch_step("batch refused at 1", rc, fail);
    step("cudaStreamSynchronize", cudaStreamSynchronize(s));
    std::printf("back %08x\n", sum(back, kBytes / 4));
  }
  // Refused at copy 0.
  {
    void* dsts[1] = {b};
    void* srcs[1] = {a};
    size_t sizes[1] = {kBytes + 512};
    size_t fail = kUntouched;
    cudaError_t rc = cuda12_memcpy_batch_async(dsts, srcs, sizes, 1, nullptr, nullptr, 0, &fail, s);
    batch_step("batch refused at 0", rc, fail);
  }
  // Empty: refused, naming no copy.
  {
    void* dsts[1] = {b};
    void* srcs[1] = {a};
    size_t sizes[1] = {kBytes};
    size_t fail = kUntouched;
    cudaError_t rc = cuda12_memcpy_batch_async(dsts, srcs, sizes, 0, nullptr, nullptr, 0, &fail, s);
    batch_step("batch empty", rc, fail);
  }
  // The per-thread default stream, NULL through _ptsz.
  {
    std::memset(back, 0, kBytes);
    void* dsts[1] = {back};
    void* srcs[1] = {b};
    size_t sizes[1] = {kBytes};
    size_t fail = kUntouched;
    cudaError_t rc = cuda12_memcpy_batch_async_ptsz(dsts, srcs, sizes, 1, nullptr, nullptr, 0, &fail, nullptr);
    batch_step("batch ptsz", rc, fail);
    step("cudaStreamSynchronize per-thread", cudaStreamSynchronize(cudaStreamPerThread));
    std::printf("back %08x host %08x\n", sum(back, kBytes), sum(host, kBytes));
  }

  // A capture, queried as CUDA 12 programs query it.
  step("cudaStreamBeginCapture", cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  step("cudaStreamGetCaptureInfo", cuda12_stream_get_capture_info(s, &status, &id));
  std::printf("capture status %d id %s\n", static_cast<int>(status), id ? "set" : "0");
  cudaGraph_t seen = nullptr;
  unsigned long long id2 = 0;
  const cudaGraphNode_t* deps = nullptr;
  size_t n_deps = 99;
  step("cudaStreamGetCaptureInfo_v2", cuda12_stream_get_capture_info_v2(s, &status, &id2, &seen, &deps, &n_deps));
  std::printf("capture status %d same id %d graph %s\n", static_cast<int>(status), id == id2,
              seen ? "set" : "null");
  step("cudaMemsetAsync in capture", cudaMemsetAsync(b, 0x5a, kBytes, s));
  cudaGraph_t graph = nullptr;
  step("cudaStreamEndCapture", cudaStreamEndCapture(s, &graph));
  std::printf("same graph %d\n", graph != nullptr && graph == seen);
  cudaGraphExec_t exec = nullptr;
  step("cudaGraphInstantiate", cudaGraphInstantiate(&exec, graph, 0));
  step("cudaGraphLaunch", cudaGraphLaunch(exec, s));
  step("cudaStreamSynchronize", cudaStreamSynchronize(s));
  step("cudaMemcpy D2H", cudaMemcpy(back, b, kBytes, cudaMemcpyDeviceToHost));
  std::printf("back %08x\n", sum(back, kBytes));
  step("cudaGraphExecDestroy", cudaGraphExecDestroy(exec));
  step("cudaGraphDestroy", cudaGraphDestroy(graph));

  // CUDA 12's struct is written, nothing past it.
  struct {
    Cuda12PointerAttributes attributes;
    unsigned char after[64];
  } out;
  std::memset(&out, 0xcd, sizeof(out));
  step("cudaPointerGetAttributes", cuda12_pointer_get_attributes(&out.attributes, b));
  bool intact = true;
  for (unsigned char c : out.after) intact = intact && c == 0xcd;
  std::printf("pointer type %d device %d past the struct %s\n", static_cast<int>(out.attributes.type),
              out.attributes.device, intact ? "intact" : "WRITTEN");

  step("cudaStreamDestroy", cudaStreamDestroy(s));
  step("cudaFree a", cudaFree(a));
  step("cudaFree b", cudaFree(b));
  step("cudaFreeHost", cudaFreeHost(host));
  step("cudaFreeHost back", cudaFreeHost(back));
  step("cudaDeviceSynchronize", cudaDeviceSynchronize());
  return 0;
}

#define CHECK(cond)                                             \
  do {                                                          \
    if (!(cond)) {                                              \
      std::printf("capi: FAILED at line %d: %s\n", __LINE__, #cond); \
      return 1;                                                 \
    }                                                           \
  } while (0)

// vmm_capi_test.cc's CaptureWithoutHooks, shortened, on a CUDA 12 runtime.
int capi(const char* so) {
  setenv("GPUSLACK_CONF", "allocator:vmm,map_chunk_mb:2,text_summary:off,json_summary:false", 1);
  void* h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  CHECK(h != nullptr);
  auto device_alloc = reinterpret_cast<void* (*)(ssize_t, int, CUstream_st*)>(dlsym(h, "gpuslack_device_alloc"));
  auto device_free = reinterpret_cast<void (*)(void*, size_t, int, CUstream_st*)>(dlsym(h, "gpuslack_device_free"));
  auto stats = reinterpret_cast<int (*)(int, gpuslack_device_stats*)>(dlsym(h, "gpuslack_device_stats_get"));
  auto trim = reinterpret_cast<unsigned long long (*)(int)>(dlsym(h, "gpuslack_trim"));
  CHECK(device_alloc && device_free && stats && trim);
  cudaStream_t s = nullptr;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  auto* cs = reinterpret_cast<CUstream_st*>(s);
  const size_t n = 1 << 20;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
  void* tmp = device_alloc(n, 0, cs);
  void* big = device_alloc(64 << 20, 0, cs);  // maps during the capture
  CHECK(tmp != nullptr && big != nullptr);
  CHECK(cudaMemsetAsync(big, 1, 64 << 20, s) == cudaSuccess);
  device_free(tmp, n, 0, cs);
  device_free(big, 64 << 20, 0, cs);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  CHECK(cudaStreamIsCapturing(s, &status) == cudaSuccess);
  CHECK(status == cudaStreamCaptureStatusActive);  // not invalidated
  cudaGraph_t graph = nullptr;
  CHECK(cudaStreamEndCapture(s, &graph) == cudaSuccess);
  gpuslack_device_stats st{};
  CHECK(stats(0, &st) == 0);
  CHECK(st.pending_free >= 2);  // the graph's while it lives
  // The graph gone, the user object gpuslack attached to it (it knew the
  // graph: cudaStreamGetCaptureInfo_v2) gives its blocks back.
  CHECK(cudaGraphDestroy(graph) == cudaSuccess);
  CHECK(trim(-1) >= (64ull << 20));
  CHECK(stats(0, &st) == 0);
  CHECK(st.pending_free == 0);
  CHECK(cudaStreamDestroy(s) == cudaSuccess);
  std::printf("capi: ok\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "run") == 0) return run();
  if (argc >= 3 && std::strcmp(argv[1], "capi") == 0) return capi(argv[2]);
  std::fprintf(stderr, "usage: cuda12_app run | capi <libgpuslack.so>\n");
  return 2;
}

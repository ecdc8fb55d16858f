// The hooks, in process: every hooked call returns exactly what the runtime
// returns, leaves the same last error and the same bytes in memory, for
// valid and invalid arguments (ranges past the end, freed and interior
// pointers, NULL); eight threads calling hooks at once lose no count (the
// TSan build runs this too).
//
// The test links the simulated runtime and dlopen()s libgpuslack.so: each
// hooked symbol is then reachable twice, as the runtime's own function and
// as gpuslack's hook (which finds the runtime through the loaded-library
// scan), and the same scenario runs through both.
//
// One binary, one ctest per configuration (CMakeLists.txt): the process
// reads GPUSLACK_TEST_CONF (e.g. "allocator:vmm,async_d2h:true") and loads
// gpuslack with it, so the same comparisons run with the native and the
// VMM allocator, staging on and off, and async_d2h.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gpusim.h"
#include "hook_table.h"
#include "in_process.h"
#include "launch_hook_table.h"

namespace {

using gpuslack::CallInfo;  // named by the table's info column

// Every hooked function, as a pointer.
struct Api {
#define GPUSLACK_API_MEMBER(sym, ret, params, args, cat, bytes, info) ret(*sym) params = nullptr;
  GPUSLACK_RUNTIME_HOOKS(GPUSLACK_API_MEMBER)
#undef GPUSLACK_API_MEMBER
};

// This process's configuration: quiet (the summary is read through the C
// API), plus GPUSLACK_TEST_CONF.
const std::string& conf() {
  static const std::string c = [] {
    const char* extra = std::getenv("GPUSLACK_TEST_CONF");
    return std::string("text_summary:off,json_summary:false") + (extra && *extra ? "," : "") + (extra ? extra : "");
  }();
  return c;
}
bool vmm_mode() { return conf().find("allocator:vmm") != std::string::npos; }

void* gpuslack_handle() { return in_process::gpuslack(conf().c_str()); }

Api load(void* handle) {
  Api a;
#define GPUSLACK_API_LOAD(sym, ret, params, args, cat, bytes, info) \
  a.sym = reinterpret_cast<decltype(a.sym)>(dlsym(handle, #sym));
  GPUSLACK_RUNTIME_HOOKS(GPUSLACK_API_LOAD)
#undef GPUSLACK_API_LOAD
  return a;
}

const Api& runtime() {
  static Api a = load(dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD));
  return a;
}
const Api& hooks() {
  static Api a = load(gpuslack_handle());
  return a;
}

std::string summary_json() { return in_process::summary_json(gpuslack_handle()); }

TEST(Hooks, EverySymbolIsHookedAndDistinctFromTheRuntime) {
  ASSERT_NE(nullptr, gpuslack_handle()) << dlerror();
  int n = 0;
#define GPUSLACK_CHECK_SYM(sym, ret, params, args, cat, bytes, info)              \
  EXPECT_NE(nullptr, reinterpret_cast<void*>(runtime().sym)) << #sym;             \
  EXPECT_NE(nullptr, reinterpret_cast<void*>(hooks().sym)) << #sym;               \
  EXPECT_NE(reinterpret_cast<void*>(runtime().sym), reinterpret_cast<void*>(hooks().sym)) << #sym; \
  ++n;
  GPUSLACK_RUNTIME_HOOKS(GPUSLACK_CHECK_SYM)
#undef GPUSLACK_CHECK_SYM
  EXPECT_EQ(63, n);
}

// One scenario: calls through `a`, returns every result, the last error it
// left (read, so reset, after each call) and observable side effects as
// numbers, in order.
std::vector<long> scenario(const Api& a) {
  std::vector<long> r;
  auto rc = [&](cudaError_t e) {
    r.push_back(static_cast<long>(e));
    r.push_back(static_cast<long>(cudaGetLastError()));
  };
  // Streams of this scenario do not all order with each other (the
  // per-thread stream, a non-blocking one): each copy is waited for, so
  // that no two touch the same memory at once, and results are the same
  // on every run.
  auto rcs = [&](cudaError_t e) {
    rc(e);
    cudaDeviceSynchronize();
  };
  const size_t kN = 1 << 16;
  std::vector<char> pageable(kN, 7), back(kN, 0);
  cudaStream_t s = nullptr, s2 = nullptr, s3 = nullptr;
  rc(a.cudaStreamCreate(&s));
  rc(a.cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  rc(a.cudaStreamCreateWithPriority(&s3, 0, -1));
  rc(a.cudaStreamCreateWithFlags(&s3, 0xdead));  // invalid flags
  rc(a.cudaStreamCreate(nullptr));

  // Allocation, valid and invalid.
  void *d = nullptr, *d2 = nullptr, *h = nullptr, *h2 = nullptr, *m = nullptr, *pa = nullptr;
  rc(a.cudaMalloc(&d, kN));
  rc(a.cudaMalloc(&d2, kN));
  rc(a.cudaMalloc(nullptr, 16));
  void* huge = reinterpret_cast<void*>(1);
  rc(a.cudaMalloc(&huge, size_t{1} << 50));
  r.push_back(huge == nullptr);
  rc(a.cudaMallocHost(&h, kN));
  rc(a.cudaHostAlloc(&h2, kN, cudaHostAllocMapped));
  rc(a.cudaMallocManaged(&m, kN, cudaMemAttachGlobal));
  rc(a.cudaMallocAsync(&pa, kN, s));
  rc(a.cudaMallocAsync_ptsz(nullptr, kN, s));
  rc(a.cudaMallocAsync(&pa, kN, reinterpret_cast<cudaStream_t>(0x1234)));
  cudaMemPool_t pool;
  cudaDeviceGetDefaultMemPool(&pool, 0);
  void* pp = nullptr;
  rc(a.cudaMallocFromPoolAsync(&pp, kN, pool, s));
  rc(a.cudaMallocFromPoolAsync_ptsz(&pp, kN, reinterpret_cast<cudaMemPool_t>(0x99), s));
  size_t pitch = 0;
  void* pitched = nullptr;
  rc(a.cudaMallocPitch(&pitched, &pitch, 100, 10));
  r.push_back(static_cast<long>(pitch));
  cudaPitchedPtr p3d{};
  cudaExtent ext{64, 4, 2};
  rc(a.cudaMalloc3D(&p3d, ext));
  r.push_back(static_cast<long>(p3d.pitch));
  rc(a.cudaHostRegister(pageable.data(), kN, cudaHostRegisterDefault));
  rc(a.cudaHostRegister(pageable.data(), kN, cudaHostRegisterDefault));  // twice
  rc(a.cudaHostUnregister(pageable.data()));
  rc(a.cudaHostUnregister(pageable.data()));  // not registered
  cudaIpcMemHandle_t ipc;
  // A VMM block has a handle of gpuslack's (alloc/block_ipc.h); inside one,
  // none, as inside a cudaMalloc allocation (IpcRefusalsSetTheLastError).
  rc(a.cudaIpcGetMemHandle(&ipc, d));
  rc(a.cudaIpcGetMemHandle(&ipc, pageable.data()));  // not device memory
  size_t free_b = 0, total = 0;
  rc(a.cudaMemGetInfo(&free_b, &total));
  r.push_back(static_cast<long>(total));

  // Copies and memsets, valid and invalid.
  rcs(a.cudaMemcpy(d, pageable.data(), kN, cudaMemcpyHostToDevice));
  rcs(a.cudaMemcpy_ptds(d2, d, kN, cudaMemcpyDeviceToDevice));
  rcs(a.cudaMemcpy(d, pageable.data(), 2 * kN, cudaMemcpyHostToDevice));  // past the end
  rcs(a.cudaMemcpyAsync(h, d2, kN, cudaMemcpyDeviceToHost, s));
  rcs(a.cudaMemcpyAsync_ptsz(d, h, kN, cudaMemcpyDefault, nullptr));
  rcs(a.cudaMemcpyAsync(d, h, kN, cudaMemcpyHostToDevice, reinterpret_cast<cudaStream_t>(0x1234)));
  rcs(a.cudaMemcpy2D(d, 256, pageable.data(), 256, 128, 8, cudaMemcpyHostToDevice));
  rcs(a.cudaMemcpy2D_ptds(d, 64, pageable.data(), 256, 128, 8, cudaMemcpyHostToDevice));  // width > pitch
  rcs(a.cudaMemcpy2DAsync(h, 256, d, 256, 256, 8, cudaMemcpyDeviceToHost, s));
  rcs(a.cudaMemcpy2DAsync_ptsz(h, 256, d, 256, 256, 8, cudaMemcpyDeviceToHost, s2));
  rcs(a.cudaMemcpyPeer(d2, 0, d, 0, kN));
  rcs(a.cudaMemcpyPeer(d2, 5, d, 0, kN));  // no device 5
  rcs(a.cudaMemcpyPeerAsync(d2, 0, d, 0, kN, s));
  void* dsts[] = {d2};
  const void* srcs[] = {h};
  size_t sizes[] = {kN};
  rcs(a.cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, nullptr, nullptr, 0, s, nullptr));
  rcs(a.cudaMemcpyBatchAsync_ptsz(dsts, srcs, sizes, 0, nullptr, nullptr, 0, s, nullptr));  // empty
  rcs(a.cudaMemset(d, 1, kN));
  rcs(a.cudaMemset_ptds(pageable.data(), 1, kN));  // pageable: invalid
  rcs(a.cudaMemsetAsync(d, 2, kN, s));
  rcs(a.cudaMemsetAsync_ptsz(d, 3, kN, nullptr));
  rcs(a.cudaMemset2D(d, 256, 4, 128, 8));
  rcs(a.cudaMemset2D_ptds(d, 64, 4, 128, 8));  // width > pitch
  rcs(a.cudaMemset2DAsync(d, 256, 5, 128, 8, s));
  rcs(a.cudaMemset2DAsync_ptsz(d, 256, 6, 128, 8, s2));

  // Synchronization.
  cudaEvent_t e;
  cudaEventCreate(&e);
  cudaEventRecord(e, s);
  rc(a.cudaEventSynchronize(e));
  rc(a.cudaEventSynchronize(nullptr));
  rc(a.cudaStreamSynchronize(s));
  rc(a.cudaStreamSynchronize_ptsz(nullptr));
  rc(a.cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(0x1234)));
  rc(a.cudaDeviceSynchronize());
  cudaEventDestroy(e);

  // Graph capture and peer access (the allocator follows both).
  cudaGraph_t graph = nullptr;
  rc(a.cudaStreamBeginCapture(s2, cudaStreamCaptureModeRelaxed));
  rc(a.cudaStreamBeginCapture(s2, cudaStreamCaptureModeRelaxed));  // already capturing
  rc(a.cudaStreamEndCapture(s2, &graph));
  r.push_back(graph != nullptr);
  if (graph) cudaGraphDestroy(graph);
  rc(a.cudaStreamEndCapture(s2, &graph));  // not capturing
  rc(a.cudaStreamBeginCapture_ptsz(nullptr, cudaStreamCaptureModeThreadLocal));
  rc(a.cudaStreamEndCapture_ptsz(nullptr, nullptr));  // no graph pointer
  rc(a.cudaStreamEndCapture_ptsz(nullptr, &graph));
  if (graph) cudaGraphDestroy(graph);
  rc(a.cudaDeviceEnablePeerAccess(0, 0));  // itself
  rc(a.cudaDeviceEnablePeerAccess(1, 7));  // bad flags

  // The data went where it should.
  rcs(a.cudaMemcpy(back.data(), d, kN, cudaMemcpyDeviceToHost));
  r.push_back(back[0]);
  r.push_back(back[200]);
  r.push_back(back[kN - 1]);

  // Frees, valid and invalid.
  rc(a.cudaFreeAsync(pa, s));
  rc(a.cudaFreeAsync_ptsz(pp, s));
  // Not stream-ordered memory; a VMM block takes either free (docs/allocator.md).
  if (!vmm_mode()) rc(a.cudaFreeAsync(d, s));
  rc(a.cudaFree(d));
  rc(a.cudaFree(d));  // twice
  rc(a.cudaFree(nullptr));
  rc(a.cudaFree(d2));
  rc(a.cudaFree(m));
  rc(a.cudaFree(pitched));
  rc(a.cudaFree(p3d.ptr));
  rc(a.cudaFreeHost(h));
  rc(a.cudaFreeHost(h2));
  rc(a.cudaFreeHost(pageable.data()));  // not pinned
  rc(a.cudaStreamDestroy(s));
  rc(a.cudaStreamDestroy(s2));
  rc(a.cudaStreamDestroy(s3));
  cudaGetLastError();  // both paths leave the same sticky error; reset it
  return r;
}

TEST(Hooks, ReturnExactlyWhatTheRuntimeReturns) {
  ASSERT_NE(nullptr, gpuslack_handle()) << dlerror();
  std::vector<long> direct = scenario(runtime());
  std::vector<long> hooked = scenario(hooks());
  ASSERT_EQ(direct.size(), hooked.size());
  for (size_t i = 0; i < direct.size(); ++i) EXPECT_EQ(direct[i], hooked[i]) << "result #" << i;
  // And the scenario did exercise failures.
  EXPECT_GE(std::count_if(direct.begin(), direct.end(), [](long v) { return v == cudaErrorInvalidValue; }), 5);
}

// A checksum of `n` bytes at `p` (FNV-1a): device memory is host memory on
// the simulated device.
long checksum(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull;
  return static_cast<long>(h);
}

// Ranges the runtime refuses, through `a`: past the end of an allocation
// (1D and 2D, every direction and kind, staged or not, sync and async),
// inside it and past its end, freed and interior pointers, NULL, and with
// an error already pending; a few valid ranges near the end. Returns every
// result with the last error after it, then the bytes of every buffer and
// of the allocations on both sides of the one overrun (a write past the
// end, a partial copy, a read of the neighbour all show).
std::vector<long> bounds_scenario(const Api& a) {
  std::vector<long> r;
  auto rc = [&](cudaError_t e) {
    r.push_back(static_cast<long>(e));
    r.push_back(static_cast<long>(cudaGetLastError()));
    cudaDeviceSynchronize();  // async_d2h: the data has landed
  };
  constexpr size_t kN = 1 << 20;  // past the end by 1 MiB: two staging chunks
  std::vector<char> src(4 * kN), back(4 * kN, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<char>(i * 7 + i / 4096);
  cudaStream_t s = nullptr;
  rc(a.cudaStreamCreate(&s));
  // v between two neighbours, whichever way the allocator lays them out;
  // big: room for what v's copies would carry.
  void *w1 = nullptr, *v = nullptr, *w2 = nullptr, *big = nullptr, *h = nullptr, *f = nullptr;
  rc(a.cudaMalloc(&w1, kN));
  rc(a.cudaMalloc(&v, kN));
  rc(a.cudaMalloc(&w2, kN));
  rc(a.cudaMalloc(&big, 4 * kN));
  rc(a.cudaMallocHost(&h, 4 * kN));
  auto* vc = static_cast<char*>(v);
  cudaMemset(w1, 0x11, kN);
  cudaMemset(v, 0x22, kN);
  cudaMemset(w2, 0x33, kN);
  cudaMemset(big, 0x44, 4 * kN);
  std::memset(h, 0x55, 4 * kN);
  cudaDeviceSynchronize();

  // Memsets.
  rc(a.cudaMemset(v, 1, kN + 1));  // one byte past the end
  rc(a.cudaMemset_ptds(vc + 512, 2, kN));
  rc(a.cudaMemsetAsync(v, 3, 2 * kN, s));
  rc(a.cudaMemsetAsync_ptsz(v, 3, 3 * kN, nullptr));
  rc(a.cudaMemset2D(v, 1024, 4, 1024, kN / 1024 + 1));  // one row too many
  rc(a.cudaMemset2D_ptds(v, 1024, 4, 2048, 4));          // width > pitch: the pitch is refused
  rc(a.cudaMemset2DAsync(v, 4096, 5, 1024, kN / 4096 + 1, s));  // the last row starts past the end
  rc(a.cudaMemset2DAsync_ptsz(v, 4096, 6, 1024, kN / 4096, nullptr));  // ends inside: valid
  rc(a.cudaMemset(vc + kN, 0, 0));   // nothing, at the end
  rc(a.cudaMemset2D(v, 4096, 0, 0, kN / 4096 + 8));  // no width, rows past the end
  rc(a.cudaMemset(vc + 1024, 7, kN - 1024));  // to the last byte

  // Host to device (pageable: staged), 1D and 2D, sync and async.
  rc(a.cudaMemcpy(v, src.data(), 2 * kN, cudaMemcpyHostToDevice));
  rc(a.cudaMemcpy_ptds(vc + kN / 2, src.data(), kN, cudaMemcpyDefault));
  rc(a.cudaMemcpyAsync(v, src.data(), kN + 512, cudaMemcpyHostToDevice, s));
  rc(a.cudaMemcpyAsync_ptsz(vc + 512, src.data(), kN, cudaMemcpyHostToDevice, nullptr));
  rc(a.cudaMemcpy2D(v, 2048, src.data(), 2048, 2048, kN / 2048 + 1, cudaMemcpyHostToDevice));
  rc(a.cudaMemcpy2DAsync(v, 4096, src.data(), 1024, 1024, kN / 4096 + 1, cudaMemcpyHostToDevice, s));
  rc(a.cudaMemcpy2D(v, 512, src.data(), 1024, 1024, 1, cudaMemcpyHostToDevice));  // one row, width > pitch
  rc(a.cudaMemcpy2DAsync(v, 4096, src.data(), 4096, 0, kN / 4096 + 8, cudaMemcpyHostToDevice, s));  // nothing
  rc(a.cudaMemcpy(vc + 512, src.data() + 3, kN - 512, cudaMemcpyHostToDevice));  // to the last byte

  // Device to host (pageable: staged), 1D and 2D, sync and async.
  rc(a.cudaMemcpyAsync(back.data(), v, 2 * kN, cudaMemcpyDeviceToHost, s));
  rc(a.cudaMemcpyAsync_ptsz(back.data(), v, 3 * kN, cudaMemcpyDefault, nullptr));
  rc(a.cudaMemcpy(back.data(), vc + 4096, kN, cudaMemcpyDeviceToHost));
  rc(a.cudaMemcpy_ptds(back.data(), v, kN + 1, cudaMemcpyDeviceToHost));
  rc(a.cudaMemcpy2DAsync(back.data(), 4096, v, 4096, 4096, kN / 4096 + 1, cudaMemcpyDeviceToHost, s));
  rc(a.cudaMemcpy2DAsync_ptsz(back.data(), 4096, v, 8192, 4096, kN / 8192 + 1, cudaMemcpyDeviceToHost, nullptr));
  rc(a.cudaMemcpy2D_ptds(back.data(), 1024, v, 1024, 1024, kN / 1024 + 1, cudaMemcpyDeviceToHost));
  rc(a.cudaMemcpyAsync(back.data() + 8, vc + 100, kN - 100, cudaMemcpyDeviceToHost, s));  // to the last byte

  // Pinned memory, device to device, peer, batch.
  rc(a.cudaMemcpyAsync(h, v, 2 * kN, cudaMemcpyDeviceToHost, s));
  rc(a.cudaMemcpy(v, h, kN + 4096, cudaMemcpyHostToDevice));
  rc(a.cudaMemcpy(big, v, kN + 512, cudaMemcpyDeviceToDevice));         // source past the end
  rc(a.cudaMemcpyAsync(vc + kN / 2, big, kN, cudaMemcpyDefault, s));     // destination past the end
  rc(a.cudaMemcpy2DAsync(big, 4096, v, 4096, 4096, kN / 4096 + 1, cudaMemcpyDeviceToDevice, s));
  rc(a.cudaMemcpyPeer(v, 0, big, 0, 2 * kN));
  rc(a.cudaMemcpyPeerAsync(big, 0, v, 0, kN + 1, s));
  rc(a.cudaMemcpyPeerAsync(big, 0, vc + 256, 0, kN - 256, s));  // valid
  void* dsts[] = {big, static_cast<char*>(big) + kN};
  const void* srcs[] = {vc + 8, v};
  size_t sizes[] = {kN - 8, 2 * kN};  // the second copy is past the end
  rc(a.cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, nullptr, nullptr, 0, s, nullptr));

  // NULL, freed and interior pointers.
  rc(a.cudaMemset(nullptr, 0, 16));
  rc(a.cudaMemsetAsync(nullptr, 0, 0, s));
  rc(a.cudaMemcpy(nullptr, src.data(), 16, cudaMemcpyHostToDevice));
  rc(a.cudaMemcpyAsync(back.data(), nullptr, 16, cudaMemcpyDeviceToHost, s));
  rc(a.cudaMalloc(&f, kN));
  rc(a.cudaFree(f));
  rc(a.cudaMemset(f, 0, 16));
  rc(a.cudaMemsetAsync(f, 0, kN, s));
  rc(a.cudaFree(f));
  rc(a.cudaFreeAsync(f, s));
  rc(a.cudaFree(vc + 512));
  rc(a.cudaFreeAsync(vc + 512, s));
  rc(a.cudaFreeHost(static_cast<char*>(h) + 4096));

  // With an error pending: a copy leaves it (and adds none), a refusal
  // replaces it.
  rc(a.cudaMalloc(nullptr, 16));
  a.cudaMalloc(nullptr, 16);
  r.push_back(static_cast<long>(a.cudaMemcpy(v, src.data(), 4096, cudaMemcpyHostToDevice)));
  r.push_back(static_cast<long>(cudaPeekAtLastError()));
  rc(a.cudaMemcpy2D(v, 2048, src.data(), 2048, 2048, kN / 2048 + 1, cudaMemcpyHostToDevice));

  // Every byte.
  cudaDeviceSynchronize();
  for (auto [p, n] : {std::pair<const void*, size_t>{w1, kN}, {v, kN}, {w2, kN}, {big, 4 * kN}, {h, 4 * kN},
                      {back.data(), back.size()}})
    r.push_back(checksum(p, n));

  rc(a.cudaFree(w1));
  rc(a.cudaFree(v));
  rc(a.cudaFree(w2));
  rc(a.cudaFree(big));
  rc(a.cudaFreeHost(h));
  rc(a.cudaStreamDestroy(s));
  return r;
}

TEST(Hooks, RangesPastTheEndAndBadPointersGetTheRuntimesAnswerWithNothingWritten) {
  ASSERT_NE(nullptr, gpuslack_handle()) << dlerror();
  std::vector<long> direct = bounds_scenario(runtime());
  std::vector<long> hooked = bounds_scenario(hooks());
  ASSERT_EQ(direct.size(), hooked.size());
  for (size_t i = 0; i < direct.size(); ++i) EXPECT_EQ(direct[i], hooked[i]) << "result #" << i;
  EXPECT_GE(std::count(direct.begin(), direct.end(), static_cast<long>(cudaErrorInvalidValue)), 60);
}

// An IPC handle of a pointer inside an allocation is refused, with the last
// error set, by the VMM allocator as by the runtime; of its start, given.
TEST(Hooks, IpcRefusalsSetTheLastError) {
  ASSERT_NE(nullptr, gpuslack_handle());
  cudaGetLastError();
  void* d = nullptr;
  ASSERT_EQ(cudaSuccess, hooks().cudaMalloc(&d, 4096));
  cudaIpcMemHandle_t ipc;
  cudaError_t e = hooks().cudaIpcGetMemHandle(&ipc, static_cast<char*>(d) + 256);
  EXPECT_EQ(cudaErrorInvalidValue, e);
  EXPECT_EQ(e, cudaGetLastError());
  EXPECT_EQ(cudaSuccess, hooks().cudaIpcGetMemHandle(&ipc, d));
  EXPECT_EQ(cudaSuccess, cudaGetLastError());
  EXPECT_EQ(cudaSuccess, hooks().cudaFree(d));
}

TEST(Hooks, LeaveTheRuntimesLastErrorAsTheRuntimeWould) {
  ASSERT_NE(nullptr, gpuslack_handle());
  cudaGetLastError();
  void* p = nullptr;
  EXPECT_EQ(cudaErrorMemoryAllocation, hooks().cudaMalloc(&p, size_t{1} << 50));
  EXPECT_EQ(cudaErrorMemoryAllocation, cudaGetLastError());
  // A successful copy (whose pointers the hook looks up) leaves it clear.
  std::vector<char> host(4096);
  void* d;
  ASSERT_EQ(cudaSuccess, cudaMalloc(&d, 4096));
  EXPECT_EQ(cudaSuccess, hooks().cudaMemcpy(d, host.data(), 4096, cudaMemcpyDefault));
  EXPECT_EQ(cudaSuccess, cudaPeekAtLastError());
  cudaFree(d);
}

// The count of `name` in the summary JSON, found textually.
long count_in_summary(const std::string& json, const std::string& name) {
  size_t at = json.find("\"name\": \"" + name + "\"");
  if (at == std::string::npos) return -1;
  size_t c = json.find("\"count\": ", at);
  return c == std::string::npos ? -1 : std::atol(json.c_str() + c + 9);
}

TEST(Hooks, EightThreadsAtOnceLoseNoCount) {
  ASSERT_NE(nullptr, gpuslack_handle());
  const Api& a = hooks();
  long before = count_in_summary(summary_json(), "cudaMemGetInfo");
  if (before < 0) before = 0;
  constexpr int kThreads = 8, kCalls = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      void* d = nullptr;
      EXPECT_EQ(cudaSuccess, a.cudaMalloc(&d, 4096));
      for (int i = 0; i < kCalls; ++i) {
        size_t f, tot;
        EXPECT_EQ(cudaSuccess, a.cudaMemGetInfo(&f, &tot));
        if (i % 100 == 0) {
          EXPECT_EQ(cudaSuccess, a.cudaMemsetAsync(d, i, 4096, cudaStreamPerThread));
          // Someone reads the summary while the others record.
          EXPECT_FALSE(summary_json().empty());
        }
      }
      EXPECT_EQ(cudaSuccess, a.cudaStreamSynchronize(cudaStreamPerThread));
      EXPECT_EQ(cudaSuccess, a.cudaFree(d));
    });
  for (auto& t : threads) t.join();
  std::string json = summary_json();
  EXPECT_EQ(before + kThreads * kCalls, count_in_summary(json, "cudaMemGetInfo")) << json;
}

// The counted hooks (launch_hook_table.h): each forwards every launch,
// valid or not, with the runtime's result and last error, counts each call
// (gpuslack_launch_count), and is not a row of the ledger's call table.
struct Launches {
#define GPUSLACK_LAUNCH_MEMBER(sym, ret, params, args) ret(*sym) params = nullptr;
  GPUSLACK_COUNTED_HOOKS(GPUSLACK_LAUNCH_MEMBER)
#undef GPUSLACK_LAUNCH_MEMBER
};
Launches launches_of(void* handle) {
  Launches l;
#define GPUSLACK_LAUNCH_LOAD(sym, ret, params, args) l.sym = reinterpret_cast<decltype(l.sym)>(dlsym(handle, #sym));
  GPUSLACK_COUNTED_HOOKS(GPUSLACK_LAUNCH_LOAD)
#undef GPUSLACK_LAUNCH_LOAD
  return l;
}

void a_kernel() {}  // the simulated runtime launches any host function's address

// Every launch entry point through `l`, valid and invalid; results and last
// errors in order. Returns how many calls it made in *calls.
std::vector<long> launch_scenario(const Launches& l, int* calls) {
  std::vector<long> r;
  *calls = 0;
  auto rc = [&](cudaError_t e) {
    r.push_back(static_cast<long>(e));
    r.push_back(static_cast<long>(cudaGetLastError()));
    ++*calls;
  };
  const void* k = reinterpret_cast<const void*>(&a_kernel);
  for (const void* f : {k, static_cast<const void*>(nullptr)}) {
    rc(l.cudaLaunchKernel(f, dim3(2), dim3(32), nullptr, 0, nullptr));
    rc(l.cudaLaunchKernel_ptsz(f, dim3(2), dim3(32), nullptr, 0, nullptr));
    rc(l.cudaLaunchCooperativeKernel(f, dim3(1), dim3(32), nullptr, 0, nullptr));
    rc(l.cudaLaunchCooperativeKernel_ptsz(f, dim3(1), dim3(32), nullptr, 0, nullptr));
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(3);
    config.blockDim = dim3(64);
    rc(l.cudaLaunchKernelExC(&config, f, nullptr));
    rc(l.cudaLaunchKernelExC_ptsz(&config, f, nullptr));
    rc(l.cudaLaunchKernelExC(nullptr, f, nullptr));
  }
  rc(l.cudaLaunchKernel(k, dim3(0), dim3(32), nullptr, 0, nullptr));  // empty grid
  r.push_back(static_cast<long>(cudaDeviceSynchronize()));
  return r;
}

TEST(Hooks, LaunchesAreForwardedUnchangedAndCounted) {
  ASSERT_NE(nullptr, gpuslack_handle());
  const Launches runtime_launches = launches_of(dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD));
  const Launches hooked = launches_of(gpuslack_handle());
#define GPUSLACK_CHECK_LAUNCH(sym, ...)                                                                      \
  ASSERT_NE(nullptr, reinterpret_cast<void*>(runtime_launches.sym)) << #sym;                                \
  ASSERT_NE(nullptr, reinterpret_cast<void*>(hooked.sym)) << #sym;                                          \
  EXPECT_NE(reinterpret_cast<void*>(runtime_launches.sym), reinterpret_cast<void*>(hooked.sym)) << #sym;
  GPUSLACK_COUNTED_HOOKS(GPUSLACK_CHECK_LAUNCH)
#undef GPUSLACK_CHECK_LAUNCH
  auto count = reinterpret_cast<unsigned long long (*)()>(dlsym(gpuslack_handle(), "gpuslack_launch_count"));
  ASSERT_NE(nullptr, count);
  const unsigned long long before = count();
  int direct_calls = 0, hooked_calls = 0;
  std::vector<long> direct = launch_scenario(runtime_launches, &direct_calls);
  EXPECT_EQ(before, count()) << "the runtime's own functions count nothing";
  std::vector<long> through = launch_scenario(hooked, &hooked_calls);
  EXPECT_EQ(direct, through);
  EXPECT_EQ(before + static_cast<unsigned long long>(hooked_calls), count());
  // From eight threads at once, none lost.
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 500; ++i)
        EXPECT_EQ(cudaSuccess, hooked.cudaLaunchKernel(reinterpret_cast<const void*>(&a_kernel), dim3(1), dim3(1),
                                                       nullptr, 0, cudaStreamPerThread));
      EXPECT_EQ(cudaSuccess, cudaStreamSynchronize(cudaStreamPerThread));
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(before + static_cast<unsigned long long>(hooked_calls) + 8 * 500, count());
  // Not rows of the ledger's call table.
  EXPECT_EQ(std::string::npos, summary_json().find("cudaLaunchKernel")) << summary_json();
}

// Pageable copies through the hooks, staged (stage_copies is on by
// default): eight threads on four streams, random sizes, each thread's bytes
// round-tripped host -> device -> host through cudaMemcpyAsync and
// cudaMemcpy, with device->host copies into pinned memory and host
// functions in between (what a staged copy must wait for).
TEST(Hooks, StagedCopiesFromEightThreadsOnFourStreamsKeepEveryByte) {
  ASSERT_NE(nullptr, gpuslack_handle());
  const Api& a = hooks();
  cudaStream_t streams[4];
  for (cudaStream_t& s : streams) ASSERT_EQ(cudaSuccess, a.cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      uint64_t x = 0x9E3779B97F4A7C15ull * (t + 1);
      auto next = [&x] { return x = x * 6364136223846793005ull + 1442695040888963407ull; };
      void* d = nullptr;
      void* pinned = nullptr;
      const size_t max = 3 << 20;
      if (a.cudaMalloc(&d, max + 64) != cudaSuccess || a.cudaMallocHost(&pinned, max) != cudaSuccess) {
        ++bad;
        return;
      }
      for (int i = 0; i < 12; ++i) {
        // cudaMemcpy goes on the legacy stream, which the non-blocking
        // streams do not order with: that iteration stays on it.
        const bool sync_api = i % 3 == 0;
        cudaStream_t s = sync_api ? nullptr : streams[(t + i) % 4];
        size_t n = 1 + next() % (i % 4 == 0 ? max : 70000), off = next() % 16;
        std::vector<char> in(n), out(n, 0);
        for (char& c : in) c = static_cast<char>(next() >> 56);
        const std::vector<char> expected = in;
        cudaError_t r = sync_api ? a.cudaMemcpy(static_cast<char*>(d) + off, in.data(), n, cudaMemcpyHostToDevice)
                                 : a.cudaMemcpyAsync(static_cast<char*>(d) + off, in.data(), n,
                                                     cudaMemcpyHostToDevice, s);
        std::fill(in.begin(), in.end(), 0x5a);  // the buffer is the application's again at once
        if (r != cudaSuccess) ++bad;
        if (i % 2 == 0) {  // a D2H copy into pinned memory, then a host function
          if (a.cudaMemcpyAsync(pinned, static_cast<char*>(d) + off, n, cudaMemcpyDeviceToHost, s) != cudaSuccess ||
              a.cudaLaunchHostFunc(s, [](void*) {}, nullptr) != cudaSuccess)
            ++bad;
        }
        r = a.cudaMemcpyAsync(out.data(), static_cast<char*>(d) + off, n, cudaMemcpyDeviceToHost, s);
        if (r != cudaSuccess) ++bad;
        if (out != expected) ++bad;
        if (i % 2 == 0 && std::memcmp(pinned, expected.data(), n) != 0) ++bad;
      }
      a.cudaFreeHost(pinned);
      a.cudaFree(d);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(0, bad.load());
  for (cudaStream_t s : streams) a.cudaStreamDestroy(s);
  std::string json = summary_json();
  EXPECT_NE(std::string::npos, json.find("\"staging\": {")) << json;
}

}  // namespace

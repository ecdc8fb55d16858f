// The test-only busy kernel (gpusim.h): GPU work that owns a buffer for a
// while and notices if anyone else writes it meanwhile. This is how tests
// catch an allocator that hands out memory a queued kernel still uses.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <new>
#include <set>
#include <string>

#include "gpusim.h"
#include "sim.h"

using namespace gpusim;

namespace {
std::atomic<long> g_violations{0};

bool intact(const volatile uint32_t* w, size_t n, uint32_t pattern) {
  for (size_t i = 0; i < n; ++i)
    if (w[i] != pattern) return false;
  return true;
}
}  // namespace

GPUSIM_EXPORT cudaError_t gpusim_busy_kernel(cudaStream_t h, void* buf, size_t bytes, unsigned duration_us,
                                             uint32_t pattern, volatile int* status) {
  CUstream_st* s = resolve(h, false);
  if (!s) return cudaErrorInvalidResourceHandle;
  if (bytes % 4 || classify(buf, bytes) != Where::kDevice) return cudaErrorInvalidValue;
  auto* words = static_cast<volatile uint32_t*>(buf);
  size_t n = bytes / 4;
  enqueue(s, [=] {
    auto t0 = Clock::now();
    auto end = after(t0, duration_us);
    for (size_t i = 0; i < n; ++i) words[i] = pattern;
    bool ok = true;
    while (ok && Clock::now() < end) {
      wait_until(std::min(end, after(Clock::now(), 50)));
      ok = intact(words, n, pattern);
    }
    ok = ok && intact(words, n, pattern);
    if (!ok) g_violations.fetch_add(1);
    if (status) *status = ok ? 1 : -1;
  });
  return cudaSuccess;
}

GPUSIM_EXPORT long gpusim_busy_kernel_violations(void) { return g_violations.load(); }

GPUSIM_EXPORT size_t gpusim_device_used(int device) { return Memory::get().used(device); }

namespace {
std::atomic<long> g_free_syncs{0};
}  // namespace
void gpusim::count_free_sync() { g_free_syncs.fetch_add(1, std::memory_order_relaxed); }
GPUSIM_EXPORT long gpusim_free_syncs(void) { return g_free_syncs.load(); }

namespace {
constexpr const char* kCountedNames[] = {"cudaMalloc", "cudaFree", "cuMemCreate", "cuMemRelease", "cuMemMap",
                                         "cuMemUnmap", "cuMemSetAccess", "cuMemAddressReserve", "cuMemAddressFree",
                                         "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
                                         "cudaEventRecord"};
static_assert(std::size(kCountedNames) == static_cast<size_t>(gpusim::Counted::kCountedCalls));
std::atomic<long> g_calls[std::size(kCountedNames)];
}  // namespace
void gpusim::count_call(Counted c) { g_calls[static_cast<size_t>(c)].fetch_add(1, std::memory_order_relaxed); }
GPUSIM_EXPORT long gpusim_calls(const char* name) {
  for (size_t i = 0; name && i < std::size(kCountedNames); ++i)
    if (std::strcmp(name, kCountedNames[i]) == 0) return g_calls[i].load();
  return -1;
}

// Kernels launched through the CUDA APIs (cudaLaunchKernel, cuLaunchKernel,
// ...): timed, never computed.
void gpusim::launch_kernel(CUstream_st* s, uint64_t blocks, const void* func) {
  KernelShape shape;
  shape.grid[0] = static_cast<uint32_t>(std::min<uint64_t>(blocks, 0x7fffffff));
  if (blocks > 0x7fffffff) shape.grid[1] = static_cast<uint32_t>((blocks + 0x7ffffffe) / 0x7fffffff);
  launch_kernel(s, shape, func);
}
void gpusim::launch_kernel(CUstream_st* s, const KernelShape& shape, const void* func) {
  charge_cpu(config().launch_us);
  const uint64_t blocks = shape.blocks();
  double us = (config().kernel_us + config().kernel_per_block_us * static_cast<double>(blocks)) *
              kernel_slowdown(s ? s->device : 0);
  OpInfo info;
  info.kind = OpKind::kKernel;
  info.blocks = blocks;
  info.shape = shape;
  info.modeled_ns = static_cast<uint64_t>(us * 1000);
  if (activity_observed()) info.name = kernel_name(func);
  enqueue(s, [us] { wait_until(after(Clock::now(), us)); }, info);
}
void gpusim::launch_flops(CUstream_st* s, double flops, const char* name) {
  charge_cpu(config().launch_us);
  double rate = config().gemm_tflops > 0 ? config().gemm_tflops : 50;
  double us = (config().kernel_us + flops / (rate * 1e6)) * kernel_slowdown(s ? s->device : 0);
  OpInfo info;
  info.kind = OpKind::kKernel;
  info.blocks = 1;
  info.name = name;
  info.modeled_ns = static_cast<uint64_t>(us * 1000);
  enqueue(s, [us] { wait_until(after(Clock::now(), us)); }, info);
}
void gpusim::launch_timed(CUstream_st* s, const KernelShape& shape, double us, const char* name) {
  charge_cpu(config().launch_us);
  us *= kernel_slowdown(s ? s->device : 0);
  OpInfo info;
  info.kind = OpKind::kKernel;
  info.blocks = shape.blocks();
  info.shape = shape;
  info.name = name;
  info.modeled_ns = static_cast<uint64_t>(us * 1000);
  enqueue(s, [us] { wait_until(after(Clock::now(), us)); }, info);
}

namespace {
std::mutex g_unanswered_mu;
// Used at exit, so never destroyed; made on first use in static storage
// rather than on the heap, so that LeakSanitizer has no allocation to
// report when a program exits while the library's globals are no longer
// scanned (one ASan run of DriverHooks flagged the set's 48 bytes).
std::set<std::string>& unanswered() {
  alignas(std::set<std::string>) static unsigned char storage[sizeof(std::set<std::string>)];
  static std::set<std::string>* set = new (storage) std::set<std::string>();
  return *set;
}
}  // namespace
namespace {
std::atomic<bool> g_runtime_torn_down{false};
void runtime_teardown() { g_runtime_torn_down.store(true, std::memory_order_release); }
}  // namespace

void gpusim::register_runtime_teardown() {
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(runtime_teardown); });
}

bool gpusim::runtime_torn_down() { return g_runtime_torn_down.load(std::memory_order_acquire); }

void gpusim::log_unanswered(const char* api, const char* name) {
  std::string key = std::string(api) + ": " + (name ? name : "(null)");
  {
    std::lock_guard<std::mutex> l(g_unanswered_mu);
    if (!unanswered().insert(key).second) return;
  }
  std::fprintf(stderr, "gpusim: unanswered %s\n", key.c_str());
}

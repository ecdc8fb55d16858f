// A program that leaks in the ways the findings name, or nearly does, for
// the findings' scenarios on the simulated device (findings_test.py).
// Linked against the simulated runtime; its busy kernel stands in for a
// step's GPU work. Each mode runs about 2-3 s.
//
// Usage: findings_app MODE
//   free-loop      each step frees a buffer behind its 20 ms kernel: cudaFree
//                  waits for the device every step (allocator_sync)
//   free-edges     a free behind a 300 ms kernel at start-up and another at
//                  teardown, a loop that never waits in between (near miss)
//   pageable-loop  each step copies 1 MiB from a std::vector behind its
//                  10 ms kernel (pageable_copies, with stage_copies:false)
//   pinned-loop    the same from cudaMallocHost memory (near miss)
//   pageable-edges one 64 MiB pageable copy behind a 300 ms kernel before a
//                  quiet loop (near miss)
//   item-loop      each step reads a scalar back after its 10 ms kernel,
//                  as .item() does: a D2H copy and a stream synchronization
//                  (sync_copies, with gpu_timeline:on), then works 10 ms
//                  on the host: the GPU idles, as the read kept the host
//                  from queueing the next step ahead
//   item-busy      the same reads, no host work between steps: the GPU
//                  never idles, the waits cost nothing (near miss)
//   item-end       a quiet loop, then one D2H read and a device
//                  synchronization behind a 300 ms kernel (near miss)
//   pressure-loop  allocator:vmm on a small device: each step allocates
//                  buffers of varying size behind the previous step's
//                  kernel, so allocations wait for frees (fragmentation;
//                  with a large device, the near miss)
// The quiet loop: 100 steps of a 5 ms kernel and 20 ms of host work, no
// call that waits for the GPU.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpusim.h"
#ifdef FINDINGS_HAS_SPIN_KERNEL
#include "spin_kernel.h"
#endif

#define CHECK(x)                                                               \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "findings_app: %s: %s\n", #x, cudaGetErrorName(e_)); \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

namespace {

cudaStream_t g_stream;
void* g_busy;

void kernel_us(unsigned us) { CHECK(gpusim_busy_kernel(g_stream, g_busy, 4096, us, 1, nullptr)); }

// A kernel the GPU timeline sees: a launch, where nvcc built the demo's
// spin kernel (plain builds; the simulated device runs it
// GPUSIM_COST_KERNEL_US long), else gpusim's busy kernel, which the
// simulated CUPTI does not record (sanitizer builds register no test that
// needs the timeline to see it).
void step_kernel(unsigned us) {
#ifdef FINDINGS_HAS_SPIN_KERNEL
  CHECK(launch_spin(g_stream, us * 1000ull));
#else
  kernel_us(us);
#endif
}

__attribute__((noinline)) void quiet_loop(int steps) {
  for (int i = 0; i < steps; ++i) {
    kernel_us(5000);
    usleep(20000);
  }
}

}  // namespace

// The call sites the findings name: external, so the summary's frames have
// their names.
__attribute__((noipa)) void free_after_kernel(unsigned us) {
  void* tmp;
  CHECK(cudaMalloc(&tmp, 1 << 20));
  kernel_us(us);
  CHECK(cudaFree(tmp));  // waits for the kernel
}

__attribute__((noipa)) void copy_batch(void* dst, const void* src, size_t bytes) {
  CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, g_stream));
}

__attribute__((noipa)) float read_loss(const void* dev) {
  float loss = 0;
  // As .item() does: a copy on the step's stream, then wait for it.
  CHECK(cudaMemcpyAsync(&loss, dev, sizeof(loss), cudaMemcpyDeviceToHost, g_stream));
  CHECK(cudaStreamSynchronize(g_stream));
  return loss;
}

namespace {

void free_loop() {
  for (int i = 0; i < 100; ++i) free_after_kernel(20000);
}

void free_edges() {
  free_after_kernel(300000);
  quiet_loop(100);
  free_after_kernel(300000);
}

void copy_loop(bool pinned) {
  const size_t bytes = 1 << 20;
  void* dst;
  CHECK(cudaMalloc(&dst, bytes));
  std::vector<char> pageable(bytes, 1);
  void* host = pageable.data();
  if (pinned) CHECK(cudaMallocHost(&host, bytes));
  for (int i = 0; i < 100; ++i) {
    kernel_us(10000);
    copy_batch(dst, host, bytes);
    usleep(10000);
  }
  CHECK(cudaStreamSynchronize(g_stream));
  if (pinned) CHECK(cudaFreeHost(host));
  CHECK(cudaFree(dst));
}

void pageable_edges() {
  const size_t bytes = 64 << 20;
  void* dst;
  CHECK(cudaMalloc(&dst, bytes));
  std::vector<char> pageable(bytes, 1);
  kernel_us(300000);
  copy_batch(dst, pageable.data(), bytes);
  quiet_loop(100);
  CHECK(cudaFree(dst));
}

void item_loop(bool host_work) {
  for (int i = 0; i < 100; ++i) {
    step_kernel(10000);
    read_loss(g_busy);
    if (host_work) usleep(10000);
  }
}

void item_end() {
  quiet_loop(100);
  kernel_us(300000);
  read_loss(g_busy);
  CHECK(cudaDeviceSynchronize());
}

void pressure_loop() {
  // Each step: free the previous step's buffer (pending behind its kernel),
  // allocate one of another size, run a kernel on it. The kernel (150 ms)
  // outlasts a step's host work even under TSan on a loaded machine (about
  // 55 ms there): with 30 ms kernels the host came late, the free had
  // settled, and nothing waited.
  void* prev = nullptr;
  for (int i = 0; i < 12; ++i) {
    const size_t bytes = static_cast<size_t>(20 + (i % 3) * 6) << 20;
    void* buf;
    CHECK(cudaMalloc(&buf, bytes));
    CHECK(gpusim_busy_kernel(g_stream, buf, 4096, 150000, 1, nullptr));
    if (prev) CHECK(cudaFree(prev));
    prev = buf;
    usleep(5000);
  }
  CHECK(cudaStreamSynchronize(g_stream));
  CHECK(cudaFree(prev));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: findings_app MODE\n");
    return 2;
  }
  const std::string mode = argv[1];
  CHECK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
  CHECK(cudaMalloc(&g_busy, 4096));
  if (mode == "free-loop") free_loop();
  else if (mode == "free-edges") free_edges();
  else if (mode == "pageable-loop") copy_loop(false);
  else if (mode == "pinned-loop") copy_loop(true);
  else if (mode == "pageable-edges") pageable_edges();
  else if (mode == "item-loop") item_loop(true);
  else if (mode == "item-busy") item_loop(false);
  else if (mode == "item-end") item_end();
  else if (mode == "pressure-loop") pressure_loop();
  else {
    std::fprintf(stderr, "findings_app: unknown mode %s\n", mode.c_str());
    return 2;
  }
  CHECK(cudaStreamSynchronize(g_stream));
  CHECK(cudaFree(g_busy));
  CHECK(cudaStreamDestroy(g_stream));
  return 0;
}

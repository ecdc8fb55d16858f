// The demo workload: a training loop with variable-length batches.
//
// Each step does what a transformer training step does to the allocator
// and the copy engines, without kernels (so it runs unchanged on a real GPU
// and on the simulated device):
//   - allocates activation buffers sized by this step's sequence length
//     (cudaMalloc: the fallback path of a fragmented caching allocator);
//   - prefetches the next step's input batch host->device at the end of the
//     step, behind the step's work on the same stream (cudaMemcpyAsync from
//     ordinary std::vector memory, as a naive data loader does: the driver
//     drains the stream first, so the host waits for the whole step there);
//   - "computes": device-to-device copies and memsets over the activations,
//     and, with --kernel-us, one kernel per layer that keeps the GPU busy
//     that long (spin_kernel.cu; on the simulated device the cost model's
//     kernel time, GPUSIM_COST_KERNEL_US, applies instead);
//   - frees the activations (cudaFree);
//   - all-reduces the gradients over every visible device (NCCL);
//   - synchronizes, and reports the step's time;
//   - with --decode-ms, "decodes" the next batch on the host before the
//     step (CPU work with no CUDA call in flight, as a data loader's image
//     decoding in the training process): the GPU idles, host-bound.
//
// Usage: train_loop [--steps N] [--warmup W] [--hidden H] [--batch B] [--seed S] [--grad-mib G]
//                   [--kernel-us K] [--decode-ms D]
// (the first W steps, 1 by default, are the warm-up: the steady-state
// figures printed at the end count the steps after them)
// Prints one line per step, a line with the host time blocked in the input
// copies, and a summary line with the median step time.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "spin_kernel.h"

namespace {

#define CHECK_CUDA(x)                                                                     \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "train_loop: %s failed: %s\n", #x, cudaGetErrorString(e_));   \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)
#define CHECK_NCCL(x)                                                                     \
  do {                                                                                    \
    ncclResult_t r_ = (x);                                                                \
    if (r_ != ncclSuccess) {                                                              \
      std::fprintf(stderr, "train_loop: %s failed: %s\n", #x, ncclGetErrorString(r_));   \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

struct Args {
  int steps = 20;
  int warmup = 1;
  size_t hidden = 1024;
  size_t batch = 8;
  unsigned seed = 1;
  size_t grad_mib = 64;  // float32 gradients all-reduced each step
  long kernel_us = 0;    // a kernel per layer of this many us; 0: none
  long decode_ms = 0;    // host "decoding" before each step; 0: none
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    long v = std::atol(argv[i + 1]);
    if (v <= 0) {
      std::fprintf(stderr, "train_loop: %s needs a positive number\n", k.c_str());
      std::exit(2);
    }
    if (k == "--steps") a.steps = static_cast<int>(v);
    else if (k == "--warmup") a.warmup = static_cast<int>(v);
    else if (k == "--hidden") a.hidden = static_cast<size_t>(v);
    else if (k == "--batch") a.batch = static_cast<size_t>(v);
    else if (k == "--seed") a.seed = static_cast<unsigned>(v);
    else if (k == "--grad-mib") a.grad_mib = static_cast<size_t>(v);
    else if (k == "--kernel-us") a.kernel_us = v;
    else if (k == "--decode-ms") a.decode_ms = v;
    else {
      std::fprintf(stderr,
                   "usage: train_loop [--steps N] [--warmup W] [--hidden H] [--batch B] [--seed S] [--grad-mib G] "
                   "[--kernel-us K] [--decode-ms D]\n");
      std::exit(2);
    }
  }
  return a;
}

// Per device: its stream, communicator and gradient buffer.
struct Rank {
  int device;
  cudaStream_t stream;
  ncclComm_t comm;
  float* grads;
  int32_t* input;  // the batch of the coming step, prefetched
};

// The CPU-bound input stage: `ms` of host work with no CUDA call, as
// decoding images in the training process is. Returns a checksum so the
// work is not optimized away.
unsigned decode(long ms, std::mt19937& rng) {
  unsigned sum = 0;
  if (ms <= 0) return sum;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end)
    for (int i = 0; i < 256; ++i) sum += rng();
  return sum;
}

// A naive loader's batch: pageable host memory.
std::vector<int32_t> make_batch(std::mt19937& rng, size_t tokens) {
  std::vector<int32_t> batch(tokens);
  for (auto& t : batch) t = static_cast<int32_t>(rng() % 50000);
  return batch;
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse(argc, argv);
  int ndev = 0;
  CHECK_CUDA(cudaGetDeviceCount(&ndev));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("train_loop: %d device(s), device 0: %s; %d steps, batch %zu, hidden %zu\n", ndev, prop.name,
              args.steps, args.batch, args.hidden);

  const size_t grad_count = args.grad_mib << 18;  // float32 gradients: 64 MiB by default
  std::vector<Rank> ranks(ndev);
  std::vector<ncclComm_t> comms(ndev);
  CHECK_NCCL(ncclCommInitAll(comms.data(), ndev, nullptr));
  for (int d = 0; d < ndev; ++d) {
    CHECK_CUDA(cudaSetDevice(d));
    ranks[d].device = d;
    ranks[d].comm = comms[d];
    CHECK_CUDA(cudaStreamCreateWithFlags(&ranks[d].stream, cudaStreamNonBlocking));
    CHECK_CUDA(cudaMalloc(&ranks[d].grads, grad_count * sizeof(float)));
    CHECK_CUDA(cudaMemsetAsync(ranks[d].grads, 0, grad_count * sizeof(float), ranks[d].stream));
    CHECK_CUDA(cudaMalloc(&ranks[d].input, args.batch * 2048 * sizeof(int32_t)));
  }

  std::mt19937 rng(args.seed);
  std::uniform_int_distribution<size_t> seq_len(128, 2048);
  // Host time blocked in the input copies, per step.
  std::vector<double> copy_ms;
  auto prefetch = [&](const std::vector<int32_t>& batch) {
    auto t = std::chrono::steady_clock::now();
    for (Rank& r : ranks) {
      CHECK_CUDA(cudaSetDevice(r.device));
      CHECK_CUDA(cudaMemcpyAsync(r.input, batch.data(), batch.size() * sizeof(int32_t), cudaMemcpyHostToDevice,
                                 r.stream));
    }
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
  };
  size_t len = seq_len(rng);
  prefetch(make_batch(rng, args.batch * len));
  std::vector<double> step_ms;
  // On the simulated device, the device synchronizations cudaFree made
  // (gpusim_free_syncs; absent on a real GPU, where nothing counts them).
  using CountFn = long (*)();
  auto free_syncs = reinterpret_cast<CountFn>(dlsym(RTLD_DEFAULT, "gpusim_free_syncs"));
  long syncs_after_warmup = 0;
  // Under gpuslack (LD_PRELOAD), its C API: the time lost to allocation so
  // far, read from the live summary, to print the steady state's share.
  using SummaryFn = char* (*)();
  using FreeFn = void (*)(void*);
  auto summary = reinterpret_cast<SummaryFn>(dlsym(RTLD_DEFAULT, "gpuslack_summary_json"));
  auto summary_free = reinterpret_cast<FreeFn>(dlsym(RTLD_DEFAULT, "gpuslack_free"));
  auto allocation_s = [&]() -> double {
    if (!summary || !summary_free) return -1;
    char* json = summary();
    if (!json) return -1;
    const char* at = std::strstr(json, "\"allocation\": {\"seconds\": ");
    double v = at ? std::strtod(at + std::strlen("\"allocation\": {\"seconds\": "), nullptr) : -1;
    summary_free(json);
    return v;
  };
  double allocation_after_warmup = -1;
  unsigned decoded = 0;
  for (int step = 0; step < args.steps; ++step) {
    auto t0 = std::chrono::steady_clock::now();
    decoded += decode(args.decode_ms, rng);
    size_t tokens = args.batch * len;
    for (Rank& r : ranks) {
      CHECK_CUDA(cudaSetDevice(r.device));
      const size_t act_bytes = tokens * args.hidden * 2;  // bf16 activations
      void *act_a, *act_b, *scratch;
      CHECK_CUDA(cudaMalloc(&act_a, act_bytes));
      CHECK_CUDA(cudaMalloc(&act_b, act_bytes));
      CHECK_CUDA(cudaMalloc(&scratch, act_bytes / 4 + 512 * (len % 7)));
      // "Forward and backward" (reading r.input): four layers of copies and memsets.
      for (int layer = 0; layer < 4; ++layer) {
        CHECK_CUDA(cudaMemsetAsync(act_a, layer, act_bytes, r.stream));
        CHECK_CUDA(cudaMemcpyAsync(act_b, act_a, act_bytes, cudaMemcpyDeviceToDevice, r.stream));
        CHECK_CUDA(cudaMemsetAsync(scratch, 0, act_bytes / 4, r.stream));
        if (args.kernel_us > 0) CHECK_CUDA(launch_spin(r.stream, static_cast<unsigned long long>(args.kernel_us) * 1000));
      }
      CHECK_CUDA(cudaFree(scratch));
      CHECK_CUDA(cudaFree(act_b));
      CHECK_CUDA(cudaFree(act_a));
    }
    CHECK_NCCL(ncclGroupStart());
    for (Rank& r : ranks)
      CHECK_NCCL(ncclAllReduce(r.grads, r.grads, grad_count, ncclFloat32, ncclSum, r.comm, r.stream));
    CHECK_NCCL(ncclGroupEnd());
    // The next step's batch, queued behind this step's work (the last
    // step's prefetch is wasted, as a loader's would be).
    len = seq_len(rng);
    copy_ms.push_back(prefetch(make_batch(rng, args.batch * len)));
    for (Rank& r : ranks) CHECK_CUDA(cudaStreamSynchronize(r.stream));
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    step_ms.push_back(ms);
    std::printf("step %3d  seq_len %4zu  %8.2f ms\n", step, len, ms);
    if (step == args.warmup - 1 && free_syncs) syncs_after_warmup = free_syncs();
    if (step == args.warmup - 1) allocation_after_warmup = allocation_s();
  }
  if (double end = allocation_s(); end >= 0 && allocation_after_warmup >= 0 && args.steps > args.warmup)
    std::printf("train_loop: gpuslack: time lost to allocation in steady state (steps %d..%d): %.3f ms\n",
                args.warmup, args.steps - 1, (end - allocation_after_warmup) * 1e3);
  if (free_syncs && args.steps > args.warmup)
    std::printf("train_loop: device synchronizations by cudaFree in steady state (steps %d..%d): %ld\n",
                args.warmup, args.steps - 1, free_syncs() - syncs_after_warmup);

  double copy_total = 0;
  for (double ms : copy_ms) copy_total += ms;
  std::vector<double> copy_sorted = copy_ms;
  std::sort(copy_sorted.begin(), copy_sorted.end());
  std::printf("train_loop: host time blocked in the input copies: %.3f ms in total, median %.3f ms per step\n",
              copy_total, copy_sorted.empty() ? 0.0 : copy_sorted[copy_sorted.size() / 2]);

  for (Rank& r : ranks) {
    CHECK_CUDA(cudaSetDevice(r.device));
    CHECK_CUDA(cudaFree(r.input));
    CHECK_CUDA(cudaFree(r.grads));
    CHECK_CUDA(cudaStreamDestroy(r.stream));
    CHECK_NCCL(ncclCommDestroy(r.comm));
  }
  std::vector<double> sorted = step_ms;
  std::sort(sorted.begin(), sorted.end());
  std::printf("train_loop: median step %.2f ms over %d steps (min %.2f, max %.2f)\n", sorted[sorted.size() / 2],
              args.steps, sorted.front(), sorted.back());
  if (args.decode_ms > 0)
    std::printf("train_loop: host decoding %ld ms per step, %.0f ms in total (checksum %u)\n", args.decode_ms,
                static_cast<double>(args.decode_ms) * args.steps, decoded);
  return 0;
}

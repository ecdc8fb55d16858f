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
//   - all-reduces the gradients over every visible device (NCCL), in
//     --grad-buckets calls of equal size (DDP's buckets; 1 by default);
//   - synchronizes, and reports the step's time;
//   - with --decode-ms, "decodes" the next batch on the host before the
//     step (CPU work with no CUDA call in flight, as a data loader's image
//     decoding in the training process): the GPU idles, host-bound.
//
// Multi-process mode (with a rendezvous folder, --rendezvous DIR or
// TRAIN_LOOP_RENDEZVOUS, or --world-from-env): one rank per process, as torchrun starts them (RANK,
// LOCAL_RANK: the device, WORLD_SIZE, GROUP_RANK) or srun does (SLURM_PROCID, ...), the NCCL id handed over
// through a shared folder (--rendezvous DIR or TRAIN_LOOP_RENDEZVOUS;
// world.h), a synchronous data-parallel loop whose all-reduce couples the
// ranks. Each step checks the all-reduce's result on a probe of the
// gradients (--no-check: neither the gradients' zeroing, the probe's copies nor the check, for a
// simulated NCCL told to move no bytes, GPUSIM_NCCL_DATA=0). --slow-rank R --slow-ms MS delays rank R's host work by MS
// every step (a slow loader): it becomes the straggler the others wait for
// in their all-reduce.
//
// Usage: train_loop [--steps N] [--warmup W] [--hidden H] [--batch B] [--seed S] [--grad-mib G]
//                   [--kernel-us K] [--decode-ms D] [--grad-buckets N] [--layers L]
//                   [--world-from-env] [--rendezvous DIR] [--slow-rank R --slow-ms MS] [--no-check]
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
#include <thread>
#include <vector>

#include "spin_kernel.h"
#include "world.h"

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
  size_t grad_buckets = 1;  // ... in this many all-reduces
  int layers = 4;           // forward and backward: this many layers of work
  long kernel_us = 0;    // a kernel per layer of this many us; 0: none
  long decode_ms = 0;    // host "decoding" before each step; 0: none
  bool world_from_env = false;  // multi-process mode even without WORLD_SIZE
  bool check = true;            // multi-process mode: check the all-reduce's result each step
  std::string rendezvous;       // the shared folder of the NCCL id
  int slow_rank = -1;           // this rank's host work is delayed ...
  long slow_ms = 0;             // ... by this much per step
};

const char kUsage[] =
    "usage: train_loop [--steps N] [--warmup W] [--hidden H] [--batch B] [--seed S] [--grad-mib G] "
    "[--kernel-us K] [--decode-ms D] [--grad-buckets N] [--layers L] [--world-from-env] [--rendezvous DIR] "
    "[--slow-rank R --slow-ms MS] [--no-check]\n";

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--world-from-env") {
      a.world_from_env = true;
      --i;
      continue;
    }
    if (k == "--no-check") {
      a.check = false;
      --i;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s", kUsage);
      std::exit(2);
    }
    if (k == "--rendezvous") {
      a.rendezvous = argv[i + 1];
      continue;
    }
    long v = std::atol(argv[i + 1]);
    if (k == "--slow-rank" && v >= 0 && std::strspn(argv[i + 1], "0123456789") == std::strlen(argv[i + 1])) {
      a.slow_rank = static_cast<int>(v);
      continue;
    }
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
    else if (k == "--grad-buckets") a.grad_buckets = static_cast<size_t>(v);
    else if (k == "--layers") a.layers = static_cast<int>(v);
    else if (k == "--decode-ms") a.decode_ms = v;
    else if (k == "--slow-ms") a.slow_ms = v;
    else {
      std::fprintf(stderr, "%s", kUsage);
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
  const demo::World world = demo::read_world(args.world_from_env, args.rendezvous);
  int ndev = 0;
  CHECK_CUDA(cudaGetDeviceCount(&ndev));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("train_loop: %d device(s), device 0: %s; %d steps, batch %zu, hidden %zu\n", ndev, prop.name,
              args.steps, args.batch, args.hidden);

  const size_t grad_count = args.grad_mib << 18;  // float32 gradients: 64 MiB by default
  // One rank per visible device in this process; in multi-process mode,
  // this process's one rank on device LOCAL_RANK.
  std::vector<Rank> ranks(world.on ? 1 : ndev);
  std::vector<ncclComm_t> comms(ranks.size());
  if (world.on) {
    if (world.local_rank >= ndev) {
      std::fprintf(stderr, "train_loop: LOCAL_RANK %d but only %d device(s)\n", world.local_rank, ndev);
      return 1;
    }
    CHECK_CUDA(cudaSetDevice(world.local_rank));
    std::printf("train_loop: rank %d of %d (local rank %d, node %d) on device %d%s\n", world.rank, world.size,
                world.local_rank, world.node_rank, world.local_rank,
                world.rank == args.slow_rank ? ", the slow rank" : "");
    ncclUniqueId id = demo::exchange_id(world, 120);
    CHECK_NCCL(ncclCommInitRank(&comms[0], world.size, id, world.rank));
  } else {
    CHECK_NCCL(ncclCommInitAll(comms.data(), ndev, nullptr));
  }
  for (size_t d = 0; d < ranks.size(); ++d) {
    ranks[d].device = world.on ? world.local_rank : static_cast<int>(d);
    CHECK_CUDA(cudaSetDevice(ranks[d].device));
    ranks[d].comm = comms[d];
    CHECK_CUDA(cudaStreamCreateWithFlags(&ranks[d].stream, cudaStreamNonBlocking));
    CHECK_CUDA(cudaMalloc(&ranks[d].grads, grad_count * sizeof(float)));
    // Zeroed where the all-reduce's result is checked. With --no-check (a
    // simulated NCCL that moves no bytes) nothing reads them, and on the
    // simulated device the memset is host work: 8 ranks of 1 GiB each are
    // seconds of page faults on a few cores, an idle GPU at start-up that
    // would lead the job's findings.
    if (args.check) CHECK_CUDA(cudaMemsetAsync(ranks[d].grads, 0, grad_count * sizeof(float), ranks[d].stream));
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
  // Under gpuslack, each step's end is marked (gpuslack_step), so that the
  // GPU timeline measures per step and the summary holds the median step.
  using StepFn = void (*)();
  auto mark_step = reinterpret_cast<StepFn>(dlsym(RTLD_DEFAULT, "gpuslack_step"));
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
  // Multi-process mode: the all-reduce's result, checked each step on a
  // probe of the gradients (pinned copies, asynchronous: they add no wait).
  constexpr size_t kProbe = 1024;
  float* probe_in = nullptr;
  float* probe_out = nullptr;
  if (world.on) {
    CHECK_CUDA(cudaMallocHost(&probe_in, kProbe * sizeof(float)));
    CHECK_CUDA(cudaMallocHost(&probe_out, kProbe * sizeof(float)));
  }
  const bool slow = world.on && world.rank == args.slow_rank && args.slow_ms > 0;
  for (int step = 0; step < args.steps; ++step) {
    auto t0 = std::chrono::steady_clock::now();
    decoded += decode(args.decode_ms, rng);
    if (slow) std::this_thread::sleep_for(std::chrono::milliseconds(args.slow_ms));
    size_t tokens = args.batch * len;
    for (Rank& r : ranks) {
      CHECK_CUDA(cudaSetDevice(r.device));
      const size_t act_bytes = tokens * args.hidden * 2;  // bf16 activations
      void *act_a, *act_b, *scratch;
      CHECK_CUDA(cudaMalloc(&act_a, act_bytes));
      CHECK_CUDA(cudaMalloc(&act_b, act_bytes));
      CHECK_CUDA(cudaMalloc(&scratch, act_bytes / 4 + 512 * (len % 7)));
      // "Forward and backward" (reading r.input): layers of copies and memsets (4 by default).
      for (int layer = 0; layer < args.layers; ++layer) {
        CHECK_CUDA(cudaMemsetAsync(act_a, layer, act_bytes, r.stream));
        CHECK_CUDA(cudaMemcpyAsync(act_b, act_a, act_bytes, cudaMemcpyDeviceToDevice, r.stream));
        CHECK_CUDA(cudaMemsetAsync(scratch, 0, act_bytes / 4, r.stream));
        if (args.kernel_us > 0) CHECK_CUDA(launch_spin(r.stream, static_cast<unsigned long long>(args.kernel_us) * 1000));
      }
      CHECK_CUDA(cudaFree(scratch));
      CHECK_CUDA(cudaFree(act_b));
      CHECK_CUDA(cudaFree(act_a));
    }
    if (world.on && args.check) {
      for (size_t i = 0; i < kProbe; ++i) probe_in[i] = static_cast<float>((world.rank + 1) * (step + 1) + i % 16);
      CHECK_CUDA(cudaMemcpyAsync(ranks[0].grads, probe_in, kProbe * sizeof(float), cudaMemcpyHostToDevice,
                                 ranks[0].stream));
    }
    // The gradients in grad_buckets all-reduces (the last takes the rest).
    const size_t per_bucket = grad_count / args.grad_buckets;
    for (size_t b = 0; b < args.grad_buckets; ++b) {
      const size_t first = b * per_bucket;
      const size_t n = b + 1 == args.grad_buckets ? grad_count - first : per_bucket;
      CHECK_NCCL(ncclGroupStart());
      for (Rank& r : ranks)
        CHECK_NCCL(ncclAllReduce(r.grads + first, r.grads + first, n, ncclFloat32, ncclSum, r.comm, r.stream));
      CHECK_NCCL(ncclGroupEnd());
    }
    if (world.on && args.check)
      CHECK_CUDA(cudaMemcpyAsync(probe_out, ranks[0].grads, kProbe * sizeof(float), cudaMemcpyDeviceToHost,
                                 ranks[0].stream));
    // The next step's batch, queued behind this step's work (the last
    // step's prefetch is wasted, as a loader's would be).
    len = seq_len(rng);
    copy_ms.push_back(prefetch(make_batch(rng, args.batch * len)));
    for (Rank& r : ranks) CHECK_CUDA(cudaStreamSynchronize(r.stream));
    if (world.on) {
      // A peer that died or failed: the collective's asynchronous error.
      ncclResult_t async = ncclSuccess;
      CHECK_NCCL(ncclCommGetAsyncError(ranks[0].comm, &async));
      if (async != ncclSuccess) {
        std::fprintf(stderr, "train_loop: rank %d: all-reduce of step %d failed: %s (%s)\n", world.rank, step,
                     ncclGetErrorString(async), ncclGetLastError(ranks[0].comm));
        return 1;
      }
      const double ranks_sum = world.size * (world.size + 1) / 2.0;
      for (size_t i = 0; args.check && i < kProbe; ++i) {
        const double want = ranks_sum * (step + 1) + static_cast<double>(world.size) * (i % 16);
        if (probe_out[i] != static_cast<float>(want)) {
          std::fprintf(stderr, "train_loop: rank %d: all-reduce of step %d wrong at %zu: %g, want %g\n", world.rank,
                       step, i, probe_out[i], want);
          return 1;
        }
      }
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    step_ms.push_back(ms);
    if (mark_step) mark_step();
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

  if (world.on) {
    std::printf("train_loop: rank %d: all-reduce results checked in %d steps: ok\n", world.rank, args.steps);
    CHECK_CUDA(cudaFreeHost(probe_in));
    CHECK_CUDA(cudaFreeHost(probe_out));
  }
  for (Rank& r : ranks) {
    CHECK_CUDA(cudaSetDevice(r.device));
    CHECK_CUDA(cudaFree(r.input));
    CHECK_CUDA(cudaFree(r.grads));
    CHECK_CUDA(cudaStreamDestroy(r.stream));
    CHECK_NCCL(ncclCommDestroy(r.comm));
  }
  if (free_syncs)
    std::printf("train_loop: device synchronizations by cudaFree in all: %ld\n", free_syncs());
  std::vector<double> sorted = step_ms;
  std::sort(sorted.begin(), sorted.end());
  std::printf("train_loop: median step %.2f ms over %d steps (min %.2f, max %.2f)\n", sorted[sorted.size() / 2],
              args.steps, sorted.front(), sorted.back());
  if (args.steps > args.warmup) {
    // The steps gpuslack's marks delimit (the first mark ends the warm-up),
    // its median as the summary takes it: nearest rank.
    std::vector<double> steady(step_ms.begin() + args.warmup, step_ms.end());
    std::sort(steady.begin(), steady.end());
    std::printf("train_loop: median step in steady state (steps %d..%d): %.2f ms\n", args.warmup, args.steps - 1,
                steady[(steady.size() + 1) / 2 - 1]);
  }
  if (args.decode_ms > 0)
    std::printf("train_loop: host decoding %ld ms per step, %.0f ms in total (checksum %u)\n", args.decode_ms,
                static_cast<double>(args.decode_ms) * args.steps, decoded);
  return 0;
}

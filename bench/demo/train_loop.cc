// The demo workload: a training loop with variable-length batches.
//
// Each step does what a transformer training step does to the allocator
// and the copy engines, without kernels (so it runs unchanged on a real GPU
// and on the simulated device):
//   - allocates activation buffers sized by this step's sequence length
//     (cudaMalloc: the fallback path of a fragmented caching allocator);
//   - copies a pageable input batch host->device (cudaMemcpyAsync from
//     ordinary std::vector memory, as a naive data loader does);
//   - "computes": device-to-device copies and memsets over the activations;
//   - frees the activations (cudaFree);
//   - all-reduces the gradients over every visible device (NCCL);
//   - synchronizes, and reports the step's time.
//
// Usage: train_loop [--steps N] [--warmup W] [--hidden H] [--batch B] [--seed S]
// (the first W steps, 1 by default, are the warm-up: the steady-state
// figures printed at the end count the steps after them)
// Prints one line per step and a summary line with the median step time.
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
    else {
      std::fprintf(stderr, "usage: train_loop [--steps N] [--warmup W] [--hidden H] [--batch B] [--seed S]\n");
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
};

}  // namespace

int main(int argc, char** argv) {
  Args args = parse(argc, argv);
  int ndev = 0;
  CHECK_CUDA(cudaGetDeviceCount(&ndev));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("train_loop: %d device(s), device 0: %s; %d steps, batch %zu, hidden %zu\n", ndev, prop.name,
              args.steps, args.batch, args.hidden);

  const size_t grad_count = 16u << 20;  // 64 MiB of float32 gradients
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
  }

  std::mt19937 rng(args.seed);
  std::uniform_int_distribution<size_t> seq_len(128, 2048);
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
  for (int step = 0; step < args.steps; ++step) {
    auto t0 = std::chrono::steady_clock::now();
    size_t len = seq_len(rng);
    size_t tokens = args.batch * len;
    // A naive loader's batch: pageable host memory.
    std::vector<int32_t> batch(tokens);
    for (auto& t : batch) t = static_cast<int32_t>(rng() % 50000);
    for (Rank& r : ranks) {
      CHECK_CUDA(cudaSetDevice(r.device));
      const size_t act_bytes = tokens * args.hidden * 2;  // bf16 activations
      void *input, *act_a, *act_b, *scratch;
      CHECK_CUDA(cudaMalloc(&input, tokens * sizeof(int32_t)));
      CHECK_CUDA(cudaMalloc(&act_a, act_bytes));
      CHECK_CUDA(cudaMalloc(&act_b, act_bytes));
      CHECK_CUDA(cudaMalloc(&scratch, act_bytes / 4 + 512 * (len % 7)));
      CHECK_CUDA(cudaMemcpyAsync(input, batch.data(), tokens * sizeof(int32_t), cudaMemcpyHostToDevice,
                                 r.stream));
      // "Forward and backward": four layers of copies and memsets.
      for (int layer = 0; layer < 4; ++layer) {
        CHECK_CUDA(cudaMemsetAsync(act_a, layer, act_bytes, r.stream));
        CHECK_CUDA(cudaMemcpyAsync(act_b, act_a, act_bytes, cudaMemcpyDeviceToDevice, r.stream));
        CHECK_CUDA(cudaMemsetAsync(scratch, 0, act_bytes / 4, r.stream));
      }
      CHECK_CUDA(cudaFree(scratch));
      CHECK_CUDA(cudaFree(act_b));
      CHECK_CUDA(cudaFree(act_a));
      CHECK_CUDA(cudaFree(input));
    }
    CHECK_NCCL(ncclGroupStart());
    for (Rank& r : ranks)
      CHECK_NCCL(ncclAllReduce(r.grads, r.grads, grad_count, ncclFloat32, ncclSum, r.comm, r.stream));
    CHECK_NCCL(ncclGroupEnd());
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

  for (Rank& r : ranks) {
    CHECK_CUDA(cudaSetDevice(r.device));
    CHECK_CUDA(cudaFree(r.grads));
    CHECK_CUDA(cudaStreamDestroy(r.stream));
    CHECK_NCCL(ncclCommDestroy(r.comm));
  }
  std::vector<double> sorted = step_ms;
  std::sort(sorted.begin(), sorted.end());
  std::printf("train_loop: median step %.2f ms over %d steps (min %.2f, max %.2f)\n", sorted[sorted.size() / 2],
              args.steps, sorted.front(), sorted.back());
  return 0;
}

// "An application that launches kernels", run with LD_PRELOAD=libgpuslack.so
// (tests/interpose/CMakeLists.txt, interpose.launches_are_counted): every
// launch entry point from four threads, then gpuslack's count of them,
// through its C API, must be exactly the launches made. Also: a step mark
// before the first CUDA call is harmless, and a forked child counts its own
// launches only (Note [Fork] in lib/session/session.cc).
//
// Exit status: 0 when every check passed; otherwise the check that failed
// (printed), 2 when gpuslack is not preloaded.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <thread>
#include <vector>

extern "C" {
cudaError_t cudaLaunchKernel_ptsz(const void*, dim3, dim3, void**, size_t, cudaStream_t);
cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t*, const void*, void**);
}

namespace {

void a_kernel() {}  // the simulated runtime launches any host function's address

#define CHECK(cond)                                              \
  do {                                                           \
    if (!(cond)) {                                               \
      std::fprintf(stderr, "launch_app: failed: %s\n", #cond);   \
      return __LINE__;                                           \
    }                                                            \
  } while (0)

// Five launches, each through another entry point; all succeed.
int five_launches(cudaStream_t s) {
  const void* k = reinterpret_cast<const void*>(&a_kernel);
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(2);
  config.blockDim = dim3(32);
  config.stream = s;
  CHECK(cudaLaunchKernel(k, dim3(1), dim3(32), nullptr, 0, s) == cudaSuccess);
  CHECK(cudaLaunchKernel_ptsz(k, dim3(1), dim3(32), nullptr, 0, s) == cudaSuccess);
  CHECK(cudaLaunchKernelExC(&config, k, nullptr) == cudaSuccess);
  CHECK(cudaLaunchKernelExC_ptsz(&config, k, nullptr) == cudaSuccess);
  CHECK(cudaLaunchCooperativeKernel(k, dim3(1), dim3(1), nullptr, 0, s) == cudaSuccess);
  return 0;
}

}  // namespace

int main() {
  auto step = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "gpuslack_step"));
  auto count = reinterpret_cast<unsigned long long (*)()>(dlsym(RTLD_DEFAULT, "gpuslack_launch_count"));
  if (!step || !count) {
    std::fprintf(stderr, "launch_app: gpuslack is not preloaded\n");
    return 2;
  }
  step();  // before any CUDA call: harmless, starts nothing
  CHECK(count() == 0);

  constexpr int kThreads = 4, kRounds = 200;
  std::vector<std::thread> threads;
  std::vector<int> failed(kThreads, 0);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      cudaStream_t s = nullptr;
      if (cudaStreamCreate(&s) != cudaSuccess) failed[t] = -1;
      for (int i = 0; i < kRounds && !failed[t]; ++i) failed[t] = five_launches(s);
      if (cudaStreamSynchronize(s) != cudaSuccess) failed[t] = -2;
      cudaStreamDestroy(s);
    });
  for (std::thread& t : threads) t.join();
  for (int f : failed) CHECK(f == 0);
  step();
  const unsigned long long expected = kThreads * kRounds * 5;
  std::printf("launch_app: %llu launches counted, %llu made\n", count(), expected);
  CHECK(count() == expected);  // the threads have exited: their counts stay

  // A failed launch is a launch call too: counted, and the error is the runtime's.
  CHECK(cudaLaunchKernel(nullptr, dim3(1), dim3(1), nullptr, 0, nullptr) == cudaErrorInvalidDeviceFunction);
  CHECK(cudaGetLastError() == cudaErrorInvalidDeviceFunction);
  CHECK(count() == expected + 1);

  // A forked child forgets its parent's launches. It makes no CUDA call that
  // would need the device (a refused launch only).
  pid_t child = fork();
  if (child == 0) {
    if (count() != 0) _exit(10);
    if (cudaLaunchKernel(nullptr, dim3(1), dim3(1), nullptr, 0, nullptr) != cudaErrorInvalidDeviceFunction) _exit(11);
    step();
    _exit(count() == 1 ? 0 : 12);
  }
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    std::fprintf(stderr, "launch_app: child status %d\n", status);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK(count() == expected + 1);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  std::printf("launch_app: ok\n");
  return 0;
}

// An application run setuid for the secure-execution test
// (hostile_input_test.py, Note [Secure execution]): a setuid program gets
// no LD_PRELOAD from a path, so it loads libgpuslack.so itself, as a
// program linked with it would, and makes its CUDA calls through
// gpuslack's hooks.
//
// Usage: secure_app LIBGPUSLACK
// Prints "AT_SECURE=<0|1>", then allocates and frees device memory through
// the hooks; exits 0, or 65+ when it cannot.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <sys/auxv.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) return 64;
  std::printf("AT_SECURE=%lu\n", getauxval(AT_SECURE));
  std::fflush(stdout);
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 65;
  }
  auto malloc_hook = reinterpret_cast<cudaError_t (*)(void**, size_t)>(dlsym(h, "cudaMalloc"));
  auto free_hook = reinterpret_cast<cudaError_t (*)(void*)>(dlsym(h, "cudaFree"));
  if (!malloc_hook || !free_hook) return 66;
  void* p = nullptr;
  if (malloc_hook(&p, 1 << 20) != cudaSuccess) return 67;
  if (free_hook(p) != cudaSuccess) return 68;
  // The runtime of the program itself, beside the hooks: linked, so that
  // the hooks find it.
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 69;
}

// Loads argv[1] (cudart_user_lib, nccl_user_lib) with RTLD_LOCAL and runs
// its function argv[2] (default: run_cuda_roundtrip).
#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) return 64;
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 65;
  }
  const char* fn = argc > 2 ? argv[2] : "run_cuda_roundtrip";
  auto run = reinterpret_cast<int (*)()>(dlsym(h, fn));
  return run ? run() : 66;
}

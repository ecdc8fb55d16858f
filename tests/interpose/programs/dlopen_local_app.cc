// Loads argv[1] (cudart_user_lib) with RTLD_LOCAL and runs its round trip.
#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) return 64;
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 65;
  }
  auto run = reinterpret_cast<int (*)()>(dlsym(h, "run_cuda_roundtrip"));
  return run ? run() : 66;
}

// Loads libgpuslack.so (argv[1]) with dlopen while other threads run, as
// ctypes does inside a Python process that already has threads; then calls
// its C API. Fails if the load fails (e.g. static TLS exhausted).
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 2) return 64;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      thread_local std::vector<char> scratch(1 << 16);
      while (!stop.load()) scratch[0]++;
    });
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  int rc = 0;
  if (!h) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    rc = 65;
  } else {
    auto version = reinterpret_cast<const char* (*)()>(dlsym(h, "gpuslack_version"));
    auto info = reinterpret_cast<const char* (*)()>(dlsym(h, "gpuslack_build_info"));
    if (!version || !info) {
      rc = 66;
    } else {
      std::printf("%s\n%s\n", version(), info());
    }
  }
  stop = true;
  for (auto& t : threads) t.join();
  return rc;
}

#include "cuda/runtime_symbols.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstring>

namespace gpuslack {
namespace cuda {
namespace {

// Any address inside libgpuslack.so, to tell our own object apart.
const void* self_address() { return reinterpret_cast<const void*>(&find_runtime_symbol); }

bool is_self(void* addr) {
  Dl_info mine{}, theirs{};
  if (!dladdr(self_address(), &mine) || !dladdr(addr, &theirs)) return false;
  return mine.dli_fbase == theirs.dli_fbase;
}

const char* basename_of(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

struct Scan {
  const void* self_base;
  char path[4096];
  bool found;
};

int find_cudart(struct dl_phdr_info* info, size_t, void* data) {
  auto* scan = static_cast<Scan*>(data);
  if (!info->dlpi_name || !*info->dlpi_name) return 0;
  if (std::strncmp(basename_of(info->dlpi_name), "libcudart.so", 12) != 0) return 0;
  std::strncpy(scan->path, info->dlpi_name, sizeof(scan->path) - 1);
  scan->path[sizeof(scan->path) - 1] = '\0';
  scan->found = true;
  return 1;  // stop at the first one
}

// The handle of the loaded libcudart, found once; never loads a new copy.
void* loaded_cudart(const char** path) {
  static std::atomic<void*> handle{nullptr};
  static char found_path[4096];
  void* h = handle.load(std::memory_order_acquire);
  if (h) {
    *path = found_path;
    return h;
  }
  Scan scan{};
  dl_iterate_phdr(find_cudart, &scan);
  if (!scan.found) return nullptr;
  h = dlopen(scan.path, RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return nullptr;
  void* expected = nullptr;
  if (handle.compare_exchange_strong(expected, h, std::memory_order_acq_rel)) {
    std::memcpy(found_path, scan.path, sizeof(found_path));
  } else {
    dlclose(h);  // another thread won; drop our extra reference
    h = expected;
  }
  *path = found_path;
  return h;
}

}  // namespace

RuntimeSymbol find_runtime_symbol(const char* name) {
  RuntimeSymbol r;
  if (void* p = dlsym(RTLD_NEXT, name); p && !is_self(p)) {
    r.address = p;
    r.found_by = FoundBy::kRtldNext;
    Dl_info info{};
    if (dladdr(p, &info)) r.library = info.dli_fname;
    return r;
  }
  const char* path = nullptr;
  if (void* h = loaded_cudart(&path)) {
    if (void* p = dlsym(h, name); p && !is_self(p)) {
      r.address = p;
      r.found_by = FoundBy::kLoadedLibrary;
      r.library = path;
    }
  }
  return r;
}

const char* found_by_name(FoundBy how) {
  switch (how) {
    case FoundBy::kRtldNext: return "RTLD_NEXT";
    case FoundBy::kLoadedLibrary: return "the loaded libcudart (RTLD_LOCAL)";
    case FoundBy::kNotFound: break;
  }
  return "nowhere";
}

}  // namespace cuda
}  // namespace gpuslack

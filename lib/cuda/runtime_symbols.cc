#include "cuda/runtime_symbols.h"
#include "cuda/loader_section.h"
#include "cuda/real_dl.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstring>
#include <new>

// The scan reads names the loader owns: See Note [Strings the loader owns]
// (cuda/real_dl.h), whose macros leave its reads out of TSan's view.

namespace gpuslack {
namespace cuda {
namespace {

// Any address inside libgpuslack.so, to tell our own object apart.
const void* self_address() { return reinterpret_cast<const void*>(&find_symbol); }

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
  const char* prefix;
  char path[4096];
  bool found;
};

int find_library(struct dl_phdr_info* info, size_t, void* data) {
  auto* scan = static_cast<Scan*>(data);
  if (!info->dlpi_name || !*info->dlpi_name) return 0;
  if (std::strncmp(basename_of(info->dlpi_name), scan->prefix, std::strlen(scan->prefix)) != 0) return 0;
  std::strncpy(scan->path, info->dlpi_name, sizeof(scan->path) - 1);
  scan->path[sizeof(scan->path) - 1] = '\0';
  scan->found = true;
  return 1;  // stop at the first one
}

// One library's handle and path, found once (never loads a new copy) and
// published whole: a thread that sees it sees its path written. (The path
// was once written after the handle was published, a race that the GPU
// timeline's start thread, resolving the runtime beside the application's
// first calls, made real under TSan.) Never freed.
struct Loaded {
  void* handle = nullptr;
  char path[4096] = {};
};
std::atomic<Loaded*> g_loaded[kLibraryCount] = {};

}  // namespace

void* loaded_library(Library lib, const char** path) {
  std::atomic<Loaded*>& slot = g_loaded[static_cast<int>(lib)];
  if (Loaded* found = slot.load(std::memory_order_acquire)) {
    *path = found->path;
    return found->handle;
  }
  Scan scan{};
  scan.prefix = library_prefix(lib);
  void* h = nullptr;
  {
    LoaderSection section;  // Note [gpuslack's loader calls and fork]
    GPUSLACK_LOADER_READS_BEGIN();
    dl_iterate_phdr(find_library, &scan);
    GPUSLACK_LOADER_READS_END();
    if (scan.found) h = dlopen(scan.path, RTLD_LAZY | RTLD_NOLOAD);
  }
  if (!h) return nullptr;
  auto* mine = new (std::nothrow) Loaded;  // once per library: the slow path
  if (!mine) {
    dlclose(h);
    return nullptr;
  }
  mine->handle = h;
  std::memcpy(mine->path, scan.path, sizeof(scan.path));
  Loaded* expected = nullptr;
  if (!slot.compare_exchange_strong(expected, mine, std::memory_order_acq_rel)) {
    dlclose(h);  // another thread won; drop our extra reference
    delete mine;
    mine = expected;
  }
  *path = mine->path;
  return mine->handle;
}

const char* library_prefix(Library lib) {
  switch (lib) {
    case Library::kNccl: return "libnccl.so";
    case Library::kCupti: return "libcupti.so";
    case Library::kCudaDriver: return "libcuda.so";
    case Library::kCudaRuntime: break;
  }
  return "libcudart.so";
}

RuntimeSymbol find_symbol(Library lib, const char* name) {
  RuntimeSymbol r;
  if (void* p = real_dlsym(RTLD_NEXT, name); p && !is_self(p)) {
    r.address = p;
    r.found_by = FoundBy::kRtldNext;
    Dl_info info{};
    if (dladdr(p, &info)) r.library = info.dli_fname;
    return r;
  }
  const char* path = nullptr;
  if (void* h = loaded_library(lib, &path)) {
    if (void* p = real_dlsym(h, name); p && !is_self(p)) {
      r.address = p;
      r.found_by = FoundBy::kLoadedLibrary;
      r.library = path;
    }
  }
  return r;
}

int runtime_major_from_file_name(const char* path) {
  if (!path) return 0;
  static constexpr char kStem[] = "libcudart.so.";
  const char* name = basename_of(path);
  if (std::strncmp(name, kStem, sizeof(kStem) - 1) != 0) return 0;
  int major = 0;
  for (const char* c = name + sizeof(kStem) - 1; *c >= '0' && *c <= '9' && major < 1000; ++c)
    major = major * 10 + (*c - '0');
  return major;
}

namespace {
std::atomic<int> g_runtime_major{0};

__attribute__((noinline, cold)) int find_runtime_major() {
  RuntimeSymbol sym = find_symbol(Library::kCudaRuntime, "cudaRuntimeGetVersion");
  if (!sym.address) return 0;
  int version = 0;
  using GetVersionFn = cudaError_t (*)(int*);
  bool answered = reinterpret_cast<GetVersionFn>(sym.address)(&version) == cudaSuccess;
  int major = answered && version >= 1000 ? version / 1000 : 0;
  if (!major) major = runtime_major_from_file_name(sym.library);
  if (major) g_runtime_major.store(major, std::memory_order_relaxed);
  return major;
}
}  // namespace

int runtime_major_version() {
  int major = g_runtime_major.load(std::memory_order_relaxed);
  return major ? major : find_runtime_major();
}

const char* found_by_name(FoundBy how, Library lib) {
  switch (how) {
    case FoundBy::kRtldNext: return "RTLD_NEXT";
    case FoundBy::kLoadedLibrary:
      switch (lib) {
        case Library::kNccl: return "the loaded libnccl (RTLD_LOCAL)";
        case Library::kCupti: return "the loaded libcupti (RTLD_LOCAL)";
        case Library::kCudaDriver: return "the loaded libcuda (RTLD_LOCAL)";
        case Library::kCudaRuntime: break;
      }
      return "the loaded libcudart (RTLD_LOCAL)";
    case FoundBy::kNotFound: break;
  }
  return "nowhere";
}

}  // namespace cuda
}  // namespace gpuslack

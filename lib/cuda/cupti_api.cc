#include "cuda/cupti_api.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "cuda/loader_section.h"
#include "cuda/real_dl.h"
#include "cuda/runtime_symbols.h"

namespace gpuslack {
namespace cuda {
namespace {

std::once_flag g_once;
const CuptiApi* g_api = nullptr;
std::string* g_why = nullptr;
std::string* g_path = nullptr;
const char* g_cuda_home = nullptr;  // the first caller's, during load() only

std::string folder_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

// The loaded runtime's file and major version (0: unknown).
int loaded_runtime(std::string* path) {
  RuntimeSymbol sym = find_runtime_symbol("cudaRuntimeGetVersion");
  if (!sym.address) return 0;
  Dl_info info{};
  if (dladdr(sym.address, &info) && info.dli_fname) *path = loader_string(info.dli_fname);  // See Note [Strings the loader owns]
  if (int major = runtime_major_from_path(path->c_str())) return major;
  int version = 0;
  using GetVersion = cudaError_t (*)(int*);
  if (reinterpret_cast<GetVersion>(sym.address)(&version) != cudaSuccess) return 0;
  return version / 1000;
}

template <typename Fn>
bool resolve(void* lib, const char* name, Fn* slot, bool required, std::string* why) {
  *slot = reinterpret_cast<Fn>(real_dlsym(lib, name));
  if (!*slot && required) *why = *g_path + " has no " + name;
  return *slot != nullptr || !required;
}

void* open_cupti(std::string* path, std::string* tried) {
  const char* loaded = nullptr;
  if (void* h = loaded_library(Library::kCupti, &loaded)) {  // step 1
    *path = loader_string(loaded);  // See Note [Strings the loader owns]
    return h;
  }
  std::string cudart;
  int major = loaded_runtime(&cudart);
  for (const std::string& candidate :
       cupti_candidates(cudart.c_str(), g_cuda_home, major)) {
    void* h = nullptr;
    {
      LoaderSection section;  // Note [gpuslack's loader calls and fork]
      h = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    }
    if (h) {
      *path = candidate;
      Dl_info info{};
      // The loader's own search: name the file it found.
      if (void* any = real_dlsym(h, "cuptiGetTimestamp"); any && dladdr(any, &info) && info.dli_fname)
        *path = loader_string(info.dli_fname);
      return h;
    }
    if (!tried->empty()) *tried += ", ";
    *tried += candidate;
  }
  return nullptr;
}

void load() {
  g_why = new std::string();
  g_path = new std::string();
  std::string tried;
  void* lib = open_cupti(g_path, &tried);
  if (!lib) {
    *g_why = "no libcupti found (tried " + tried + ")";
    return;
  }
  auto* api = new CuptiApi();
  std::string* why = g_why;
  bool ok = resolve(lib, "cuptiSubscribe", &api->subscribe, true, why) &&
            resolve(lib, "cuptiUnsubscribe", &api->unsubscribe, true, why) &&
            resolve(lib, "cuptiActivityEnable", &api->activity_enable, true, why) &&
            resolve(lib, "cuptiActivityDisable", &api->activity_disable, true, why) &&
            resolve(lib, "cuptiActivityRegisterCallbacks", &api->activity_register_callbacks, true, why) &&
            resolve(lib, "cuptiActivityFlushAll", &api->activity_flush_all, true, why) &&
            resolve(lib, "cuptiActivityGetNextRecord", &api->activity_get_next_record, true, why) &&
            resolve(lib, "cuptiActivityGetNumDroppedRecords", &api->activity_get_num_dropped_records, true, why) &&
            resolve(lib, "cuptiGetTimestamp", &api->get_timestamp, true, why) &&
            resolve(lib, "cuptiGetResultString", &api->get_result_string, true, why) &&
            resolve(lib, "cuptiGetVersion", &api->get_version, false, why) &&
            resolve(lib, "cuptiSubscribe_v2", &api->subscribe_v2, false, why) &&
            resolve(lib, "cuptiActivityEnable_v2", &api->activity_enable_v2, false, why) &&
            resolve(lib, "cuptiActivityDisable_v2", &api->activity_disable_v2, false, why) &&
            resolve(lib, "cuptiActivityRegisterCallbacks_v2", &api->activity_register_callbacks_v2, false, why);
  if (!ok) {
    delete api;
    return;
  }
  // Several subscribers need every per-subscriber call; a CUPTI with only
  // some of them is treated as one without.
  if (!api->subscribe_v2 || !api->activity_enable_v2 || !api->activity_disable_v2 ||
      !api->activity_register_callbacks_v2) {
    api->subscribe_v2 = nullptr;
    api->activity_enable_v2 = nullptr;
    api->activity_disable_v2 = nullptr;
    api->activity_register_callbacks_v2 = nullptr;
  }
  g_api = api;  // leaked on purpose, like the library: used until the process ends
}

}  // namespace

int runtime_major_from_path(const char* cudart_path) {
  const char* base = std::strrchr(cudart_path, '/');
  base = base ? base + 1 : cudart_path;
  const char* so = std::strstr(base, ".so.");
  if (!so) return 0;
  return std::atoi(so + 4);
}

std::vector<std::string> cupti_candidates(const char* cudart_path, const char* cuda_home, int major) {
  std::string soname = major == 12 ? "libcupti.so.12" : "libcupti.so.13";
  std::vector<std::string> out;
  std::string folder = cudart_path ? folder_of(cudart_path) : std::string();
  if (!folder.empty()) {
    out.push_back(folder + "/" + soname);  // nvidia/cu13/lib: both in one folder
    // CUDA 12's wheels: nvidia/cuda_runtime/lib beside nvidia/cuda_cupti/lib.
    std::string package = folder_of(folder);  // .../nvidia/cuda_runtime
    std::string parent = folder_of(package);  // .../nvidia
    if (folder.size() > 4 && folder.compare(folder.size() - 4, 4, "/lib") == 0 && !parent.empty())
      out.push_back(parent + "/cuda_cupti/lib/" + soname);
  }
  if (cuda_home && *cuda_home) {
    std::string home = cuda_home;
    while (home.size() > 1 && home.back() == '/') home.pop_back();
    out.push_back(home + "/extras/CUPTI/lib64/" + soname);
    out.push_back(home + "/lib64/" + soname);
  }
  out.push_back(soname);  // the loader's path
  // Drop repeats, keeping the first.
  std::vector<std::string> unique;
  for (const std::string& c : out) {
    bool seen = false;
    for (const std::string& u : unique) seen = seen || u == c;
    if (!seen) unique.push_back(c);
  }
  return unique;
}

const CuptiApi* cupti(const char* cuda_home) {
  std::call_once(g_once, [cuda_home] {
    g_cuda_home = cuda_home;
    load();
    g_cuda_home = nullptr;
  });
  return g_api;
}

const char* why_no_cupti() { return g_api || !g_why ? "" : g_why->c_str(); }

const char* cupti_path() { return g_api && g_path ? g_path->c_str() : ""; }

std::string cupti_result_text(const CuptiApi* api, CUptiResult r) {
  const char* text = nullptr;
  if (api && api->get_result_string && api->get_result_string(r, &text) == CUPTI_SUCCESS && text) return text;
  return "CUPTI error " + std::to_string(static_cast<int>(r));
}

}  // namespace cuda
}  // namespace gpuslack

// The CUPTI subscription hooks, generated from cupti_hook_table.h: each
// tells the timeline that another tool subscribes (it yields first when it
// must: Note [One CUPTI, several tools] in timeline/coexistence.h), then
// forwards the call unchanged and returns the real result. Rare calls: they
// may lock, allocate and log (Note [What a hook may never do] is about the
// CUDA hooks' forwarding path).
#include <dlfcn.h>

#include <atomic>
#include <cstring>
#include <string>

#include "cuda/runtime_symbols.h"
#include "cupti_hook_table.h"
#include "entry_points.h"
#include "log/log.h"
#include "timeline/coexistence.h"

namespace gpuslack {
namespace interpose {
namespace {

// Who subscribes: its own name, else the file name of the calling object.
std::string subscriber_name(const char* name, void* caller) {
  if (name && *name) return name;
  Dl_info info{};
  if (caller && dladdr(caller, &info) && info.dli_fname && *info.dli_fname) {
    const char* slash = std::strrchr(info.dli_fname, '/');
    return slash ? slash + 1 : info.dli_fname;
  }
  return "another tool";
}

}  // namespace
}  // namespace interpose
}  // namespace gpuslack

#define GPUSLACK_DEFINE_CUPTI_HOOK(sym, params, args, exclusive, name)                                  \
  extern "C" __attribute__((visibility("default"))) CUptiResult sym params {                          \
    using namespace ::gpuslack;                                                                       \
    static std::atomic<void*> slot{nullptr};                                                          \
    auto real = cuda::resolve_cached<CUptiResult(*) params>(cuda::Library::kCupti, slot, #sym);       \
    if (!real) {                                                                                      \
      log::error("cannot find the real {}: no libcupti is loaded; returning an error", #sym);         \
      return CUPTI_ERROR_NOT_INITIALIZED;                                                             \
    }                                                                                                 \
    std::string tool = interpose::subscriber_name(name, __builtin_return_address(0));                 \
    timeline::before_foreign_subscribe(tool.c_str(), exclusive);                                      \
    return real args;                                                                                 \
  }
GPUSLACK_CUPTI_HOOKS(GPUSLACK_DEFINE_CUPTI_HOOK)
#undef GPUSLACK_DEFINE_CUPTI_HOOK

namespace gpuslack {
namespace interpose {

void* cupti_hook(const char* name) {
#define GPUSLACK_CUPTI_HOOK_ADDRESS(sym, params, args, exclusive, subscriber) \
  if (std::strcmp(name, #sym) == 0) return reinterpret_cast<void*>(&::sym);
  GPUSLACK_CUPTI_HOOKS(GPUSLACK_CUPTI_HOOK_ADDRESS)
#undef GPUSLACK_CUPTI_HOOK_ADDRESS
  return nullptr;
}

}  // namespace interpose
}  // namespace gpuslack

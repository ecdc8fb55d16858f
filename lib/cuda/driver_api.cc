#include "cuda/driver_api.h"
#include "cuda/loader_section.h"
#include "cuda/real_dl.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace gpuslack {
namespace cuda {
namespace {

std::once_flag g_once;
const DriverApi* g_api = nullptr;
std::string* g_why = nullptr;

template <typename Fn>
bool resolve(void* lib, const char* name, Fn* slot, std::string* why) {
  *slot = reinterpret_cast<Fn>(real_dlsym(lib, name));
  if (!*slot) *why = std::string("libcuda.so.1 has no ") + name;
  return *slot != nullptr;
}

void load() {
  g_why = new std::string();
  void* lib = nullptr;
  {
    LoaderSection section;  // Note [gpuslack's loader calls and fork]
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!lib) lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  }
  if (!lib) {
    *g_why = std::string("cannot load libcuda.so.1: ") + dlerror();
    return;
  }
  auto* api = new DriverApi();
  std::string* why = g_why;
  // The exported names: cuda.h maps some API names to versioned ones.
  bool ok = resolve(lib, "cuInit", &api->init, why) && resolve(lib, "cuDeviceGet", &api->device_get, why) &&
            resolve(lib, "cuDeviceGetAttribute", &api->device_get_attribute, why) &&
            resolve(lib, "cuMemGetInfo_v2", &api->mem_get_info, why) &&
            resolve(lib, "cuMemGetAllocationGranularity", &api->mem_get_allocation_granularity, why) &&
            resolve(lib, "cuMemAddressReserve", &api->mem_address_reserve, why) &&
            resolve(lib, "cuMemAddressFree", &api->mem_address_free, why) &&
            resolve(lib, "cuMemCreate", &api->mem_create, why) &&
            resolve(lib, "cuMemRelease", &api->mem_release, why) && resolve(lib, "cuMemMap", &api->mem_map, why) &&
            resolve(lib, "cuMemUnmap", &api->mem_unmap, why) &&
            resolve(lib, "cuMemSetAccess", &api->mem_set_access, why) &&
            resolve(lib, "cuDeviceGetCount", &api->device_get_count, why) &&
            resolve(lib, "cuDevicePrimaryCtxGetState", &api->primary_ctx_get_state, why) &&
            resolve(lib, "cuMemGetAddressRange_v2", &api->mem_get_address_range, why) &&
            resolve(lib, "cuCtxGetCurrent", &api->ctx_get_current, why) &&
            resolve(lib, "cuCtxSetCurrent", &api->ctx_set_current, why) &&
            resolve(lib, "cuCtxPushCurrent_v2", &api->ctx_push_current, why) &&
            resolve(lib, "cuCtxPopCurrent_v2", &api->ctx_pop_current, why) &&
            resolve(lib, "cuCtxGetDevice", &api->ctx_get_device, why) &&
            resolve(lib, "cuDevicePrimaryCtxRetain", &api->primary_ctx_retain, why) &&
            resolve(lib, "cuDevicePrimaryCtxRelease_v2", &api->primary_ctx_release, why) &&
            resolve(lib, "cuStreamGetCtx", &api->stream_get_ctx, why) &&
            resolve(lib, "cuMemExportToShareableHandle", &api->mem_export_to_shareable_handle, why) &&
            resolve(lib, "cuMemImportFromShareableHandle", &api->mem_import_from_shareable_handle, why);
  if (!ok) {
    delete api;
    return;
  }
  api->device_get_uuid = reinterpret_cast<decltype(api->device_get_uuid)>(real_dlsym(lib, "cuDeviceGetUuid_v2"));
  if (CUresult r = api->init(0); r != CUDA_SUCCESS) {
    *why = "cuInit failed with error " + std::to_string(static_cast<int>(r));
    delete api;
    return;
  }
  g_api = api;  // leaked on purpose: used until the process ends
}

}  // namespace

const DriverApi* driver() {
  std::call_once(g_once, load);
  return g_api;
}

const char* why_no_driver() {
  driver();
  return g_why ? g_why->c_str() : "";
}

}  // namespace cuda
}  // namespace gpuslack

#include "cuda/nvml_api.h"
#include "cuda/loader_section.h"

#include <dlfcn.h>

#include <mutex>
#include <string>
#include <type_traits>

namespace gpuslack {
namespace cuda {
namespace {

constexpr const char* kSoname = "libnvidia-ml.so.1";

std::once_flag g_once;
const NvmlApi* g_api = nullptr;
std::string* g_why = nullptr;

template <typename Fn>
bool resolve(void* lib, const char* name, Fn* slot) {
  *slot = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!*slot) *g_why = std::string(kSoname) + " has no " + name;
  return *slot != nullptr;
}

void load() {
  g_why = new std::string();
  void* lib = nullptr;
  {
    LoaderSection section;  // Note [gpuslack's loader calls and fork]
    lib = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
  }
  if (!lib) {
    *g_why = std::string(kSoname) + " not found";
    return;
  }
  auto* api = new NvmlApi();
  // The newer name of the clock event reasons first, then the older one.
  api->clocks_event_reasons = reinterpret_cast<decltype(api->clocks_event_reasons)>(
      dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons"));
  if (!api->clocks_event_reasons)
    api->clocks_event_reasons = reinterpret_cast<decltype(api->clocks_event_reasons)>(
        dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons"));
  bool ok = resolve(lib, "nvmlInit_v2", &api->init) && resolve(lib, "nvmlShutdown", &api->shutdown) &&
            resolve(lib, "nvmlErrorString", &api->error_string) &&
            resolve(lib, "nvmlDeviceGetHandleByPciBusId_v2", &api->handle_by_pci_bus_id) &&
            resolve(lib, "nvmlDeviceGetName", &api->name) && resolve(lib, "nvmlDeviceGetUUID", &api->uuid) &&
            resolve(lib, "nvmlDeviceGetClockInfo", &api->clock_info) &&
            resolve(lib, "nvmlDeviceGetMaxClockInfo", &api->max_clock_info) &&
            resolve(lib, "nvmlDeviceGetTemperature", &api->temperature) &&
            resolve(lib, "nvmlDeviceGetPowerUsage", &api->power_usage) &&
            resolve(lib, "nvmlDeviceGetEnforcedPowerLimit", &api->enforced_power_limit) &&
            resolve(lib, "nvmlDeviceGetMemoryInfo", &api->memory_info);
  const auto optional = [lib](const char* name, auto* slot) {
    *slot = reinterpret_cast<std::remove_pointer_t<decltype(slot)>>(dlsym(lib, name));
  };
  optional("nvmlDeviceGetCount_v2", &api->device_count);
  optional("nvmlDeviceGetNvLinkState", &api->nvlink_state);
  optional("nvmlDeviceGetNvLinkVersion", &api->nvlink_version);
  optional("nvmlDeviceGetCurrPcieLinkGeneration", &api->curr_pcie_link_generation);
  optional("nvmlDeviceGetCurrPcieLinkWidth", &api->curr_pcie_link_width);
  optional("nvmlDeviceGetMaxPcieLinkGeneration", &api->max_pcie_link_generation);
  optional("nvmlDeviceGetMaxPcieLinkWidth", &api->max_pcie_link_width);
  optional("nvmlDeviceGetMigMode", &api->mig_mode);
  optional("nvmlDeviceGetHandleByUUID", &api->handle_by_uuid);
  optional("nvmlDeviceGetMaxMigDeviceCount", &api->max_mig_device_count);
  optional("nvmlDeviceGetMigDeviceHandleByIndex", &api->mig_device_handle_by_index);
  if (ok && !api->clocks_event_reasons) {
    *g_why = std::string(kSoname) + " has no nvmlDeviceGetCurrentClocksEventReasons";
    ok = false;
  }
  if (!ok) {
    delete api;
    dlclose(lib);
    return;
  }
  g_api = api;  // leaked on purpose, like the library: used until the process ends
}

}  // namespace

const NvmlApi* nvml() {
  std::call_once(g_once, load);
  return g_api;
}

const char* why_no_nvml() { return g_api || !g_why ? "" : g_why->c_str(); }

const char* nvml_error_text(const NvmlApi* api, nvmlReturn_t r) {
  if (api && api->error_string)
    if (const char* text = api->error_string(r)) return text;
  return "NVML error";
}

}  // namespace cuda
}  // namespace gpuslack

#include "topology/nvml_gpu.h"

#include <string>

#include "topology/link_rates.h"

namespace gpuslack {
namespace topology {
namespace {

void join(std::string* to, const std::string& reason) {
  if (!to->empty()) *to += "; ";
  *to += reason;
}

std::string failed(const cuda::NvmlApi* api, const char* call, nvmlReturn_t r) {
  return std::string(call) + ": " + cuda::nvml_error_text(api, r);
}

void read_nvlink(const cuda::NvmlApi* api, nvmlDevice_t h, Gpu* gpu) {
  if (!api->nvlink_state) {
    join(&gpu->unknown, "NVLink: libnvidia-ml has no nvmlDeviceGetNvLinkState");
    return;
  }
  int up = 0;
  unsigned int first_up = NVML_NVLINK_MAX_LINKS;
  for (unsigned int link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    nvmlEnableState_t active = NVML_FEATURE_DISABLED;
    nvmlReturn_t r = api->nvlink_state(h, link, &active);
    if (r == NVML_ERROR_NOT_SUPPORTED && link == 0) break;  // no NVLink on this GPU
    if (r == NVML_ERROR_INVALID_ARGUMENT || r == NVML_ERROR_NOT_SUPPORTED) break;  // past its last link
    if (r != NVML_SUCCESS) {
      join(&gpu->unknown, "NVLink: " + failed(api, "nvmlDeviceGetNvLinkState", r));
      return;
    }
    if (active != NVML_FEATURE_ENABLED) continue;
    if (up == 0) first_up = link;
    ++up;
  }
  gpu->nvlink_links = up;
  if (up == 0) return;
  unsigned int version = 0;
  nvmlReturn_t r = api->nvlink_version ? api->nvlink_version(h, first_up, &version) : NVML_ERROR_FUNCTION_NOT_FOUND;
  if (r != NVML_SUCCESS) {
    join(&gpu->unknown, "NVLink version: " + (api->nvlink_version ? failed(api, "nvmlDeviceGetNvLinkVersion", r)
                                                                  : "libnvidia-ml has no nvmlDeviceGetNvLinkVersion"));
    return;
  }
  gpu->nvlink_generation = nvlink_generation(version);
  if (gpu->nvlink_generation == 0) {
    join(&gpu->unknown, "NVLink version " + std::to_string(version) + " is not one this gpuslack knows");
    return;
  }
  gpu->nvlink_gbps = up * nvlink_link_gbps(gpu->nvlink_generation);
}

// One PCIe figure: `slot` answered into *out, or the reason joined.
void pcie_figure(const cuda::NvmlApi* api, nvmlReturn_t (*fn)(nvmlDevice_t, unsigned int*), const char* name,
                 nvmlDevice_t h, int* out, std::string* unknown) {
  if (!fn) {
    join(unknown, std::string("PCIe: libnvidia-ml has no ") + name);
    return;
  }
  unsigned int v = 0;
  nvmlReturn_t r = fn(h, &v);
  if (r != NVML_SUCCESS) {
    join(unknown, "PCIe: " + failed(api, name, r));
    return;
  }
  *out = static_cast<int>(v);
}

}  // namespace

void read_nvml_gpu(const cuda::NvmlApi* api, nvmlDevice_t h, Gpu* gpu) {
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  if (nvmlReturn_t r = api->name(h, name, sizeof(name)); r == NVML_SUCCESS) {
    gpu->name = name;
  } else {
    join(&gpu->unknown, "name: " + failed(api, "nvmlDeviceGetName", r));
  }
  read_nvlink(api, h, gpu);
  pcie_figure(api, api->curr_pcie_link_generation, "nvmlDeviceGetCurrPcieLinkGeneration", h, &gpu->pcie_generation,
              &gpu->unknown);
  pcie_figure(api, api->curr_pcie_link_width, "nvmlDeviceGetCurrPcieLinkWidth", h, &gpu->pcie_width, &gpu->unknown);
  pcie_figure(api, api->max_pcie_link_generation, "nvmlDeviceGetMaxPcieLinkGeneration", h,
              &gpu->pcie_max_generation, &gpu->unknown);
  pcie_figure(api, api->max_pcie_link_width, "nvmlDeviceGetMaxPcieLinkWidth", h, &gpu->pcie_max_width,
              &gpu->unknown);
  gpu->pcie_gbps = pcie_lane_gbps(gpu->pcie_max_generation) * gpu->pcie_max_width;
}

}  // namespace topology
}  // namespace gpuslack

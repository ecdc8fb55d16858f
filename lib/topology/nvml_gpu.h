// What NVML says of one GPU's links: its name, the NVLink links up with
// their generation and bandwidth, and its PCIe link now and at most
// (cuda/nvml_api.h; the rates are link_rates.h's).
//
// NVLink: nvmlDeviceGetNvLinkState for links 0 .. NVML_NVLINK_MAX_LINKS-1;
// NVML_ERROR_NOT_SUPPORTED on link 0 means a GPU without NVLink (0 links,
// known), NVML_ERROR_INVALID_ARGUMENT past the device's last link ends the
// count. The generation is that of the first link up
// (nvmlDeviceGetNvLinkVersion). PCIe: the bandwidth is the maximum
// generation and width (what device and slot allow together), since a GPU
// lowers its current generation while idle.
//
// When: topology.h calls it on the reporter thread, NVML initialized.
// Thread safety: pure, but for the NVML calls (any thread).
#pragma once

#include <nvml.h>

#include "cuda/nvml_api.h"
#include "topology/node.h"

namespace gpuslack {
namespace topology {

// Fills `gpu`'s name, NVLink and PCIe figures from device `h`; what NVML
// did not answer goes into gpu->unknown with NVML's reason.
void read_nvml_gpu(const cuda::NvmlApi* api, nvmlDevice_t h, Gpu* gpu);

}  // namespace topology
}  // namespace gpuslack

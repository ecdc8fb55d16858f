// The NVML functions the device health sampler (health/sampler.h) and the
// topology reader (topology/topology.h) call, found at run time in libnvidia-ml.so.1, never linked (docs/design.md,
// principle 2): the driver's own library, so the loader's search finds it
// wherever the driver is installed.
//
// nvml() loads the table once and returns it, or nullptr when the library
// is missing or lacks a required entry point; why_no_nvml() says which. It
// does not call nvmlInit: the caller does, off the application's threads.
// Clock event reasons: nvmlDeviceGetCurrentClocksEventReasons, or in a
// driver older than 535 its former name ...ClocksThrottleReasons (the same
// signature and bits); one of the two is required.
//
// The topology's entries (device count, NVLink, PCIe link) are optional:
// a driver without one leaves it null and the table still loads; the
// topology then says which entry was missing (by its NVML name, given
// beside each).
//
// Thread safety: any thread; the table is immutable once published.
#pragma once

#include <nvml.h>

namespace gpuslack {
namespace cuda {

// NVML's signatures (nvml.h), written out rather than taken with decltype:
// nvmlDeviceGetTemperature is marked deprecated in NVML 13's header, and
// is still what every driver answers.
struct NvmlApi {
  nvmlReturn_t (*init)();  // nvmlInit_v2
  nvmlReturn_t (*shutdown)();
  const char* (*error_string)(nvmlReturn_t result);
  nvmlReturn_t (*handle_by_pci_bus_id)(const char* bus_id, nvmlDevice_t* device);  // _v2
  nvmlReturn_t (*name)(nvmlDevice_t device, char* name, unsigned int length);
  nvmlReturn_t (*uuid)(nvmlDevice_t device, char* uuid, unsigned int length);
  nvmlReturn_t (*clock_info)(nvmlDevice_t device, nvmlClockType_t type, unsigned int* mhz);
  nvmlReturn_t (*max_clock_info)(nvmlDevice_t device, nvmlClockType_t type, unsigned int* mhz);
  nvmlReturn_t (*clocks_event_reasons)(nvmlDevice_t device, unsigned long long* reasons);
  nvmlReturn_t (*temperature)(nvmlDevice_t device, nvmlTemperatureSensors_t sensor, unsigned int* celsius);
  nvmlReturn_t (*power_usage)(nvmlDevice_t device, unsigned int* milliwatts);
  nvmlReturn_t (*enforced_power_limit)(nvmlDevice_t device, unsigned int* milliwatts);
  nvmlReturn_t (*memory_info)(nvmlDevice_t device, nvmlMemory_t* memory);

  // Optional (null when the library lacks them): the topology's.
  nvmlReturn_t (*device_count)(unsigned int* count);  // nvmlDeviceGetCount_v2
  // nvmlDeviceGetNvLinkState, nvmlDeviceGetNvLinkVersion, then
  // nvmlDeviceGet{Curr,Max}PcieLink{Generation,Width}.
  nvmlReturn_t (*nvlink_state)(nvmlDevice_t device, unsigned int link, nvmlEnableState_t* active);
  // An nvmlNvlinkVersion_t (NVML_NVLINK_VERSION_4_0 is 6), not the NVLink
  // generation: topology/nvlink.h maps one to the other.
  nvmlReturn_t (*nvlink_version)(nvmlDevice_t device, unsigned int link, unsigned int* version);
  nvmlReturn_t (*curr_pcie_link_generation)(nvmlDevice_t device, unsigned int* generation);
  nvmlReturn_t (*curr_pcie_link_width)(nvmlDevice_t device, unsigned int* width);
  // The most the device and the slot it sits in allow together.
  nvmlReturn_t (*max_pcie_link_generation)(nvmlDevice_t device, unsigned int* generation);
  nvmlReturn_t (*max_pcie_link_width)(nvmlDevice_t device, unsigned int* width);

  // Optional: MIG (health/sampler.h, Note [A MIG device's own handle]):
  // nvmlDeviceGetMigMode, nvmlDeviceGetHandleByUUID,
  // nvmlDeviceGetMaxMigDeviceCount, nvmlDeviceGetMigDeviceHandleByIndex.
  nvmlReturn_t (*mig_mode)(nvmlDevice_t device, unsigned int* current, unsigned int* pending);
  nvmlReturn_t (*handle_by_uuid)(const char* uuid, nvmlDevice_t* device);
  nvmlReturn_t (*max_mig_device_count)(nvmlDevice_t device, unsigned int* count);
  nvmlReturn_t (*mig_device_handle_by_index)(nvmlDevice_t device, unsigned int index, nvmlDevice_t* mig);
};

const NvmlApi* nvml();
// Why nvml() returned nullptr ("" when it did not, or before the first call).
const char* why_no_nvml();

// NVML's text for `r` when the table has it, else the number.
const char* nvml_error_text(const NvmlApi* api, nvmlReturn_t r);

}  // namespace cuda
}  // namespace gpuslack

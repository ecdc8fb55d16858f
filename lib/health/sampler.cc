#include "health/sampler.h"

#include <cuda.h>

#include <cstdio>
#include <mutex>
#include <new>

#include "base/clock.h"
#include "cuda/driver_api.h"
#include "cuda/nvml_api.h"
#include "log/log.h"

namespace gpuslack {
namespace health {
namespace {

constexpr int kMaxDevices = 16;  // GPUs of one node a process uses; more are not sampled

struct Device {
  bool tried = false;   // mapping attempted
  nvmlDevice_t handle = nullptr;  // null: not mapped
  std::string name, uuid;
  DeviceAggregate aggregate;
};

struct State {
  bool enabled = false;
  double origin_s = 0;
  bool tried_init = false;
  const cuda::NvmlApi* api = nullptr;  // set once nvmlInit succeeded
  std::string why;                     // why unavailable
  Device devices[kMaxDevices];
};

std::mutex g_mu;
State* g_state = nullptr;  // under g_mu; made once, kept until the process ends

State& state() {
  if (!g_state) g_state = new State();
  return *g_state;
}

// The NVML handle of CUDA ordinal `ordinal`, mapped once.
nvmlDevice_t device_handle(State& s, const cuda::DriverApi* drv, int ordinal) {
  Device& d = s.devices[ordinal];
  if (d.tried) return d.handle;
  d.tried = true;
  CUdevice dev = 0;
  int domain = 0, bus = 0, slot = 0;
  if (drv->device_get(&dev, ordinal) != CUDA_SUCCESS ||
      drv->device_get_attribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev) != CUDA_SUCCESS ||
      drv->device_get_attribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev) != CUDA_SUCCESS ||
      drv->device_get_attribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev) != CUDA_SUCCESS) {
    log::warn("device health: cannot read the PCI bus id of device {}; it is not sampled", ordinal);
    return nullptr;
  }
  char bus_id[32];
  std::snprintf(bus_id, sizeof(bus_id), "%08x:%02x:%02x.0", domain, bus, slot);
  nvmlDevice_t h = nullptr;
  if (nvmlReturn_t r = s.api->handle_by_pci_bus_id(bus_id, &h); r != NVML_SUCCESS) {
    log::warn("device health: NVML has no device at PCI {} (CUDA device {}): {}", bus_id, ordinal,
              cuda::nvml_error_text(s.api, r));
    return nullptr;
  }
  char text[NVML_DEVICE_NAME_V2_BUFFER_SIZE > NVML_DEVICE_UUID_V2_BUFFER_SIZE ? NVML_DEVICE_NAME_V2_BUFFER_SIZE
                                                                               : NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  if (s.api->name(h, text, sizeof(text)) == NVML_SUCCESS) d.name = text;
  if (s.api->uuid(h, text, sizeof(text)) == NVML_SUCCESS) d.uuid = text;
  d.handle = h;
  return h;
}

Reading read(const cuda::NvmlApi* api, nvmlDevice_t h, double t_s) {
  Reading r;
  r.t_s = t_s;
  r.has_clock = api->clock_info(h, NVML_CLOCK_SM, &r.sm_mhz) == NVML_SUCCESS;
  if (r.has_clock && api->max_clock_info(h, NVML_CLOCK_SM, &r.sm_max_mhz) != NVML_SUCCESS) r.sm_max_mhz = 0;
  unsigned long long reasons = 0;
  r.has_reasons = api->clocks_event_reasons(h, &reasons) == NVML_SUCCESS;
  r.reasons = reasons;
  r.has_temperature = api->temperature(h, NVML_TEMPERATURE_GPU, &r.temperature_c) == NVML_SUCCESS;
  r.has_power = api->power_usage(h, &r.power_mw) == NVML_SUCCESS;
  if (api->enforced_power_limit(h, &r.power_limit_mw) != NVML_SUCCESS) r.power_limit_mw = 0;
  nvmlMemory_t memory{};
  r.has_memory = api->memory_info(h, &memory) == NVML_SUCCESS;
  r.memory_used_bytes = memory.used;
  return r;
}

// Under g_mu, NVML up.
void read_devices(State& s) {
  const cuda::DriverApi* drv = cuda::driver();
  if (!drv) return;
  int count = 0;
  if (drv->device_get_count(&count) != CUDA_SUCCESS) return;  // the driver is not initialized yet
  const double t_s = clock::monotonic_seconds() - s.origin_s;
  for (int ordinal = 0; ordinal < count && ordinal < kMaxDevices; ++ordinal) {
    CUdevice dev = 0;
    unsigned flags = 0;
    int active = 0;
    if (drv->device_get(&dev, ordinal) != CUDA_SUCCESS ||
        drv->primary_ctx_get_state(dev, &flags, &active) != CUDA_SUCCESS || !active)
      continue;
    if (nvmlDevice_t h = device_handle(s, drv, ordinal)) s.devices[ordinal].aggregate.add(read(s.api, h, t_s));
  }
}

}  // namespace

const char* status_name(Status s) {
  switch (s) {
    case Status::kOff: return "off";
    case Status::kUnavailable: return "unavailable";
    case Status::kMeasured: return "measured";
  }
  return "off";
}

void configure(bool on, double origin_s) {
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = state();
  s.enabled = on;
  s.origin_s = origin_s;
}

bool enabled() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_state && g_state->enabled;
}

void sample() {
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = state();
  if (!s.enabled) return;
  if (!s.tried_init) {
    s.tried_init = true;
    const cuda::NvmlApi* api = cuda::nvml();
    if (!api) {
      s.why = cuda::why_no_nvml();
    } else if (nvmlReturn_t r = api->init(); r != NVML_SUCCESS) {
      s.why = std::string("nvmlInit failed: ") + cuda::nvml_error_text(api, r);
    } else {
      s.api = api;  // never shut down: a summary may still read at exit
    }
    if (!s.api) log::info("device health unavailable: {}", s.why);
  }
  if (s.api) read_devices(s);
}

void sample_if_ready() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_state && g_state->enabled && g_state->api) read_devices(*g_state);
}

Snapshot snapshot() {
  std::lock_guard<std::mutex> lock(g_mu);
  Snapshot out;
  State& s = state();
  if (!s.enabled) return out;
  if (!s.api) {
    out.status = Status::kUnavailable;
    out.detail = s.tried_init ? s.why : "the run ended before the first sample";
    return out;
  }
  out.status = Status::kMeasured;
  for (int i = 0; i < kMaxDevices; ++i) {
    const Device& d = s.devices[i];
    if (d.handle) out.devices.push_back(d.aggregate.row(i, d.name, d.uuid));
  }
  return out;
}

void after_fork_child() {
  new (&g_mu) std::mutex();
  g_state = nullptr;  // the parent's, left unread
}

}  // namespace health
}  // namespace gpuslack

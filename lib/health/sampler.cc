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
  nvmlDevice_t handle = nullptr;  // null: not mapped; the GPU's (a MIG instance's parent)
  nvmlDevice_t mig = nullptr;     // the MIG instance's own handle, when it is one
  const char* handle_kind = "gpu";  // DeviceHealth::nvml_handle
  std::string name, uuid;
  DeviceAggregate aggregate;
};

struct State {
  bool enabled = false;
  double origin_s = 0;
  bool tried_init = false;
  bool closed = false;       // the last samples were taken
  bool device_read = false;  // a device in use was read
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

// NVML's text of a UUID's 16 bytes, after `prefix` ("GPU-", "MIG-").
std::string uuid_text(const char* prefix, const CUuuid& u) {
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  char text[64];
  std::snprintf(text, sizeof(text), "%s%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", prefix,
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return text;
}

// Note [A MIG device's own handle]: on a GPU in MIG mode the PCI bus id
// names the parent GPU, whose NVML memory and power cover every tenant
// (and which a container may not be allowed to read). A CUDA device there
// is one MIG instance, and cuDeviceGetUuid gives the instance's UUID
// ("MIG-<uuid>" in NVML's text). So, once the parent is found by bus id and
// nvmlDeviceGetMigMode says MIG is on, the instance's own handle is looked
// up by that UUID (nvmlDeviceGetHandleByUUID), else among the parent's MIG
// devices (nvmlDeviceGetMigDeviceHandleByIndex) by UUID. Memory is then
// read from the instance's handle; clocks, clock event reasons and
// temperature from the parent (one GPU's, the same for every tenant);
// power not at all (only the whole GPU's exists). The row says which:
// nvml_handle "gpu", "mig", or "mig_parent" when the instance's handle was
// not found and the parent's figures (every tenant's) were read.
nvmlDevice_t mig_handle(State& s, const cuda::DriverApi* drv, CUdevice dev, nvmlDevice_t parent) {
  unsigned current = 0, pending = 0;
  if (!s.api->mig_mode || s.api->mig_mode(parent, &current, &pending) != NVML_SUCCESS ||
      current != NVML_DEVICE_MIG_ENABLE)
    return nullptr;
  CUuuid u{};
  if (!drv->device_get_uuid || drv->device_get_uuid(&u, dev) != CUDA_SUCCESS) return parent;
  const std::string mig_uuid = uuid_text("MIG-", u);
  nvmlDevice_t h = nullptr;
  if (s.api->handle_by_uuid && s.api->handle_by_uuid(mig_uuid.c_str(), &h) == NVML_SUCCESS && h) return h;
  unsigned count = 0;
  if (!s.api->max_mig_device_count || !s.api->mig_device_handle_by_index ||
      s.api->max_mig_device_count(parent, &count) != NVML_SUCCESS)
    return parent;
  char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  for (unsigned i = 0; i < count; ++i) {
    if (s.api->mig_device_handle_by_index(parent, i, &h) == NVML_SUCCESS &&
        s.api->uuid(h, text, sizeof(text)) == NVML_SUCCESS && mig_uuid == text)
      return h;
  }
  return parent;
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
  // Note [A MIG device's own handle].
  if (nvmlDevice_t mig = mig_handle(s, drv, dev, h)) {
    d.handle_kind = mig == h ? "mig_parent" : "mig";
    if (mig != h) d.mig = mig;
    if (mig == h) log::warn("device health: CUDA device {} is a MIG instance whose own NVML handle was not found; "
                            "its figures are the whole GPU's, every tenant's", ordinal);
  }
  nvmlDevice_t named = d.mig ? d.mig : h;
  if (s.api->name(named, text, sizeof(text)) == NVML_SUCCESS) d.name = text;
  if (s.api->uuid(named, text, sizeof(text)) == NVML_SUCCESS) d.uuid = text;
  d.handle = h;
  return h;
}

// `mig`: the MIG instance's own handle, or null (Note [A MIG device's own
// handle]).
Reading read(const cuda::NvmlApi* api, nvmlDevice_t h, nvmlDevice_t mig, double t_s) {
  Reading r;
  r.t_s = t_s;
  r.has_clock = api->clock_info(h, NVML_CLOCK_SM, &r.sm_mhz) == NVML_SUCCESS;
  if (r.has_clock && api->max_clock_info(h, NVML_CLOCK_SM, &r.sm_max_mhz) != NVML_SUCCESS) r.sm_max_mhz = 0;
  unsigned long long reasons = 0;
  r.has_reasons = api->clocks_event_reasons(h, &reasons) == NVML_SUCCESS;
  r.reasons = reasons;
  r.has_temperature = api->temperature(h, NVML_TEMPERATURE_GPU, &r.temperature_c) == NVML_SUCCESS;
  r.has_power = !mig && api->power_usage(h, &r.power_mw) == NVML_SUCCESS;
  if (mig || api->enforced_power_limit(h, &r.power_limit_mw) != NVML_SUCCESS) r.power_limit_mw = 0;
  nvmlMemory_t memory{};
  r.has_memory = api->memory_info(mig ? mig : h, &memory) == NVML_SUCCESS;
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
    if (nvmlDevice_t h = device_handle(s, drv, ordinal)) {
      s.devices[ordinal].aggregate.add(read(s.api, h, s.devices[ordinal].mig, t_s));
      s.device_read = true;
    }
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
  if (!s.enabled || s.closed) return;
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
  if (g_state && g_state->enabled && g_state->api && !g_state->closed) read_devices(*g_state);
}

bool device_read() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_state && g_state->device_read;
}

void take_last_samples() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_state || g_state->closed) return;
  if (g_state->enabled && g_state->api) read_devices(*g_state);
  g_state->closed = true;
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
    if (!d.handle) continue;
    out.devices.push_back(d.aggregate.row(i, d.name, d.uuid));
    out.devices.back().nvml_handle = d.handle_kind;
  }
  return out;
}

void after_fork_child() {
  new (&g_mu) std::mutex();
  g_state = nullptr;  // the parent's, left unread
}

}  // namespace health
}  // namespace gpuslack

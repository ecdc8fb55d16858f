#include "topology/topology.h"

#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <new>

#include "cuda/driver_api.h"
#include "cuda/nvml_api.h"
#include "cuda/runtime_api.h"
#include "log/log.h"
#include "topology/nvml_gpu.h"

namespace gpuslack {
namespace topology {
namespace {

constexpr int kMaxDevices = 16;  // as the health sampler: GPUs of one node a process uses

struct State {
  bool enabled = false;
  bool node_read = false;
  bool closed = false;  // the last read was taken
  bool tried[kMaxDevices] = {};
  const cuda::NvmlApi* api = nullptr;  // set once nvmlInit succeeded
  std::string why_no_nvml;
  std::string sysfs_root = "/";
  NodeTopology node;  // GPUs in the order read
  size_t corrupt_logged = 0;
};

std::mutex g_mu;
State* g_state = nullptr;  // under g_mu; made once, kept until the process ends

State& state() {
  if (!g_state) g_state = new State();
  return *g_state;
}

// One line for the files that did not parse since the last one.
void log_corrupt(State& s) {
  const std::vector<std::string>& c = s.node.corrupt;
  if (c.size() <= s.corrupt_logged) return;
  if (s.corrupt_logged == 0)
    log::warn("topology: {} sysfs file(s) did not parse and are left unknown; first: {}", c.size(),
              c[s.corrupt_logged]);
  s.corrupt_logged = c.size();  // later ones are in the summary's "unknown" reasons only
}

void read_node(State& s) {
  s.node_read = true;
  s.sysfs_root = sysfs_root();
  const cuda::NvmlApi* api = cuda::nvml();
  if (!api) {
    s.why_no_nvml = cuda::why_no_nvml();
  } else if (nvmlReturn_t r = api->init(); r != NVML_SUCCESS) {
    s.why_no_nvml = std::string("nvmlInit failed: ") + cuda::nvml_error_text(api, r);
  } else {
    s.api = api;  // never shut down: the health sampler may share it
  }
  const Sysfs sysfs(s.sysfs_root);
  s.node = describe_node(sysfs, {}, "", 0);
  if (s.api && s.api->device_count) {
    unsigned int n = 0;
    if (s.api->device_count(&n) == NVML_SUCCESS) s.node.gpus_on_node = static_cast<int>(n);
  }
  s.node.gpus_unknown = s.api ? "no device in use" : "NVML unavailable: " + s.why_no_nvml;
  log_corrupt(s);
}

// The PCI bus id of CUDA ordinal `ordinal` in sysfs's form, or "".
std::string bus_id_of(const cuda::DriverApi* drv, int ordinal) {
  CUdevice dev = 0;
  int domain = 0, bus = 0, slot = 0;
  if (drv->device_get(&dev, ordinal) != CUDA_SUCCESS ||
      drv->device_get_attribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev) != CUDA_SUCCESS ||
      drv->device_get_attribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev) != CUDA_SUCCESS ||
      drv->device_get_attribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev) != CUDA_SUCCESS)
    return std::string();
  char id[32];
  std::snprintf(id, sizeof(id), "%04x:%02x:%02x.0", domain, bus, slot);
  return id;
}

Gpu read_gpu(State& s, const cuda::DriverApi* drv, int ordinal) {
  Gpu g;
  g.device = ordinal;
  g.place.bus_id = bus_id_of(drv, ordinal);
  if (g.place.bus_id.empty()) {
    g.unknown = "the driver gives no PCI bus id for device " + std::to_string(ordinal);
    return g;
  }
  if (!s.api) {
    g.unknown = "NVML unavailable: " + s.why_no_nvml;
  } else {
    // NVML's form of the id: an 8-digit domain.
    const std::string nvml_id = "0000" + g.place.bus_id;
    nvmlDevice_t h = nullptr;
    if (nvmlReturn_t r = s.api->handle_by_pci_bus_id(nvml_id.c_str(), &h); r != NVML_SUCCESS) {
      g.unknown = "NVML has no device at PCI " + nvml_id + ": " + cuda::nvml_error_text(s.api, r);
    } else {
      read_nvml_gpu(s.api, h, &g);
    }
  }
  g.place = pci_place(Sysfs(s.sysfs_root), g.place.bus_id);
  return g;
}

// Peer access between the devices read (cudaDeviceCanAccessPeer).
void read_peers(State& s) {
  for (Gpu& g : s.node.gpus) {
    g.peers.clear();
    for (const Gpu& other : s.node.gpus) {
      if (other.device == g.device) continue;
      int can = 0;
      if (cuda::device_can_access_peer(&can, g.device, other.device) == cudaSuccess && can)
        g.peers.push_back(other.device);
    }
  }
}

// Under g_mu, the node read: each device newly in use.
void read_devices(State& s) {
  const cuda::DriverApi* drv = cuda::driver();
  if (!drv) return;
  int count = 0;
  if (drv->device_get_count(&count) != CUDA_SUCCESS) return;
  bool added = false;
  for (int ordinal = 0; ordinal < count && ordinal < kMaxDevices; ++ordinal) {
    if (s.tried[ordinal]) continue;
    CUdevice dev = 0;
    unsigned flags = 0;
    int active = 0;
    if (drv->device_get(&dev, ordinal) != CUDA_SUCCESS ||
        drv->primary_ctx_get_state(dev, &flags, &active) != CUDA_SUCCESS || !active)
      continue;
    s.tried[ordinal] = true;
    s.node.gpus.push_back(read_gpu(s, drv, ordinal));
    added = true;
  }
  if (!added) return;
  std::sort(s.node.gpus.begin(), s.node.gpus.end(), [](const Gpu& a, const Gpu& b) { return a.device < b.device; });
  s.node.gpus_unknown.clear();
  read_peers(s);
  s.node.affinity = pair_gpus_with_nics(s.node.gpus, s.node.nics);
}

}  // namespace

const char* status_name(Status s) {
  switch (s) {
    case Status::kOff: return "off";
    case Status::kNotRead: return "not_read";
    case Status::kRead: return "read";
  }
  return "off";
}

bool status_from_name(const std::string& name, Status* out) {
  for (Status s : {Status::kOff, Status::kNotRead, Status::kRead}) {
    if (name == status_name(s)) {
      *out = s;
      return true;
    }
  }
  return false;
}

void configure(bool on) {
  std::lock_guard<std::mutex> lock(g_mu);
  state().enabled = on;
}

bool enabled() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_state && g_state->enabled;
}

void tick() {
  std::lock_guard<std::mutex> lock(g_mu);
  State& s = state();
  if (!s.enabled || s.closed) return;
  if (!s.node_read) read_node(s);
  read_devices(s);
}

void read_if_ready() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_state && g_state->enabled && g_state->node_read && !g_state->closed) read_devices(*g_state);
}

bool device_read() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_state && !g_state->node.gpus.empty();
}

void take_last_read() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_state || g_state->closed) return;
  if (g_state->enabled && g_state->node_read) read_devices(*g_state);
  g_state->closed = true;
}

Snapshot snapshot() {
  std::lock_guard<std::mutex> lock(g_mu);
  Snapshot out;
  State& s = state();
  if (!s.enabled) return out;
  if (!s.node_read) {
    out.status = Status::kNotRead;
    out.detail = "the run ended before the topology was read";
    return out;
  }
  out.status = Status::kRead;
  out.node = s.node;
  return out;
}

void after_fork_child() {
  new (&g_mu) std::mutex();
  g_state = nullptr;  // the parent's, left unread
}

}  // namespace topology
}  // namespace gpuslack

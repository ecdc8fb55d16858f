// libnvidia-ml.so.1 of the simulated device: the NVML calls PyTorch makes
// (c10/cuda's driver API table and its device checks look them up with
// dlsym, and with expandable segments torch calls through them without
// checking that NVML loaded). The devices are the simulated ones, no
// process listed on them: PCIe gen 5 x16 GPUs with no fabric, and with no
// NVLink unless GPUSIM_NVLINK_LINKS says how many links each has up
// (GPUSIM_NVLINK_VERSION their generation, 4 by default).
//
// NVML's header (nvml.h) is not part of the CUDA toolkit installed here: the
// types below are NVML's, declared with the values of its header. Only the
// calls that take no structure, or whose structures are not read, are
// defined, plus nvmlMemory_t (three 64-bit counts) for the memory info.
//
// Device health (gpuslack's health/sampler.h): clocks, clock event reasons,
// temperature, power and memory, with H200-like figures: SM clock 1980 MHz
// of 1980, no event reason, 52 °C, 420 W of a 700 W limit, memory used as
// the simulated device counts it. GPUSIM_NVML_THROTTLE=device:ratio[:reason]
// (sim.h, Config::throttle_*) makes one device report its clock at `ratio`
// of the maximum, that reason and 86 °C.
//
// MIG, minimally (GPUSIM_NVML_MIG=1): every GPU is in MIG mode
// (nvmlDeviceGetMigMode: current and pending enabled) with one MIG instance,
// index 0 of up to 7 (nvmlDeviceGetMaxMigDeviceCount,
// nvmlDeviceGetMigDeviceHandleByIndex), and that instance is the CUDA
// device: its UUID is cuDeviceGetUuid's bytes as "MIG-..." (the UUID CUDA
// gives a MIG device), nvmlDeviceGetHandleByUUID finds it (GPUSIM_NVML_MIG=2:
// it does not, so a client must walk the parent's MIG devices), and its
// memory info is the instance's: 1/7 of the GPU's memory, this process's
// use. The parent GPU's memory info then counts 8 GiB more in use (the
// other tenants'). Of a MIG handle only the UUID, name and memory info are
// answered; NVML documents MIG device handles as supporting a subset of
// queries (nvml.h, "MIG device handles"), and clocks, temperature and power
// are the GPU's.
//
// An NVML call with arguments it cannot answer (an unknown handle) says so
// through log_unanswered. A function that is missing altogether shows as a
// failed dlsym in the caller; the torch symbol test (tests/python/torch_sim.py)
// checks the names torch's libraries carry against this library's exports.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "sim.h"

extern "C" {
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlProcessInfo_st nvmlProcessInfo_t;
typedef struct nvmlGpuFabricInfo_v2_st nvmlGpuFabricInfoV_t;
typedef struct nvmlPciInfo_st nvmlPciInfo_t;
typedef int nvmlGpuP2PCapsIndex_t;
typedef int nvmlGpuP2PStatus_t;
typedef int nvmlIntNvLinkDeviceType_t;
typedef int nvmlClockType_t;
typedef int nvmlTemperatureSensors_t;
typedef int nvmlEnableState_t;
typedef int nvmlNvLinkCapability_t;
typedef struct nvmlMemory_st {
  unsigned long long total, free, used;
} nvmlMemory_t;
}

namespace {

constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr nvmlReturn_t NVML_ERROR_UNINITIALIZED = 1;
constexpr nvmlReturn_t NVML_ERROR_INVALID_ARGUMENT = 2;
constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
constexpr nvmlReturn_t NVML_ERROR_NOT_FOUND = 6;
constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
constexpr nvmlReturn_t NVML_ERROR_DRIVER_NOT_LOADED = 9;
constexpr nvmlGpuP2PStatus_t NVML_P2P_STATUS_OK = 0;
constexpr nvmlClockType_t NVML_CLOCK_SM = 1;
constexpr nvmlTemperatureSensors_t NVML_TEMPERATURE_GPU = 0;
constexpr unsigned kMaxSmMhz = 1980;
constexpr nvmlEnableState_t NVML_FEATURE_DISABLED = 0;
constexpr nvmlEnableState_t NVML_FEATURE_ENABLED = 1;
constexpr unsigned NVML_NVLINK_MAX_LINKS = 18;
constexpr nvmlIntNvLinkDeviceType_t NVML_NVLINK_DEVICE_TYPE_SWITCH = 0x02;
constexpr unsigned kPcieGeneration = 5, kPcieWidth = 16;

// nvmlDeviceGetNvLinkVersion answers an nvmlNvlinkVersion_t (nvml.h:
// NVML_NVLINK_VERSION_1_0 = 1, 2_0 = 2, 2_2 = 3, 3_0 = 4, 3_1 = 5, 4_0 = 6,
// 5_0 = 7), not the generation GPUSIM_NVLINK_VERSION names.
unsigned nvml_nvlink_version(int generation) {
  static const unsigned kByGeneration[] = {0, 1, 2, 4, 6, 7};
  return generation >= 1 && generation <= 5 ? kByGeneration[generation] : 0;
}

bool throttled(int d) { return d == gpusim::config().throttle_device; }

std::atomic<int> g_inits{0};

// A device handle is its index + 1 (never NULL). Device d sits at PCI
// 0000:00:<d>.0, as cudaGetDeviceProperties and cudaDeviceGetPCIBusId say.
nvmlDevice_t handle(int d) { return reinterpret_cast<nvmlDevice_t>(static_cast<uintptr_t>(d + 1)); }
int index_of(nvmlDevice_t h) {
  auto i = static_cast<int>(reinterpret_cast<uintptr_t>(h)) - 1;
  return gpusim::valid_device(i) ? i : -1;
}

// The UUID of cuDeviceGetUuid's bytes ("gpusim", then the index), as NVML
// prints one.
void uuid_of(int d, char* out, size_t len) {
  std::snprintf(out, len, "GPU-67707573-696d-0000-0000-0000000000%02x", d);
}

// MIG (GPUSIM_NVML_MIG): 0 off, 1 on, 2 on with the MIG UUID not found by
// nvmlDeviceGetHandleByUUID.
int mig() {
  static const int m = [] {
    const char* v = std::getenv("GPUSIM_NVML_MIG");
    return v && *v ? std::atoi(v) : 0;
  }();
  return m;
}
constexpr uintptr_t kMigHandleBase = 0x10000;
constexpr unsigned kMigSlices = 7;
constexpr unsigned long long kOtherTenantsBytes = 8ull << 30;
nvmlDevice_t mig_handle_of(int d) { return reinterpret_cast<nvmlDevice_t>(kMigHandleBase + static_cast<uintptr_t>(d) + 1); }
// The device of a MIG handle, or -1.
int mig_index_of(nvmlDevice_t h) {
  auto v = reinterpret_cast<uintptr_t>(h);
  if (!mig() || v <= kMigHandleBase) return -1;
  int i = static_cast<int>(v - kMigHandleBase) - 1;
  return gpusim::valid_device(i) ? i : -1;
}
void mig_uuid_of(int d, char* out, size_t len) {
  std::snprintf(out, len, "MIG-67707573-696d-0000-0000-0000000000%02x", d);
}

nvmlReturn_t check(nvmlDevice_t h, const char* call, int* d) {
  if (g_inits.load() <= 0) return NVML_ERROR_UNINITIALIZED;
  *d = index_of(h);
  if (*d < 0) {
    gpusim::log_unanswered(call, "unknown device handle");
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  return NVML_SUCCESS;
}

}  // namespace

GPUSIM_EXPORT nvmlReturn_t nvmlInit_v2(void) {
  if (gpusim::config().no_driver) return NVML_ERROR_DRIVER_NOT_LOADED;
  g_inits.fetch_add(1);
  return NVML_SUCCESS;
}
GPUSIM_EXPORT nvmlReturn_t nvmlInit(void) { return nvmlInit_v2(); }
GPUSIM_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
  (void)flags;
  return nvmlInit_v2();
}
GPUSIM_EXPORT nvmlReturn_t nvmlShutdown(void) {
  if (g_inits.fetch_sub(1) <= 0) {
    g_inits.fetch_add(1);
    return NVML_ERROR_UNINITIALIZED;
  }
  return NVML_SUCCESS;
}
GPUSIM_EXPORT const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    default: return "Unknown Error";
  }
}
GPUSIM_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* v) {
  if (!v) return NVML_ERROR_INVALID_ARGUMENT;
  *v = CUDA_VERSION;
  return NVML_SUCCESS;
}
GPUSIM_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* v) { return nvmlSystemGetCudaDriverVersion_v2(v); }
// The driver's version as NVML writes it ("580.95.05"): the branch of
// GPUSIM_DRIVER_VERSION (CUPTI's knob, default 580) with a fixed release.
GPUSIM_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  if (gpusim::config().no_driver) return NVML_ERROR_UNINITIALIZED;
  if (!version || length == 0) return NVML_ERROR_INVALID_ARGUMENT;
  const char* branch = std::getenv("GPUSIM_DRIVER_VERSION");
  int n = std::snprintf(version, length, "%d.95.05", branch && *branch ? std::atoi(branch) : 580);
  return n >= 0 && static_cast<unsigned>(n) < length ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
}

// ---- devices ----
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* n) {
  if (g_inits.load() <= 0) return NVML_ERROR_UNINITIALIZED;
  if (!n) return NVML_ERROR_INVALID_ARGUMENT;
  *n = static_cast<unsigned>(gpusim::config().device_count);
  return NVML_SUCCESS;
}
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t* out) {
  if (g_inits.load() <= 0) return NVML_ERROR_UNINITIALIZED;
  if (!out || !gpusim::valid_device(static_cast<int>(i))) return NVML_ERROR_INVALID_ARGUMENT;
  *out = handle(static_cast<int>(i));
  return NVML_SUCCESS;
}
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* out) {
  if (g_inits.load() <= 0) return NVML_ERROR_UNINITIALIZED;
  if (!uuid || !out) return NVML_ERROR_INVALID_ARGUMENT;
  for (int d = 0; d < gpusim::config().device_count; ++d) {
    char u[96];
    uuid_of(d, u, sizeof(u));
    if (std::strcmp(u, uuid) == 0) {
      *out = handle(d);
      return NVML_SUCCESS;
    }
    mig_uuid_of(d, u, sizeof(u));
    if (mig() == 1 && std::strcmp(u, uuid) == 0) {
      *out = mig_handle_of(d);
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t h, unsigned int* current, unsigned int* pending) {
  if (g_inits.load() <= 0) return NVML_ERROR_UNINITIALIZED;
  if (mig_index_of(h) >= 0) return NVML_ERROR_NOT_SUPPORTED;
  int d;
  if (nvmlReturn_t r = check(h, "nvmlDeviceGetMigMode", &d)) return r;
  if (!current || !pending) return NVML_ERROR_INVALID_ARGUMENT;
  *current = *pending = mig() ? 1 : 0;  // NVML_DEVICE_MIG_ENABLE / _DISABLE
  return NVML_SUCCESS;
}
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t h, unsigned int* count) {
  int d;
  if (nvmlReturn_t r = check(h, "nvmlDeviceGetMaxMigDeviceCount", &d)) return r;
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  if (!mig()) return NVML_ERROR_NOT_SUPPORTED;
  *count = kMigSlices;
  return NVML_SUCCESS;
}
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t h, unsigned int index, nvmlDevice_t* out) {
  int d;
  if (nvmlReturn_t r = check(h, "nvmlDeviceGetMigDeviceHandleByIndex", &d)) return r;
  if (!out) return NVML_ERROR_INVALID_ARGUMENT;
  if (!mig()) return NVML_ERROR_NOT_SUPPORTED;
  if (index != 0) return NVML_ERROR_NOT_FOUND;
  *out = mig_handle_of(d);
  return NVML_SUCCESS;
}
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, nvmlDevice_t* out) {
  if (g_inits.load() <= 0) return NVML_ERROR_UNINITIALIZED;
  if (!bus_id || !out) return NVML_ERROR_INVALID_ARGUMENT;
  // Any domain width ("0000:00:01.0" from the runtime, "00000000:00:01.0"
  // as torch prints cudaDeviceProp's numbers).
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  if (std::sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) return NVML_ERROR_INVALID_ARGUMENT;
  if (domain != 0 || bus != 0 || fn != 0 || !gpusim::valid_device(static_cast<int>(dev))) return NVML_ERROR_NOT_FOUND;
  *out = handle(static_cast<int>(dev));
  return NVML_SUCCESS;
}
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t h, unsigned int* i) {
  int d;
  if (nvmlReturn_t r = check(h, "nvmlDeviceGetIndex", &d)) return r;
  if (!i) return NVML_ERROR_INVALID_ARGUMENT;
  *i = static_cast<unsigned>(d);
  return NVML_SUCCESS;
}
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t h, char* uuid, unsigned int len) {
  int d = mig_index_of(h);
  bool is_mig = d >= 0;
  if (!is_mig)
    if (nvmlReturn_t r = check(h, "nvmlDeviceGetUUID", &d)) return r;
  if (!uuid) return NVML_ERROR_INVALID_ARGUMENT;
  char u[96];
  if (is_mig)
    mig_uuid_of(d, u, sizeof(u));
  else
    uuid_of(d, u, sizeof(u));
  if (len < std::strlen(u) + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(uuid, u, std::strlen(u) + 1);
  return NVML_SUCCESS;
}
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t h, char* name, unsigned int len) {
  int d = mig_index_of(h);
  bool is_mig = d >= 0;
  if (!is_mig)
    if (nvmlReturn_t r = check(h, "nvmlDeviceGetName", &d)) return r;
  if (!name || len == 0) return NVML_ERROR_INVALID_ARGUMENT;
  std::snprintf(name, len, is_mig ? "gpusim simulated device %d MIG 1g" : "gpusim simulated device %d", d);
  return NVML_SUCCESS;
}
// Every pair of simulated devices can reach each other (as
// cudaDeviceCanAccessPeer says).
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t a, nvmlDevice_t b, nvmlGpuP2PCapsIndex_t caps,
                                                 nvmlGpuP2PStatus_t* status) {
  (void)caps;
  int da, db;
  if (nvmlReturn_t r = check(a, "nvmlDeviceGetP2PStatus", &da)) return r;
  if (nvmlReturn_t r = check(b, "nvmlDeviceGetP2PStatus", &db)) return r;
  if (!status) return NVML_ERROR_INVALID_ARGUMENT;
  *status = NVML_P2P_STATUS_OK;
  return NVML_SUCCESS;
}
// No process is listed (the simulated device is not shared). Answers the
// unversioned (v1) name and the v3 one alike: with a count of zero their
// structures are never written.
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t h, unsigned int* count,
                                                                   nvmlProcessInfo_t* infos) {
  (void)infos;
  int d;
  if (nvmlReturn_t r = check(h, "nvmlDeviceGetComputeRunningProcesses", &d)) return r;
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  *count = 0;
  return NVML_SUCCESS;
}
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t h, unsigned int* count,
                                                                nvmlProcessInfo_t* infos) {
  return nvmlDeviceGetComputeRunningProcesses_v3(h, count, infos);
}
// No fabric (the GPU fabric of a GB200 NVL72 rack is not simulated).
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t h, nvmlGpuFabricInfoV_t* info) {
  (void)info;
  int d;
  if (nvmlReturn_t r = check(h, "nvmlDeviceGetGpuFabricInfoV", &d)) return r;
  return NVML_ERROR_NOT_SUPPORTED;
}

// ---- NVLink (GPUSIM_NVLINK_LINKS, Config::nvlink_*) ----
// A GPU with no link up answers as one without NVLink:
// NVML_ERROR_NOT_SUPPORTED. Otherwise links 0 .. links-1 are up, the rest
// of NVML_NVLINK_MAX_LINKS down, each to an NVSwitch (as on HGX boards);
// a link past the maximum is an invalid argument, as NVML documents.
namespace {
nvmlReturn_t check_link(nvmlDevice_t h, unsigned link, const char* call, int* d) {
  if (nvmlReturn_t r = check(h, call, d)) return r;
  if (gpusim::config().nvlink_links == 0) return NVML_ERROR_NOT_SUPPORTED;
  if (link >= NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  return NVML_SUCCESS;
}
bool link_up(unsigned link) { return link < static_cast<unsigned>(gpusim::config().nvlink_links); }
}  // namespace

GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t h, unsigned int link, nvmlEnableState_t* active) {
  int d;
  if (nvmlReturn_t r = check_link(h, link, "nvmlDeviceGetNvLinkState", &d)) return r;
  if (!active) return NVML_ERROR_INVALID_ARGUMENT;
  *active = link_up(link) ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t h, unsigned int link, unsigned int* version) {
  int d;
  if (nvmlReturn_t r = check_link(h, link, "nvmlDeviceGetNvLinkVersion", &d)) return r;
  if (!version) return NVML_ERROR_INVALID_ARGUMENT;
  *version = nvml_nvlink_version(gpusim::config().nvlink_version);
  return NVML_SUCCESS;
}
// Every capability (P2P, system memory, atomics) on a link that is up.
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkCapability(nvmlDevice_t h, unsigned int link,
                                                         nvmlNvLinkCapability_t capability, unsigned int* result) {
  int d;
  if (nvmlReturn_t r = check_link(h, link, "nvmlDeviceGetNvLinkCapability", &d)) return r;
  if (!result || capability < 0 || capability > 5) return NVML_ERROR_INVALID_ARGUMENT;
  *result = link_up(link) ? 1 : 0;
  return NVML_SUCCESS;
}
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t h, unsigned int link,
                                                               nvmlIntNvLinkDeviceType_t* type) {
  int d;
  if (nvmlReturn_t r = check_link(h, link, "nvmlDeviceGetNvLinkRemoteDeviceType", &d)) return r;
  if (!type) return NVML_ERROR_INVALID_ARGUMENT;
  if (!link_up(link)) return NVML_ERROR_NOT_SUPPORTED;
  *type = NVML_NVLINK_DEVICE_TYPE_SWITCH;
  return NVML_SUCCESS;
}
// The remote end is an NVSwitch, which the simulation does not describe
// (nvmlPciInfo_t is not declared here): not supported, as before.
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t h, unsigned int link,
                                                               nvmlPciInfo_t* pci) {
  (void)link, (void)pci;
  int d;
  if (nvmlReturn_t r = check(h, "nvmlDeviceGetNvLinkRemotePciInfo", &d)) return r;
  return NVML_ERROR_NOT_SUPPORTED;
}

// ---- PCIe: gen 5 x16, now and at most ----
namespace {
nvmlReturn_t pcie(nvmlDevice_t h, const char* call, unsigned value, unsigned int* out) {
  int d;
  if (nvmlReturn_t r = check(h, call, &d)) return r;
  if (!out) return NVML_ERROR_INVALID_ARGUMENT;
  *out = value;
  return NVML_SUCCESS;
}
}  // namespace
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t h, unsigned int* gen) {
  return pcie(h, "nvmlDeviceGetCurrPcieLinkGeneration", kPcieGeneration, gen);
}
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t h, unsigned int* width) {
  return pcie(h, "nvmlDeviceGetCurrPcieLinkWidth", kPcieWidth, width);
}
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t h, unsigned int* gen) {
  return pcie(h, "nvmlDeviceGetMaxPcieLinkGeneration", kPcieGeneration, gen);
}
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetGpuMaxPcieLinkGeneration(nvmlDevice_t h, unsigned int* gen) {
  return pcie(h, "nvmlDeviceGetGpuMaxPcieLinkGeneration", kPcieGeneration, gen);
}
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t h, unsigned int* width) {
  return pcie(h, "nvmlDeviceGetMaxPcieLinkWidth", kPcieWidth, width);
}

// ---- device health (gpuslack's health/sampler.h) ----
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t h, nvmlClockType_t type, unsigned int* mhz) {
  int d;
  if (nvmlReturn_t r = check(h, "nvmlDeviceGetMaxClockInfo", &d)) return r;
  if (!mhz) return NVML_ERROR_INVALID_ARGUMENT;
  if (type != NVML_CLOCK_SM) return NVML_ERROR_NOT_SUPPORTED;
  *mhz = kMaxSmMhz;
  return NVML_SUCCESS;
}
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t h, nvmlClockType_t type, unsigned int* mhz) {
  int d;
  if (nvmlReturn_t r = check(h, "nvmlDeviceGetClockInfo", &d)) return r;
  if (!mhz) return NVML_ERROR_INVALID_ARGUMENT;
  if (type != NVML_CLOCK_SM) return NVML_ERROR_NOT_SUPPORTED;
  *mhz = throttled(d) ? static_cast<unsigned>(kMaxSmMhz * gpusim::config().throttle_ratio + 0.5) : kMaxSmMhz;
  return NVML_SUCCESS;
}
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t h, unsigned long long* reasons) {
  int d;
  if (nvmlReturn_t r = check(h, "nvmlDeviceGetCurrentClocksEventReasons", &d)) return r;
  if (!reasons) return NVML_ERROR_INVALID_ARGUMENT;
  *reasons = throttled(d) ? gpusim::config().throttle_reason : 0;
  return NVML_SUCCESS;
}
// The name before driver 535 (same bits).
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t h, unsigned long long* reasons) {
  return nvmlDeviceGetCurrentClocksEventReasons(h, reasons);
}
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t h, nvmlTemperatureSensors_t sensor,
                                                   unsigned int* celsius) {
  int d;
  if (nvmlReturn_t r = check(h, "nvmlDeviceGetTemperature", &d)) return r;
  if (!celsius) return NVML_ERROR_INVALID_ARGUMENT;
  if (sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_NOT_SUPPORTED;
  *celsius = throttled(d) ? 86 : 52;
  return NVML_SUCCESS;
}
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t h, unsigned int* milliwatts) {
  int d;
  if (nvmlReturn_t r = check(h, "nvmlDeviceGetPowerUsage", &d)) return r;
  if (!milliwatts) return NVML_ERROR_INVALID_ARGUMENT;
  *milliwatts = 420000;
  return NVML_SUCCESS;
}
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t h, unsigned int* milliwatts) {
  int d;
  if (nvmlReturn_t r = check(h, "nvmlDeviceGetEnforcedPowerLimit", &d)) return r;
  if (!milliwatts) return NVML_ERROR_INVALID_ARGUMENT;
  *milliwatts = 700000;
  return NVML_SUCCESS;
}
GPUSIM_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t h, nvmlMemory_t* memory) {
  int d = mig_index_of(h);
  bool is_mig = d >= 0;
  if (!is_mig)
    if (nvmlReturn_t r = check(h, "nvmlDeviceGetMemoryInfo", &d)) return r;
  if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
  // A MIG instance: its slice and this process's use; the parent GPU in MIG
  // mode: every tenant's.
  const size_t cap = gpusim::config().device_bytes / (is_mig ? kMigSlices : 1);
  const size_t used = gpusim::Memory::get().used(d) + (mig() && !is_mig ? kOtherTenantsBytes : 0);
  memory->total = cap;
  memory->used = used;
  memory->free = used < cap ? cap - used : 0;
  return NVML_SUCCESS;
}

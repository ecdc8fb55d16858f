// The simulated device's configuration, cost model and fault injection.
//
// Every number of the cost model is a field of Config (sim.h) with its
// default there; each can be overridden by GPUSIM_COST_<FIELD> (for example
// GPUSIM_COST_FREE_US=50). Sources of the defaults: README.md, "Cost model".
#include <sched.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "sim.h"

namespace gpusim {
namespace {

size_t parse_bytes(const char* s, size_t fallback) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (end == s || v < 0) return fallback;
  switch (*end) {
    case 'k': case 'K': v *= 1024.0; break;
    case 'm': case 'M': v *= 1024.0 * 1024; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
    default: break;
  }
  return static_cast<size_t>(v);
}

// Reads GPUSIM_COST_<FIELD> (the field's name in upper case).
void read_double(const char* field_name, double* field) {
  std::string name = "GPUSIM_COST_";
  for (const char* c = field_name; *c; ++c) name += static_cast<char>(std::toupper(static_cast<unsigned char>(*c)));
  if (const char* v = std::getenv(name.c_str())) {
    char* end = nullptr;
    double d = std::strtod(v, &end);
    if (end != v && d >= 0) *field = d;
    else std::fprintf(stderr, "gpusim: ignoring %s=%s (not a number)\n", name.c_str(), v);
  }
}

// GPUSIM_NVML_THROTTLE=device:ratio[:reason] (Config::throttle_*).
void read_throttle(const char* spec, Config* c) {
  static constexpr struct {
    const char* name;
    unsigned long long bit;  // nvmlClocksEventReason* (nvml.h)
  } kReasons[] = {{"sw_power_cap", 0x4}, {"hw_slowdown", 0x8}, {"sync_boost", 0x10}, {"sw_thermal", 0x20},
                  {"hw_thermal", 0x40}, {"hw_power_brake", 0x80}};
  int device = -1, used = 0;
  double ratio = 0;
  if (std::sscanf(spec, "%d:%lf%n", &device, &ratio, &used) != 2 || device < 0 || !(ratio > 0 && ratio <= 1)) {
    std::fprintf(stderr, "gpusim: ignoring GPUSIM_NVML_THROTTLE=%s (want device:ratio[:reason], 0 < ratio <= 1)\n",
                 spec);
    return;
  }
  unsigned long long bit = 0x20;  // sw_thermal
  if (spec[used] == ':') {
    bit = 0;
    for (const auto& r : kReasons)
      if (std::strcmp(spec + used + 1, r.name) == 0) bit = r.bit;
    if (!bit) {
      std::fprintf(stderr, "gpusim: ignoring GPUSIM_NVML_THROTTLE=%s (unknown reason)\n", spec);
      return;
    }
  } else if (spec[used] != '\0') {
    std::fprintf(stderr, "gpusim: ignoring GPUSIM_NVML_THROTTLE=%s (want device:ratio[:reason])\n", spec);
    return;
  }
  c->throttle_device = device;
  c->throttle_ratio = ratio;
  c->throttle_reason = bit;
}

// A non-negative number from `name`, or one stderr line and no change.
template <class T>
void read_number(const char* name, T* field) {
  const char* v = std::getenv(name);
  if (!v || !*v) return;
  char* end = nullptr;
  double d = std::strtod(v, &end);
  if (end == v || *end != '\0' || d < 0) {
    std::fprintf(stderr, "gpusim: ignoring %s=%s (not a non-negative number)\n", name, v);
    return;
  }
  *field = static_cast<T>(d);
}

// The NCCL fabric's knobs (Config::nvlink_links ... nccl_ring_default).
void read_fabric(Config* c) {
  read_number("GPUSIM_NVLINK_LINKS", &c->nvlink_links);
  if (c->nvlink_links < 0 || c->nvlink_links > 18) {
    std::fprintf(stderr, "gpusim: ignoring GPUSIM_NVLINK_LINKS=%d (want 0..18)\n", c->nvlink_links);
    c->nvlink_links = 0;
  }
  read_number("GPUSIM_NVLINK_VERSION", &c->nvlink_version);
  if (nvlink_link_gbps(c->nvlink_version) <= 0) {
    std::fprintf(stderr, "gpusim: ignoring GPUSIM_NVLINK_VERSION=%d (known: 1 to 5)\n", c->nvlink_version);
    c->nvlink_version = 4;
  }
  read_number("GPUSIM_NET_GBPS", &c->net_gbps);
  read_number("GPUSIM_NET_LATENCY_US", &c->net_latency_us);
  read_number("GPUSIM_NODE", &c->node);
  c->fabric = c->nvlink_links > 0 || c->net_gbps > 0;
  if (const char* v = std::getenv("GPUSIM_NCCL_DATA")) c->nccl_moves_data = std::atoi(v) != 0;
  if (const char* v = std::getenv("GPUSIM_NCCL_ALGO_DEFAULT")) {
    if (std::strcmp(v, "ring") == 0) c->nccl_ring_default = true;
    else if (std::strcmp(v, "tuned") != 0)
      std::fprintf(stderr, "gpusim: ignoring GPUSIM_NCCL_ALGO_DEFAULT=%s (want ring or tuned)\n", v);
  }
}

Config load() {
  Config c;
  if (const char* v = std::getenv("GPUSIM_DEVICE_COUNT")) c.device_count = std::atoi(v);
  if (c.device_count < 0) c.device_count = 0;
  if (const char* v = std::getenv("GPUSIM_DEVICE_MEMORY")) c.device_bytes = parse_bytes(v, c.device_bytes);
  if (const char* v = std::getenv("GPUSIM_NO_DRIVER")) c.no_driver = std::atoi(v) != 0;
  if (const char* v = std::getenv("GPUSIM_MALLOC_SYNC")) c.malloc_syncs = std::atoi(v) != 0;
  if (const char* v = std::getenv("GPUSIM_NO_VMM")) c.no_vmm = std::atoi(v) != 0;
  if (const char* v = std::getenv("GPUSIM_VMM_REFUSE")) {
    c.refuse_posix_fd = std::strstr(v, "posix_fd") != nullptr;
    c.refuse_rdma = std::strstr(v, "rdma") != nullptr;
    c.refuse_fabric = std::strstr(v, "fabric") != nullptr;
  }
  if (const char* v = std::getenv("GPUSIM_FABRIC_HANDLES")) c.fabric_handles = std::atoi(v) != 0;
  if (const char* v = std::getenv("GPUSIM_NCCL_TIMEOUT_S")) c.nccl_timeout_s = std::atof(v);
  if (c.nccl_timeout_s <= 0) c.nccl_timeout_s = 60;
  if (const char* v = std::getenv("GPUSIM_NCCL_PROFILER_VERSION")) c.nccl_profiler_version = std::atoi(v);
  if (c.nccl_profiler_version < 0 || c.nccl_profiler_version > 6) c.nccl_profiler_version = 6;
  if (const char* v = std::getenv("GPUSIM_PAGEABLE_ASYNC_BYTES"))
    c.pageable_async_bytes = parse_bytes(v, c.pageable_async_bytes);
  if (const char* v = std::getenv("GPUSIM_NVML_THROTTLE")) read_throttle(v, &c);
  read_fabric(&c);
#define GPUSIM_COST(field) read_double(#field, &c.field)
  GPUSIM_COST(pinned_h2d_gbps); GPUSIM_COST(pinned_d2h_gbps); GPUSIM_COST(pageable_gbps);
  GPUSIM_COST(d2d_gbps); GPUSIM_COST(memset_gbps); GPUSIM_COST(copy_latency_us);
  GPUSIM_COST(nccl_gbps); GPUSIM_COST(nccl_latency_us); GPUSIM_COST(malloc_us);
  GPUSIM_COST(malloc_per_gib_us); GPUSIM_COST(free_us); GPUSIM_COST(host_alloc_us);
  GPUSIM_COST(host_pin_gbps); GPUSIM_COST(free_host_us); GPUSIM_COST(malloc_async_us);
  GPUSIM_COST(event_record_us); GPUSIM_COST(mem_create_us); GPUSIM_COST(mem_create_gbps);
  GPUSIM_COST(mem_map_us); GPUSIM_COST(set_access_us); GPUSIM_COST(set_access_per_2mib_us);
  GPUSIM_COST(mem_unmap_us); GPUSIM_COST(mem_release_us);
  GPUSIM_COST(kernel_us); GPUSIM_COST(kernel_per_block_us); GPUSIM_COST(launch_us);
  GPUSIM_COST(gemm_tflops);
#undef GPUSIM_COST
  return c;
}

// ---- fault injection ----
struct Fault {
  std::string name;
  long nth;
  bool and_after;
  std::atomic<long> calls{0};
};

std::vector<std::unique_ptr<Fault>>* load_faults() {
  auto* faults = new std::vector<std::unique_ptr<Fault>>();
  const char* spec = std::getenv("GPUSIM_FAIL");
  if (!spec) return faults;
  std::string s(spec);
  size_t pos = 0;
  while (pos < s.size()) {
    size_t comma = s.find(',', pos);
    std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? s.size() : comma + 1;
    size_t colon = item.find(':');
    if (colon == std::string::npos) {
      std::fprintf(stderr, "gpusim: ignoring GPUSIM_FAIL item '%s' (want name:N or name:N+)\n", item.c_str());
      continue;
    }
    auto f = std::make_unique<Fault>();
    f->name = item.substr(0, colon);
    std::string n = item.substr(colon + 1);
    f->and_after = !n.empty() && n.back() == '+';
    f->nth = std::atol(n.c_str());
    if (f->nth <= 0) {
      std::fprintf(stderr, "gpusim: ignoring GPUSIM_FAIL item '%s' (N must be >= 1)\n", item.c_str());
      continue;
    }
    faults->push_back(std::move(f));
  }
  return faults;
}

}  // namespace

const Config& config() {
  static const Config* c = new Config(load());
  return *c;
}

double kernel_slowdown(int device) {
  const Config& c = config();
  return device == c.throttle_device && c.throttle_ratio > 0 ? 1.0 / c.throttle_ratio : 1.0;
}

bool should_fail(const char* name) {
  static std::vector<std::unique_ptr<Fault>>* faults = load_faults();
  for (auto& f : *faults) {
    if (f->name != name) continue;
    long n = ++f->calls;
    return f->and_after ? n >= f->nth : n == f->nth;
  }
  return false;
}

Clock::time_point after(Clock::time_point t, double us) {
  return t + std::chrono::nanoseconds(static_cast<int64_t>(us * 1000.0));
}

double nvlink_link_gbps(int version) {
  // Per link, per direction: NVLink 1 (P100) 20, 2 (V100) 25, 3 (A100) 25,
  // 4 (H100) 25, 5 (B200) 50 GB/s (NVIDIA's NVLink pages: 18 links of
  // NVLink 4 carry 900 GB/s both ways, 18 of NVLink 5 1.8 TB/s).
  switch (version) {
    case 1: return 20;
    case 2: case 3: case 4: return 25;
    case 5: return 50;
    default: return 0;
  }
}

double transfer_us(size_t bytes, double gbps) {
  if (gbps <= 0) return 0;
  return static_cast<double>(bytes) / (gbps * 1e3);  // bytes / (GB/s) in us
}

double vmm_cost_us(VmmCall call, size_t bytes, size_t mappings) {
  const Config& c = config();
  constexpr size_t kTwoMiB = 2u << 20;
  switch (call) {
    case VmmCall::kCreate: return c.mem_create_us + transfer_us(bytes, c.mem_create_gbps);
    case VmmCall::kMap: return c.mem_map_us;
    // Per mapping: PyTorch's allocator found unmapping 10 handles of 2 MiB
    // 10x the cost of one of 20 MiB (c10/cuda/CUDACachingAllocator.cpp).
    case VmmCall::kUnmap: return c.mem_unmap_us * static_cast<double>(mappings);
    case VmmCall::kSetAccess:
      return c.set_access_us + c.set_access_per_2mib_us * static_cast<double>((bytes + kTwoMiB - 1) / kTwoMiB);
    case VmmCall::kRelease: return c.mem_release_us;
  }
  return 0;
}

void wait_until(Clock::time_point deadline) {
  // Sleep to within ~60 us of the deadline, then yield-spin: Linux sleeps
  // overshoot by the timer slack (50 us by default), and a modeled 10 us op
  // must not cost 60.
  for (;;) {
    auto now = Clock::now();
    if (now >= deadline) return;
    auto left = deadline - now;
    if (left > std::chrono::microseconds(80)) {
      std::this_thread::sleep_for(left - std::chrono::microseconds(60));
    } else {
      sched_yield();
    }
  }
}

void charge(double us) {
  if (us <= 0) return;
  if (us < 20) {
    // Host work of a few microseconds keeps its CPU, as real host work
    // does: a sched_yield here can lose the CPU for a whole scheduler slice
    // (milliseconds) on a loaded machine.
    const Clock::time_point deadline = after(Clock::now(), us);
    while (Clock::now() < deadline) {
    }
    return;
  }
  wait_until(after(Clock::now(), us));
}

void charge_cpu(double us) {
  if (us <= 0) return;
  const Clock::time_point deadline = after(Clock::now(), us);
  while (Clock::now() < deadline) sched_yield();
}

}  // namespace gpusim

// The public C API (include/gpuslack/gpuslack.h). Defined here, in the
// shared library's own objects, because symbols from static archives are
// hidden by --exclude-libs.
#include "gpuslack/gpuslack.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "alloc/vmm.h"
#include "build_info.h"
#include "session/session.h"

extern "C" {

GPUSLACK_API const char* gpuslack_version(void) { return GPUSLACK_VERSION_STRING; }

GPUSLACK_API const char* gpuslack_build_info(void) {
  // Built once; leaked so that it stays valid during process exit.
  static const std::string* info = new std::string(gpuslack::build_info());
  return info->c_str();
}

GPUSLACK_API char* gpuslack_summary_json(void) {
  try {
    std::string json = gpuslack::session::summary_json();
    if (json.empty()) return nullptr;
    char* out = static_cast<char*>(std::malloc(json.size() + 1));
    if (out) std::memcpy(out, json.c_str(), json.size() + 1);
    return out;
  } catch (...) {
    return nullptr;
  }
}

GPUSLACK_API int gpuslack_write_summary(void) {
  if (!gpuslack::session::active()) return -1;
  gpuslack::session::write_summary("api");
  return 0;
}

GPUSLACK_API int gpuslack_device_stats_get(int device, gpuslack_device_stats* out) {
  gpuslack::alloc::DeviceAllocator* a = gpuslack::alloc::existing_allocator(device);
  if (!a || !out) return -1;
  gpuslack::alloc::DeviceStats s = a->stats();
  *out = gpuslack_device_stats{s.allocated,   s.peak_allocated,  s.reserved,        s.peak_reserved,
                               s.largest_free, s.pending_free,   s.allocations,     s.frees,
                               s.granules_mapped, s.granules_unmapped, s.oom_retries, s.stall_s};
  return 0;
}

GPUSLACK_API unsigned long long gpuslack_trim(int device) {
  unsigned long long released = 0;
  for (int d = 0; d < gpuslack::alloc::kMaxDevices; ++d) {
    if (device >= 0 && d != device) continue;
    if (gpuslack::alloc::DeviceAllocator* a = gpuslack::alloc::existing_allocator(d)) released += a->trim();
  }
  return released;
}

GPUSLACK_API void gpuslack_free(void* p) { std::free(p); }

}  // extern "C"

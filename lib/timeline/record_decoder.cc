#include "timeline/record_decoder.h"

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace gpuslack {
namespace timeline {
namespace {

// The fields read sit where they sat in older versions (record_decoder.h).
#define GPUSLACK_SAME_FIELD(a, b, field) \
  static_assert(offsetof(a, field) == offsetof(b, field), #a " and " #b " disagree on " #field)
GPUSLACK_SAME_FIELD(CUpti_ActivityKernel11, CUpti_ActivityKernel9, start);
GPUSLACK_SAME_FIELD(CUpti_ActivityKernel11, CUpti_ActivityKernel9, end);
GPUSLACK_SAME_FIELD(CUpti_ActivityKernel11, CUpti_ActivityKernel9, deviceId);
GPUSLACK_SAME_FIELD(CUpti_ActivityKernel11, CUpti_ActivityKernel9, name);
GPUSLACK_SAME_FIELD(CUpti_ActivityKernel11, CUpti_ActivityKernel10, name);
GPUSLACK_SAME_FIELD(CUpti_ActivityKernel11, CUpti_ActivityKernel5, name);
// The launch's shape (occupancy.h).
#define GPUSLACK_SAME_SHAPE(a, b)                                                    \
  GPUSLACK_SAME_FIELD(a, b, gridX); GPUSLACK_SAME_FIELD(a, b, gridY);                \
  GPUSLACK_SAME_FIELD(a, b, gridZ); GPUSLACK_SAME_FIELD(a, b, blockX);               \
  GPUSLACK_SAME_FIELD(a, b, blockY); GPUSLACK_SAME_FIELD(a, b, blockZ);              \
  GPUSLACK_SAME_FIELD(a, b, registersPerThread);                                    \
  GPUSLACK_SAME_FIELD(a, b, staticSharedMemory);                                    \
  GPUSLACK_SAME_FIELD(a, b, dynamicSharedMemory)
GPUSLACK_SAME_SHAPE(CUpti_ActivityKernel11, CUpti_ActivityKernel9);
GPUSLACK_SAME_SHAPE(CUpti_ActivityKernel11, CUpti_ActivityKernel10);
GPUSLACK_SAME_SHAPE(CUpti_ActivityKernel11, CUpti_ActivityKernel5);
#undef GPUSLACK_SAME_SHAPE
GPUSLACK_SAME_FIELD(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, start);
GPUSLACK_SAME_FIELD(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, end);
GPUSLACK_SAME_FIELD(CUpti_ActivityMemcpy6, CUpti_ActivityMemcpy5, deviceId);
GPUSLACK_SAME_FIELD(CUpti_ActivityMemcpyPtoP4, CUpti_ActivityMemcpyPtoP3, start);
GPUSLACK_SAME_FIELD(CUpti_ActivityMemcpyPtoP4, CUpti_ActivityMemcpyPtoP3, end);
GPUSLACK_SAME_FIELD(CUpti_ActivityMemcpyPtoP4, CUpti_ActivityMemcpyPtoP3, deviceId);
GPUSLACK_SAME_FIELD(CUpti_ActivityMemset4, CUpti_ActivityMemset3, start);
GPUSLACK_SAME_FIELD(CUpti_ActivityMemset4, CUpti_ActivityMemset3, end);
GPUSLACK_SAME_FIELD(CUpti_ActivityMemset4, CUpti_ActivityMemset3, deviceId);
#undef GPUSLACK_SAME_FIELD

template <typename Record>
Decoded times(const Record* r, Busy kind, const char* name, GpuActivity* out) {
  if (r->start == 0 || r->end == 0 || r->end < r->start) return Decoded::kIncomplete;
  out->start_ticks = r->start;
  out->end_ticks = r->end;
  out->device = static_cast<int>(r->deviceId);
  out->kind = kind;
  out->name = name;
  return Decoded::kActivity;
}

// A record's grid and block; zero blocks when a dimension is not positive
// (a record without them: the analysis counts its time, not its shape).
void read_shape(const CUpti_ActivityKernel11* k, LaunchShape* out) {
  if (k->gridX <= 0 || k->gridY <= 0 || k->gridZ <= 0 || k->blockX <= 0 || k->blockY <= 0 || k->blockZ <= 0) {
    *out = LaunchShape{};
    return;
  }
  out->blocks = static_cast<uint64_t>(k->gridX) * static_cast<uint64_t>(k->gridY) * static_cast<uint64_t>(k->gridZ);
  const uint64_t threads =
      static_cast<uint64_t>(k->blockX) * static_cast<uint64_t>(k->blockY) * static_cast<uint64_t>(k->blockZ);
  out->threads_per_block = threads > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(threads);
  out->registers_per_thread = k->registersPerThread;
  const int64_t shared = static_cast<int64_t>(k->staticSharedMemory > 0 ? k->staticSharedMemory : 0) +
                         (k->dynamicSharedMemory > 0 ? k->dynamicSharedMemory : 0);
  out->shared_bytes_per_block = shared > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(shared);
}

}  // namespace

bool is_nccl_kernel(const char* name) {
  if (!name) return false;
  if (std::strncmp(name, "nccl", 4) == 0) return true;
  // Itanium mangling of a function at namespace scope: _Z<length><name>...
  if (name[0] != '_' || name[1] != 'Z') return false;
  const char* p = name + 2;
  if (!std::isdigit(static_cast<unsigned char>(*p))) return false;
  while (std::isdigit(static_cast<unsigned char>(*p))) ++p;
  return std::strncmp(p, "nccl", 4) == 0;
}

Decoded decode_record(const CUpti_Activity* record, GpuActivity* out) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      auto* k = reinterpret_cast<const CUpti_ActivityKernel11*>(record);
      read_shape(k, &out->shape);
      return times(k, is_nccl_kernel(k->name) ? Busy::kCommunication : Busy::kCompute, k->name, out);
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return times(reinterpret_cast<const CUpti_ActivityMemcpy6*>(record), Busy::kCopies, nullptr, out);
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      return times(reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(record), Busy::kCopies, nullptr, out);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return times(reinterpret_cast<const CUpti_ActivityMemset4*>(record), Busy::kMemsets, nullptr, out);
    default:
      break;
  }
  return Decoded::kIgnored;
}

}  // namespace timeline
}  // namespace gpuslack

#include "timeline/record_decoder.h"

#include <cctype>
#include <cstddef>
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

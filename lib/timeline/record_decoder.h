// One CUPTI activity record -> a GpuActivity (timeline/gpu_activity.h), in
// CUPTI's time (the caller aligns it: timeline/clock_alignment.h).
//
// Kinds decoded: CONCURRENT_KERNEL and KERNEL (compute; NCCL's kernels,
// named "nccl..." or mangled "_Z<n>nccl...", as communication), MEMCPY and
// MEMCPY2 (peer copies; charged to the record's deviceId) as copies, MEMSET
// as memsets. Every other kind is not a GPU operation the timeline counts.
//
// Record versions: a CUPTI writes the newest struct it knows of each kind
// (Kernel9 in CUDA 12.x, Kernel11 in 13.x; Memcpy5/6, MemcpyPtoP3/4,
// Memset3/4). The fields read here sit at one offset in every version since
// CUDA 11 (static_asserts in record_decoder.cc), so one decoder reads all.
// Kernels also give their launch shape (GpuActivity::shape: gridX/Y/Z,
// blockX/Y/Z, registersPerThread, staticSharedMemory + dynamicSharedMemory).
//
// Thread safety: pure functions.
#pragma once

#include <cupti_activity.h>

#include "timeline/gpu_activity.h"

namespace gpuslack {
namespace timeline {

enum class Decoded : uint8_t {
  kActivity,    // *out is filled (times still CUPTI's)
  kIncomplete,  // a counted kind without both timestamps (a forced flush took it early)
  kIgnored,     // not a kind the timeline counts
};

Decoded decode_record(const CUpti_Activity* record, GpuActivity* out);

// Whether a kernel's name (as CUPTI gives it: mangled or not) is NCCL's.
bool is_nccl_kernel(const char* name);

}  // namespace timeline
}  // namespace gpuslack

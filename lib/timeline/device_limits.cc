// The device's limits from the driver (device_limits.h).
#include "timeline/device_limits.h"

#include "cuda/driver_api.h"

namespace gpuslack {
namespace timeline {

bool driver_device_limits(int ordinal, DeviceLimits* out) {
  const cuda::DriverApi* api = cuda::driver();
  if (api == nullptr) return false;
  CUdevice dev = 0;
  if (api->device_get(&dev, ordinal) != CUDA_SUCCESS) return false;
  const auto get = [&](CUdevice_attribute a, int* v) { return api->device_get_attribute(v, a, dev) == CUDA_SUCCESS; };
  DeviceLimits d;
  int major = 0;
  if (!get(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &d.sm_count) ||
      !get(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, &d.max_threads_per_sm) ||
      !get(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, &d.max_blocks_per_sm) ||
      !get(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, &d.registers_per_sm) ||
      !get(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, &d.registers_per_block) ||
      !get(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, &d.shared_bytes_per_sm) ||
      !get(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &d.shared_bytes_per_block) ||
      !get(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &d.max_threads_per_block) ||
      !get(CU_DEVICE_ATTRIBUTE_WARP_SIZE, &d.warp_size) ||
      !get(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &major))
    return false;
  // CUDA 11+; an older driver answers an error: nothing reserved.
  if (!get(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, &d.reserved_shared_bytes_per_block))
    d.reserved_shared_bytes_per_block = 0;
  // The occupancy calculator's shared memory unit: 256 bytes before 8.0,
  // 128 from 8.0 (occupancy.h).
  d.shared_unit = major >= 8 ? 128 : 256;
  if (d.warp_size <= 0) d.warp_size = 32;
  if (!d.known()) return false;
  *out = d;
  return true;
}

}  // namespace timeline
}  // namespace gpuslack

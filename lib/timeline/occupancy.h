// How well a kernel's grid fills a GPU: the theoretical blocks per SM (the
// documented occupancy calculation), the waves the grid runs in, and the
// wave efficiency. Pure arithmetic over a launch's shape (CUPTI's kernel
// record: grid, block, registers per thread, static and dynamic shared
// memory) and the device's limits (cuDeviceGetAttribute).
//
// Note [The occupancy calculation]: as NVIDIA's CUDA Occupancy Calculator
// (CUDA_Occupancy_Calculator.xls, shipped with the toolkit until CUDA 11;
// the same sheet as Nsight Compute's "Occupancy Calculator", Nsight Compute
// docs, "Occupancy Calculator"), the resident blocks per SM are the least
// of four limits:
//   - blocks: the SM's maximum resident blocks (32 on 8.0 and 9.0);
//   - warps: floor(max warps per SM / warps per block), warps per block =
//     ceil(threads / 32);
//   - registers: registers are allocated per warp in units of 256
//     (registers per warp = ceil(regs per thread x 32, 256)), and warps are
//     given registers in groups of 4 (the warp allocation granularity):
//     warps by registers = floor(floor(regs per SM / regs per warp), 4),
//     blocks = floor(that / warps per block); more than 255 registers per
//     thread, or a block needing more than the per-block maximum: 0;
//   - shared memory: per block, static + dynamic + the 1 KiB the driver
//     reserves per block on 8.x and 9.x (CUDA C++ Programming Guide,
//     "Compute Capabilities": "Shared Memory" of 8.x and 9.0; the
//     cudaDevAttrReservedSharedMemoryPerBlock attribute), rounded up to the
//     allocation unit of 128 bytes; blocks = floor(shared memory per SM /
//     that). Per SM: the largest carveout (228 KiB on 9.0), since the
//     record does not say which carveout the driver picked: an upper bound.
// A block that exceeds a per-block limit (threads, shared memory per block)
// could not have launched: 0 blocks per SM (`fits` false).
//
// Note [Waves]: a grid of B blocks on S SMs holding b blocks each runs in
// waves = B / (b x S) (NVIDIA, "Matrix Multiplication Background User's
// Guide", "Wave Quantization"); the last wave, when partial, leaves SMs
// idle while it runs. Wave efficiency = B / (ceil(waves) x b x S): the work
// in the waves over their capacity (1.1 waves: 1.1 / 2 = 55%). It assumes
// equal blocks and no other kernel sharing the SMs; a persistent kernel
// (grid = SMs, looping over tiles) reads as one full wave whatever its
// work's quantization.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>

namespace gpuslack {
namespace timeline {

// One kernel launch's shape (CUPTI's kernel record).
struct LaunchShape {
  uint64_t blocks = 0;              // gridX x gridY x gridZ
  uint32_t threads_per_block = 0;   // blockX x blockY x blockZ
  uint32_t registers_per_thread = 0;
  uint32_t shared_bytes_per_block = 0;  // static + dynamic
  bool operator==(const LaunchShape& o) const {
    return blocks == o.blocks && threads_per_block == o.threads_per_block &&
           registers_per_thread == o.registers_per_thread && shared_bytes_per_block == o.shared_bytes_per_block;
  }
};

// A device's per-SM limits (cuDeviceGetAttribute's names in comments).
struct DeviceLimits {
  int sm_count = 0;                       // MULTIPROCESSOR_COUNT
  int max_threads_per_sm = 0;             // MAX_THREADS_PER_MULTIPROCESSOR
  int max_blocks_per_sm = 0;              // MAX_BLOCKS_PER_MULTIPROCESSOR
  int registers_per_sm = 0;               // MAX_REGISTERS_PER_MULTIPROCESSOR
  int registers_per_block = 0;            // MAX_REGISTERS_PER_BLOCK
  int shared_bytes_per_sm = 0;            // MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
  int shared_bytes_per_block = 0;         // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
  int reserved_shared_bytes_per_block = 0;  // RESERVED_SHARED_MEMORY_PER_BLOCK
  int max_threads_per_block = 0;          // MAX_THREADS_PER_BLOCK
  int warp_size = 32;                     // WARP_SIZE
  // The occupancy calculator's per-architecture constants (not attributes).
  int register_unit = 256;                // registers allocated per warp in these units
  int warp_allocation_granularity = 4;
  int shared_unit = 128;                  // shared memory allocated per block in these units
  int max_registers_per_thread = 255;

  bool known() const { return sm_count > 0 && max_threads_per_sm > 0 && max_blocks_per_sm > 0; }
};

// An H100 SXM (compute capability 9.0; CUDA C++ Programming Guide,
// "Compute Capabilities", table "Technical Specifications per Compute
// Capability"; the H100 has 132 SMs).
DeviceLimits h100_limits();
// A V100 (7.0: 80 SMs, 96 KiB shared per SM, no per-block reserve, shared
// memory allocated in 256-byte units): the Best Practices Guide's example.
DeviceLimits v100_limits();
// An A100 (8.0: 108 SMs, 164 KiB shared per SM, 1 KiB reserved per block).
DeviceLimits a100_limits();

// A device's limits, asked once per device when its first record arrives,
// on the timeline's worker (AnalysisOptions::device_limits): the driver's
// attributes in the library (device_limits.h), a fixed table in tests.
// False: unknown.
using DeviceLimitsFn = bool (*)(int device, DeviceLimits* out);

enum class Limiter : uint8_t { kNone, kBlocks, kWarps, kRegisters, kSharedMemory };
const char* limiter_key(Limiter l);  // "none", "blocks", "warps", "registers", "shared_memory"

struct Occupancy {
  int blocks_per_sm = 0;  // theoretical resident blocks per SM (0: the block cannot launch)
  int warps_per_sm = 0;   // blocks_per_sm x warps per block
  double occupancy = 0;   // warps_per_sm / max warps per SM
  Limiter limiter = Limiter::kNone;  // the (first) binding limit
  bool fits = false;      // the block fits the per-block limits
};

// Note [The occupancy calculation]. Limits not known (!known()): all zero.
Occupancy occupancy(const LaunchShape& shape, const DeviceLimits& limits);

struct Waves {
  double waves = 0;       // blocks / (blocks_per_sm x SMs)
  double efficiency = 0;  // blocks / (ceil(waves) x blocks_per_sm x SMs), in (0, 1]; 0: unknown
  uint64_t wave_blocks = 0;  // blocks_per_sm x SMs
};

// Note [Waves]. blocks_per_sm or sm_count 0, or no blocks: all zero.
Waves waves(uint64_t blocks, int blocks_per_sm, int sm_count);

}  // namespace timeline
}  // namespace gpuslack

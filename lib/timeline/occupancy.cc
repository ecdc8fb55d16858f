// The occupancy and wave arithmetic (occupancy.h).
#include "timeline/occupancy.h"

#include <algorithm>

namespace gpuslack {
namespace timeline {
namespace {

uint64_t round_up(uint64_t v, uint64_t unit) { return unit == 0 ? v : (v + unit - 1) / unit * unit; }
uint64_t round_down(uint64_t v, uint64_t unit) { return unit == 0 ? v : v / unit * unit; }

}  // namespace

DeviceLimits h100_limits() {
  DeviceLimits d;
  d.sm_count = 132;
  d.max_threads_per_sm = 2048;
  d.max_blocks_per_sm = 32;
  d.registers_per_sm = 65536;
  d.registers_per_block = 65536;
  d.shared_bytes_per_sm = 228 << 10;
  d.shared_bytes_per_block = 227 << 10;
  d.reserved_shared_bytes_per_block = 1 << 10;
  d.max_threads_per_block = 1024;
  return d;
}

DeviceLimits a100_limits() {
  DeviceLimits d = h100_limits();
  d.sm_count = 108;
  d.shared_bytes_per_sm = 164 << 10;
  d.shared_bytes_per_block = 163 << 10;
  return d;
}

DeviceLimits v100_limits() {
  DeviceLimits d = h100_limits();
  d.sm_count = 80;
  d.shared_bytes_per_sm = 96 << 10;
  d.shared_bytes_per_block = 96 << 10;
  d.reserved_shared_bytes_per_block = 0;
  d.shared_unit = 256;
  return d;
}

const char* limiter_key(Limiter l) {
  switch (l) {
    case Limiter::kNone: return "none";
    case Limiter::kBlocks: return "blocks";
    case Limiter::kWarps: return "warps";
    case Limiter::kRegisters: return "registers";
    case Limiter::kSharedMemory: return "shared_memory";
  }
  return "none";
}

Occupancy occupancy(const LaunchShape& s, const DeviceLimits& d) {
  Occupancy o;
  if (!d.known() || s.threads_per_block == 0) return o;
  const uint64_t warp = static_cast<uint64_t>(std::max(d.warp_size, 1));
  const uint64_t warps_per_block = (s.threads_per_block + warp - 1) / warp;
  const uint64_t max_warps = static_cast<uint64_t>(d.max_threads_per_sm) / warp;
  const uint64_t shared = s.shared_bytes_per_block == 0 && d.reserved_shared_bytes_per_block == 0
                              ? 0
                              : round_up(static_cast<uint64_t>(s.shared_bytes_per_block) +
                                             static_cast<uint64_t>(d.reserved_shared_bytes_per_block),
                                         static_cast<uint64_t>(d.shared_unit));
  const uint64_t regs_per_warp =
      round_up(static_cast<uint64_t>(s.registers_per_thread) * warp, static_cast<uint64_t>(d.register_unit));
  o.fits = (d.max_threads_per_block <= 0 || s.threads_per_block <= static_cast<uint32_t>(d.max_threads_per_block)) &&
           (d.shared_bytes_per_block <= 0 ||
            s.shared_bytes_per_block <= static_cast<uint32_t>(d.shared_bytes_per_block)) &&
           (d.max_registers_per_thread <= 0 ||
            s.registers_per_thread <= static_cast<uint32_t>(d.max_registers_per_thread)) &&
           (d.registers_per_block <= 0 || regs_per_warp * warps_per_block <= static_cast<uint64_t>(d.registers_per_block)) &&
           warps_per_block <= max_warps;
  if (!o.fits) return o;

  uint64_t best = static_cast<uint64_t>(d.max_blocks_per_sm);
  o.limiter = Limiter::kBlocks;
  const auto limit = [&](uint64_t blocks, Limiter why) {
    if (blocks < best) {
      best = blocks;
      o.limiter = why;
    }
  };
  limit(max_warps / warps_per_block, Limiter::kWarps);
  if (regs_per_warp > 0 && d.registers_per_sm > 0) {
    const uint64_t warps_by_regs =
        round_down(static_cast<uint64_t>(d.registers_per_sm) / regs_per_warp,
                   static_cast<uint64_t>(std::max(d.warp_allocation_granularity, 1)));
    limit(warps_by_regs / warps_per_block, Limiter::kRegisters);
  }
  if (shared > 0 && d.shared_bytes_per_sm > 0) limit(static_cast<uint64_t>(d.shared_bytes_per_sm) / shared, Limiter::kSharedMemory);
  o.blocks_per_sm = static_cast<int>(best);
  o.warps_per_sm = static_cast<int>(best * warps_per_block);
  o.occupancy = max_warps > 0 ? static_cast<double>(o.warps_per_sm) / static_cast<double>(max_warps) : 0;
  return o;
}

Waves waves(uint64_t blocks, int blocks_per_sm, int sm_count) {
  Waves w;
  if (blocks == 0 || blocks_per_sm <= 0 || sm_count <= 0) return w;
  w.wave_blocks = static_cast<uint64_t>(blocks_per_sm) * static_cast<uint64_t>(sm_count);
  w.waves = static_cast<double>(blocks) / static_cast<double>(w.wave_blocks);
  const uint64_t full = (blocks + w.wave_blocks - 1) / w.wave_blocks;
  w.efficiency = static_cast<double>(blocks) / static_cast<double>(full * w.wave_blocks);
  return w;
}

}  // namespace timeline
}  // namespace gpuslack

// The simulated cuBLAS / cuBLASLt (libcublas.so.13, libcublasLt.so.13):
// handles that keep their stream, workspace and modes; gemm-like calls that
// occupy the handle's stream for a time by their flops (Config::gemm_tflops)
// and never compute. README.md, "cuBLAS". Test-only.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>

#include <algorithm>
#include <cstdint>

#include "sim.h"

namespace cublassim {

// Enqueues a math kernel of `flops` on `stream` (resolved as the runtime
// does); CUBLAS_STATUS_INVALID_VALUE for a stream that is not live.
// The kernel is named like one of cuBLAS's own (its CUPTI records).
inline constexpr const char* kGemmKernel =
    "sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
inline cublasStatus_t run(cudaStream_t stream, double flops, const char* kernel = kGemmKernel) {
  CUstream_st* s = gpusim::resolve(stream, false);
  if (!s) return CUBLAS_STATUS_INVALID_VALUE;
  gpusim::launch_flops(s, flops, kernel);
  return CUBLAS_STATUS_SUCCESS;
}

// Note [GEMM tiles]: how the simulated cuBLAS launches a GEMM. Like
// cuBLAS's tensor-core kernels, each GEMM is a grid of output tiles, one
// thread block per tile (NVIDIA, "Matrix Multiplication Background User's
// Guide": "Tile Quantization", and the tile sizes it lists for cuBLAS:
// 256x128, 128x256, 128x128, ..., 64x64, "larger tiles are more efficient";
// CUTLASS's default Hopper tile shapes are alike: 128x128 and 128x256 for
// large problems, 64x64 for small ones). The rule, size only: the largest
// tile the output m x n holds whole (256x128 when m >= n, else 128x256;
// then 128x128, 128x64, 64x64, which always fits); grid: ceil(m / tile_m) x
// ceil(n / tile_n) x batch. Real cuBLAS also weighs the SM count and may
// split K (split-K, stream-K) or run a persistent grid of one wave, so
// where the grid here under-fills the GPU, a real one fills it somewhat
// better: the simulation shows the direction (narrower per-GPU matrices,
// fewer tiles, partial waves), not NVIDIA's exact choice.
//
// The block of each tile: threads (warpgroups of 128), 168 registers
// (64x64: 128) and a 4-stage shared-memory pipeline of 64-deep bf16 slices
// of A and B, 4 x (tile_m + tile_n) x 64 x 2 bytes, dynamic. Their
// resident blocks per SM on the simulated H100 (the occupancy calculation,
// lib/timeline/occupancy.h, worked by hand): 256x128: 384 threads, 192 KiB
// (+1 KiB reserved) of 228: 1; 128x128: 256 threads, 128 KiB: 1; 128x64:
// 128 threads, 96 KiB: 2; 64x64: 128 threads, 64 KiB: 3.
//
// Time, the wave model (Note [Waves] in occupancy.h): the grid runs in
// ceil(blocks / (blocks_per_sm x 132)) waves; a wave takes a tile's flops
// (2 x tile_m x tile_n x k) at one slot's share of the rate
// (gemm_tflops / (132 x blocks_per_sm)); plus kernel_us. A grid of whole
// waves takes what the old flop-rate model gave (kernel_us + flops at
// gemm_tflops, padding aside); a partial last wave takes a whole wave.
struct GemmTile {
  int m, n;
  uint32_t threads, registers;
  int blocks_per_sm;
  const char* kernel;
  uint32_t shared() const { return 4u * static_cast<uint32_t>(m + n) * 64u * 2u; }
};
inline constexpr GemmTile kTiles[] = {
    {256, 128, 384, 168, 1,
     "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x128x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas"},
    {128, 256, 384, 168, 1,
     "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize1x2x1_execute_segment_k_off_kernel__5x_cublas"},
    {128, 128, 256, 168, 1,
     "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"},
    {128, 64, 128, 168, 2,
     "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"},
    {64, 64, 128, 128, 3,
     "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"},
};

// The tile of an m x n output (Note [GEMM tiles]).
inline const GemmTile& pick_tile(int64_t m, int64_t n) {
  const GemmTile& wide = m >= n ? kTiles[0] : kTiles[1];
  const GemmTile& tall = m >= n ? kTiles[1] : kTiles[0];
  for (const GemmTile* t : {&wide, &tall, &kTiles[2], &kTiles[3]})
    if (m >= t->m && n >= t->n) return *t;
  return kTiles[4];
}

// Enqueues the GEMM m x n x k (batch of them) as a grid of tiles timed by
// the wave model (Note [GEMM tiles]); like run().
inline cublasStatus_t run_gemm(cudaStream_t stream, int64_t m, int64_t n, int64_t k, int64_t batch = 1) {
  if (m < 0 || n < 0 || k < 0 || batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  CUstream_st* s = gpusim::resolve(stream, false);
  if (!s) return CUBLAS_STATUS_INVALID_VALUE;
  const GemmTile& t = pick_tile(m, n);
  gpusim::KernelShape shape;
  shape.grid[0] = static_cast<uint32_t>(std::max<int64_t>(1, (m + t.m - 1) / t.m));
  shape.grid[1] = static_cast<uint32_t>(std::max<int64_t>(1, (n + t.n - 1) / t.n));
  shape.grid[2] = static_cast<uint32_t>(std::max<int64_t>(1, batch));
  shape.block[0] = t.threads;
  shape.registers = t.registers;
  shape.dynamic_shared = t.shared();
  const uint64_t wave = static_cast<uint64_t>(gpusim::kSmCount) * static_cast<uint64_t>(t.blocks_per_sm);
  const uint64_t waves = m == 0 || n == 0 || batch == 0 ? 0 : (shape.blocks() + wave - 1) / wave;
  const double rate = gpusim::config().gemm_tflops > 0 ? gpusim::config().gemm_tflops : 50;
  const double slot_tflops = rate / static_cast<double>(wave);
  const double tile_us = 2.0 * t.m * t.n * static_cast<double>(k) / (slot_tflops * 1e6);
  gpusim::launch_timed(s, shape, gpusim::config().kernel_us + static_cast<double>(waves) * tile_us, t.kernel);
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace cublassim

// A CUDA round trip on random data, shared by the test programs that stand
// for "an application": allocate, copy there and back, compare, free.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

inline int cuda_roundtrip() {
  const size_t n = 1 << 20;
  std::vector<unsigned char> in(n), out(n);
  std::mt19937 rng(std::random_device{}());
  for (auto& b : in) b = static_cast<unsigned char>(rng());
  void* d = nullptr;
  if (cudaMalloc(&d, n) != cudaSuccess) return 1;
  if (cudaMemcpy(d, in.data(), n, cudaMemcpyHostToDevice) != cudaSuccess) return 2;
  if (cudaMemcpy(out.data(), d, n, cudaMemcpyDeviceToHost) != cudaSuccess) return 3;
  if (cudaDeviceSynchronize() != cudaSuccess) return 4;
  if (cudaFree(d) != cudaSuccess) return 5;
  if (std::memcmp(in.data(), out.data(), n) != 0) return 6;
  std::printf("roundtrip ok\n");
  return 0;
}

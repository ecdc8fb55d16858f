// An application that makes, once each, the runtime calls the simulated
// runtime implements on top of another of its calls (Note [Internal calls]
// in tests/simcuda/sim.h), for internal_calls_test.py: preloaded, gpuslack
// must count each call once and show no call the program did not make.
//
// Usage: internal_calls_app
// Calls, in order and once each: cudaMallocPitch, cudaMalloc3D,
// cudaStreamCreate, cudaStreamCreateWithFlags, cudaMemcpyPeer,
// cudaStreamDestroy (twice), cudaFree (twice). Exits 0, or 1 on an error.
#include <cuda_runtime_api.h>

#include <cstdio>

namespace {

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "internal_calls_app: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

}  // namespace

int main() {
  void* pitched = nullptr;
  size_t pitch = 0;
  cudaPitchedPtr p3d{};
  cudaStream_t a = nullptr, b = nullptr;
  bool good = ok(cudaMallocPitch(&pitched, &pitch, 100, 10), "cudaMallocPitch") &&
              ok(cudaMalloc3D(&p3d, cudaExtent{64, 4, 2}), "cudaMalloc3D") &&
              ok(cudaStreamCreate(&a), "cudaStreamCreate") &&
              ok(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), "cudaStreamCreateWithFlags") &&
              ok(cudaMemcpyPeer(p3d.ptr, 0, pitched, 0, 64), "cudaMemcpyPeer") &&
              ok(cudaStreamDestroy(a), "cudaStreamDestroy") && ok(cudaStreamDestroy(b), "cudaStreamDestroy") &&
              ok(cudaFree(pitched), "cudaFree") && ok(cudaFree(p3d.ptr), "cudaFree");
  if (good) std::puts("internal_calls_app: ok");
  return good ? 0 : 1;
}

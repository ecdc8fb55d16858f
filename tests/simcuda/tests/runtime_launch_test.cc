// Kernel launches, stream memory operations and driver entry points of the
// simulated device: what PyTorch relies on (README.md, "Hosting PyTorch").
#include <cuda.h>
#include <dlfcn.h>

#include "runtime_test_util.h"

using namespace runtimetest;

namespace {

void fake_kernel() {}

// A launch of 10^6 blocks at 0.05 us per block occupies its stream for
// >= 50 ms (GPUSIM_COST_KERNEL_PER_BLOCK_US, set by CMake), and returns at once.
TEST(SimLaunch, KernelsAreTimedBusyWorkOnTheirStream) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto t0 = Clock::now();
  CUDA_OK(cudaLaunchKernel(reinterpret_cast<const void*>(&fake_kernel), dim3(1000, 1000), dim3(128), nullptr, 0, s));
  EXPECT_LT(ms_since(t0), kFreeMs);
  EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(s));
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_GE(ms_since(t0), kBlockedMs);
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(SimLaunch, EntryPointsComeAfterCuInitAndWriteInStreamOrder) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q;
  CUDA_OK(cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &fn, 12000, cudaEnableDefault, &q));
  ASSERT_EQ(cudaDriverEntryPointSuccess, q);
  auto write32 = reinterpret_cast<CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned)>(fn);
  CUDA_OK(cudaGetDriverEntryPointByVersion("cuMemsetD32Async", &fn, 12000, cudaEnableDefault, &q));
  ASSERT_EQ(cudaDriverEntryPointSuccess, q);
  auto memset32 = reinterpret_cast<CUresult (*)(CUdeviceptr, unsigned, size_t, CUstream)>(fn);

  DevBuf buf(4096);
  auto* words = static_cast<volatile uint32_t*>(buf.p);
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ASSERT_EQ(cudaSuccess, gpusim_busy_kernel(s, buf.p, 4096, kBusyUs, 0, nullptr));
  // Called without cuInit by this process: the runtime initialized the driver.
  ASSERT_EQ(CUDA_SUCCESS, memset32(reinterpret_cast<CUdeviceptr>(buf.p), 7, 1024, s));
  ASSERT_EQ(CUDA_SUCCESS, write32(s, reinterpret_cast<CUdeviceptr>(buf.p), 42, 0));
#if !defined(__SANITIZE_THREAD__)
  // Still queued behind the busy kernel. Read while the stream's thread may
  // write it: a deliberate race, which TSan reports, so only in the other
  // builds; the ordering is also shown by the values after the sync.
  EXPECT_NE(42u, words[0]);
#endif
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(42u, words[0]);
  EXPECT_EQ(7u, words[1023]);
  CUDA_OK(cudaStreamDestroy(s));
  EXPECT_EQ(0, gpusim_busy_kernel_violations());
}

TEST(SimLaunch, CapturedKernelsReplayAsGraphNodes) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  cudaStreamCaptureStatus status;
  unsigned long long id = 0;
  CUDA_OK(cudaStreamGetCaptureInfo(s, &status, &id, nullptr, nullptr, nullptr, nullptr));
  EXPECT_EQ(cudaStreamCaptureStatusActive, status);
  EXPECT_NE(0u, id);
  CUDA_OK(cudaLaunchKernel(reinterpret_cast<const void*>(&fake_kernel), dim3(1000, 1000), dim3(1), nullptr, 0, s));
  cudaGraph_t g;
  CUDA_OK(cudaStreamEndCapture(s, &g));
  size_t n = 0;
  CUDA_OK(cudaGraphGetNodes(g, nullptr, &n));
  EXPECT_EQ(1u, n);
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiateWithFlags(&exec, g, 0));
  auto t0 = Clock::now();
  CUDA_OK(cudaGraphLaunch(exec, s));
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_GE(ms_since(t0), kBlockedMs);
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(g));
  CUDA_OK(cudaStreamDestroy(s));
}

// The simulated NVML answers torch's questions about the simulated device.
TEST(SimLaunch, NvmlFindsTheDeviceByTheBusIdTheRuntimeGives) {
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  ASSERT_NE(nullptr, nvml) << dlerror();
  auto init = reinterpret_cast<int (*)()>(dlsym(nvml, "nvmlInit_v2"));
  auto by_bus = reinterpret_cast<int (*)(const char*, void**)>(dlsym(nvml, "nvmlDeviceGetHandleByPciBusId_v2"));
  auto by_index = reinterpret_cast<int (*)(unsigned, void**)>(dlsym(nvml, "nvmlDeviceGetHandleByIndex_v2"));
  ASSERT_TRUE(init && by_bus && by_index);
  ASSERT_EQ(0, init());
  char bus[32];
  CUDA_OK(cudaDeviceGetPCIBusId(bus, sizeof(bus), 0));
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_EQ(0, by_bus(bus, &a));
  ASSERT_EQ(0, by_index(0, &b));
  EXPECT_EQ(a, b);
  cudaDeviceProp p;
  CUDA_OK(cudaGetDeviceProperties(&p, 0));
  char torch_style[32];  // how c10 prints the properties' numbers
  std::snprintf(torch_style, sizeof(torch_style), "%08x:%02x:%02x.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
  ASSERT_EQ(0, by_bus(torch_style, &a));
  EXPECT_EQ(a, b);
}

}  // namespace

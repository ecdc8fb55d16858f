// Copies and memsets: CUDA Runtime API, "API synchronization behavior"
// (Memcpy, Memset), and the Programming Guide, "Asynchronous Concurrent
// Execution" > "Concurrent Execution between Host and Device". What
// gpuslack's staged copies rest on (lib/stage/staged_copy.h): a pageable
// host-to-device copy drains its stream and the caller may reuse its buffer
// on return; a small one (Note [Small pageable copies]) does not drain.
#include <cstring>
#include <vector>

#include "conformance.h"

using namespace conformance;

namespace {

constexpr size_t kLarge = 1 << 20;   // past the Programming Guide's 64 KB
constexpr size_t kSmall = 64 << 10;  // "64 KB or less"

std::vector<unsigned char> pattern(size_t n, unsigned char seed) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>(seed + i * 7);
  return v;
}

struct Device {
  void* p = nullptr;
  explicit Device(size_t n) { EXPECT_EQ(cudaSuccess, cudaMalloc(&p, n)); }
  ~Device() { cudaFree(p); }
};

// "Memcpy" > Asynchronous: "For transfers between device memory and pinned
// host memory, the function is asynchronous" (and so does not wait for the
// kernel ahead of it on the stream); the data lands in stream order.
TEST(Copies, PinnedAsyncCopyReturnsBeforeTheKernelAheadOfItFinishes) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Device d(kLarge);
  void* h = nullptr;
  CUDA_OK(cudaMallocHost(&h, kLarge));
  auto data = pattern(kLarge, 1);
  std::memcpy(h, data.data(), kLarge);
  auto t = Clock::now();
  CUDA_OK(busy(s, kBusyMs));
  CUDA_OK(cudaMemcpyAsync(d.p, h, kLarge, cudaMemcpyHostToDevice, s));
  EXPECT_LT(ms_since(t), kAtOnceMs);
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_GE(ms_since(t), kWaitedMs);
  std::vector<unsigned char> back(kLarge);
  CUDA_OK(cudaMemcpy(back.data(), d.p, kLarge, cudaMemcpyDeviceToHost));
  EXPECT_EQ(data, back);
  CUDA_OK(cudaFreeHost(h));
  CUDA_OK(cudaStreamDestroy(s));
}

// "Memcpy" > Synchronous: "For transfers from pageable host memory to device
// memory, a stream sync is performed before the copy is initiated. The
// function will return once the pageable buffer has been copied to the
// staging memory": the caller may overwrite its buffer at once.
TEST(Copies, LargePageableCopyDrainsTheStreamAndTheBufferIsReusableOnReturn) {
  Device d(kLarge);
  auto data = pattern(kLarge, 2);
  std::vector<unsigned char> src = data;
  auto t = Clock::now();
  CUDA_OK(busy(0, kBusyMs));
  CUDA_OK(cudaMemcpy(d.p, src.data(), kLarge, cudaMemcpyHostToDevice));
  EXPECT_GE(ms_since(t), kWaitedMs);
  std::fill(src.begin(), src.end(), 0);
  std::vector<unsigned char> back(kLarge);
  CUDA_OK(cudaMemcpy(back.data(), d.p, kLarge, cudaMemcpyDeviceToHost));
  EXPECT_EQ(data, back);
}

// "Memcpy" > Asynchronous: "If pageable memory must first be staged to
// pinned memory, the driver may synchronize with the stream and stage the
// copy into pinned memory" -- gpuslack's staged copies exist because it
// does (the drain they skip).
TEST(Copies, LargePageableAsyncCopyDrainsTheStream) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Device d(kLarge);
  auto data = pattern(kLarge, 3);
  std::vector<unsigned char> src = data;
  auto t = Clock::now();
  CUDA_OK(busy(s, kBusyMs));
  CUDA_OK(cudaMemcpyAsync(d.p, src.data(), kLarge, cudaMemcpyHostToDevice, s));
  EXPECT_GE(ms_since(t), kWaitedMs);
  std::fill(src.begin(), src.end(), 0);
  CUDA_OK(cudaStreamSynchronize(s));
  std::vector<unsigned char> back(kLarge);
  CUDA_OK(cudaMemcpy(back.data(), d.p, kLarge, cudaMemcpyDeviceToHost));
  EXPECT_EQ(data, back);
  CUDA_OK(cudaStreamDestroy(s));
}

// Programming Guide, "Concurrent Execution between Host and Device": among
// the operations asynchronous to the host, "memory copies from host to
// device of a memory block of 64 KB or less" (the simulated device's
// default, GPUSIM_PAGEABLE_ASYNC_BYTES; the Runtime API's reading would
// drain). Where a real GPU fails this, the other reading is the truth.
TEST(Copies, SmallPageableCopyIsAsynchronousToTheHost) {
  Device d(kSmall);
  auto data = pattern(kSmall, 4);
  std::vector<unsigned char> src = data;
  auto t = Clock::now();
  CUDA_OK(busy(0, kBusyMs));
  CUDA_OK(cudaMemcpy(d.p, src.data(), kSmall, cudaMemcpyHostToDevice));
  EXPECT_LT(ms_since(t), kAtOnceMs);
  std::fill(src.begin(), src.end(), 0);  // captured at the call
  std::vector<unsigned char> back(kSmall);
  CUDA_OK(cudaMemcpy(back.data(), d.p, kSmall, cudaMemcpyDeviceToHost));
  EXPECT_EQ(data, back);
}

// "Memcpy": "For transfers from device to either pageable or pinned host
// memory, the function returns only once the copy has completed" (the
// Async form too, for pageable memory).
TEST(Copies, DeviceToPageableReturnsOnlyWhenComplete) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Device d(kLarge);
  auto data = pattern(kLarge, 5);
  CUDA_OK(cudaMemcpy(d.p, data.data(), kLarge, cudaMemcpyHostToDevice));
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<unsigned char> out(kLarge);
  auto t = Clock::now();
  CUDA_OK(busy(s, kBusyMs));
  CUDA_OK(cudaMemcpyAsync(out.data(), d.p, kLarge, cudaMemcpyDeviceToHost, s));
  EXPECT_GE(ms_since(t), kWaitedMs);
  EXPECT_EQ(data, out);
  CUDA_OK(cudaStreamDestroy(s));
}

// "Memcpy" > Synchronous: "For transfers from device memory to device
// memory, no host-side synchronization is performed"; "Memset": "The
// asynchronous memset functions are asynchronous with respect to the host".
TEST(Copies, DeviceToDeviceCopiesAndMemsetsDoNotWaitForTheDevice) {
  Device a(kLarge), b(kLarge);
  auto t = Clock::now();
  CUDA_OK(busy(0, kBusyMs));
  CUDA_OK(cudaMemcpy(b.p, a.p, kLarge, cudaMemcpyDeviceToDevice));
  CUDA_OK(cudaMemsetAsync(a.p, 0, kLarge, 0));
  EXPECT_LT(ms_since(t), kAtOnceMs);
  CUDA_OK(cudaDeviceSynchronize());
}

}  // namespace

// Virtual memory management: CUDA Driver API, "Virtual Memory Management"
// (cuMemCreate, cuMemAddressReserve, cuMemMap, cuMemSetAccess,
// cuMemGetAllocationGranularity) and the Programming Guide's "Virtual
// Memory Management" ("Allocating Physical Memory", "Reserving a Virtual
// Address Range", "Controlling Access Rights"); gpuslack's VMM allocator
// rests on each rule. Faults run in a child (a death test): on a real GPU
// a fault poisons the context.
#include <sys/wait.h>

#include <cstdlib>
#include <vector>

#include "conformance.h"

using namespace conformance;

namespace {

CUmemAllocationProp device_prop() {
  CUmemAllocationProp p{};
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = 0;
  return p;
}

size_t granularity() {
  CUmemAllocationProp p = device_prop();
  size_t g = 0;
  EXPECT_EQ(CUDA_SUCCESS, cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  return g;
}

CUmemAccessDesc rw() {
  CUmemAccessDesc a{};
  a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  a.location.id = 0;
  a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return a;
}

// cuMemCreate: "size ... must be a multiple of the granularity returned by
// cuMemGetAllocationGranularity with the CU_MEM_ALLOC_GRANULARITY_MINIMUM
// flag"; the granularity is a power of two.
TEST(Vmm, PhysicalSizesAreMultiplesOfTheGranularity) {
  CU_OK(cuInit(0));
  size_t g = granularity();
  ASSERT_GT(g, 0u);
  EXPECT_EQ(0u, g & (g - 1));
  CUmemAllocationProp p = device_prop();
  CUmemGenericAllocationHandle h;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, g + 1, &p, 0));
  CU_OK(cuMemCreate(&h, 2 * g, &p, 0));
  CU_OK(cuMemRelease(h));
}

// cuMemAddressReserve: "alignment - Alignment of the reserved virtual
// address range requested" (0: the default, the granularity); the range
// returned is aligned.
TEST(Vmm, ReservationsAreAligned) {
  CU_OK(cuInit(0));
  size_t g = granularity();
  CUdeviceptr a = 0, b = 0;
  CU_OK(cuMemAddressReserve(&a, 4 * g, 0, 0, 0));
  EXPECT_EQ(0u, a % g);
  CU_OK(cuMemAddressReserve(&b, 4 * g, 8 * g, 0, 0));
  EXPECT_EQ(0u, b % (8 * g));
  CU_OK(cuMemAddressFree(a, 4 * g));
  CU_OK(cuMemAddressFree(b, 4 * g));
}

// "Controlling Access Rights": mapped memory is usable once cuMemSetAccess
// grants access; a copy then works like any device memory.
TEST(Vmm, MappedMemoryIsUsableAfterSetAccess) {
  CU_OK(cuInit(0));
  void* warm = nullptr;  // the runtime binds the primary context
  CUDA_OK(cudaMalloc(&warm, 512));
  size_t g = granularity();
  CUmemAllocationProp p = device_prop();
  CUmemGenericAllocationHandle h;
  CU_OK(cuMemCreate(&h, g, &p, 0));
  CUdeviceptr va = 0;
  CU_OK(cuMemAddressReserve(&va, g, 0, 0, 0));
  CU_OK(cuMemMap(va, g, 0, h, 0));
  CUmemAccessDesc a = rw();
  CU_OK(cuMemSetAccess(va, g, &a, 1));
  unsigned long long flags = 0;
  CUmemLocation loc = a.location;
  CU_OK(cuMemGetAccess(&flags, &loc, va));
  EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READWRITE, flags);
  std::vector<unsigned char> in(4096, 0x5c), out(4096, 0);
  CUDA_OK(cudaMemcpy(reinterpret_cast<void*>(va), in.data(), in.size(), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(out.data(), reinterpret_cast<void*>(va), out.size(), cudaMemcpyDeviceToHost));
  EXPECT_EQ(in, out);
  CU_OK(cuMemUnmap(va, g));
  CU_OK(cuMemAddressFree(va, g));
  CU_OK(cuMemRelease(h));
  CUDA_OK(cudaFree(warm));
}

// What a child reports: 3 when the access it tried succeeded. Anything else
// (a signal, a sanitizer's exit, 0 after a refused call) is the fault.
constexpr int kAccessSucceeded = 3;
bool faulted(int status) { return !(WIFEXITED(status) && WEXITSTATUS(status) == kAccessSucceeded); }

// Writes to `va` from the device and synchronizes; exits with
// kAccessSucceeded if nothing failed.
[[noreturn]] void touch_and_exit(CUdeviceptr va) {
  CUresult a = cuMemsetD8(va, 1, 4096);
  CUresult b = cuCtxSynchronize();
  std::_Exit(a == CUDA_SUCCESS && b == CUDA_SUCCESS ? kAccessSucceeded : 0);
}

// "Controlling Access Rights": mapping alone grants no access; memory is
// accessible only after cuMemSetAccess.
TEST(VmmDeathTest, AccessBeforeSetAccessFaults) {
  EXPECT_EXIT(
      {
        cuInit(0);
        void* warm = nullptr;
        cudaMalloc(&warm, 512);
        size_t g = granularity();
        CUmemAllocationProp p = device_prop();
        CUmemGenericAllocationHandle h;
        CUdeviceptr va = 0;
        if (cuMemCreate(&h, g, &p, 0) || cuMemAddressReserve(&va, g, 0, 0, 0) || cuMemMap(va, g, 0, h, 0))
          std::_Exit(kAccessSucceeded);  // setup failed: report it as a failure
        touch_and_exit(va);
      },
      faulted, "");
}

// "Reserving a Virtual Address Range": a reservation is not memory; access
// to an unmapped range faults.
TEST(VmmDeathTest, AccessToAnUnmappedReservationFaults) {
  EXPECT_EXIT(
      {
        cuInit(0);
        void* warm = nullptr;
        cudaMalloc(&warm, 512);
        CUdeviceptr va = 0;
        if (cuMemAddressReserve(&va, granularity(), 0, 0, 0)) std::_Exit(kAccessSucceeded);
        touch_and_exit(va);
      },
      faulted, "");
}

}  // namespace

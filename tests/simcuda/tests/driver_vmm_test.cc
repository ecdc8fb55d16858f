// The simulated driver's (libcuda.so.1) virtual memory management against
// the CUDA Driver API's documented behaviour: cuMemCreate, cuMemMap,
// cuMemSetAccess, export/import, ..., whose mappings are real host mappings:
// access rights are checked through /proc/self/maps and by touching memory in
// a death-test child. Also how the runtime sees VMM memory.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "driver_test_util.h"
#include "gpusim.h"

using namespace drivertest;

namespace {

// ---- virtual memory management ----

class DriverVmm : public DriverTest {
 protected:
  void TearDown() override {
    for (auto& r : reservations_) cuMemAddressFree(r.first, r.second);
  }
  CUdeviceptr reserve(size_t size, size_t align = 0) {
    CUdeviceptr p = 0;
    EXPECT_EQ(CUDA_SUCCESS, cuMemAddressReserve(&p, size, align, 0, 0));
    reservations_.push_back({p, size});
    return p;
  }
  CUmemGenericAllocationHandle create(size_t size, bool posix_fd = false) {
    CUmemAllocationProp prop = device_prop(0, posix_fd);
    CUmemGenericAllocationHandle h = 0;
    EXPECT_EQ(CUDA_SUCCESS, cuMemCreate(&h, size, &prop, 0));
    return h;
  }
  // Maps `h` at `p` and grants read-write access.
  void map_rw(CUdeviceptr p, size_t size, CUmemGenericAllocationHandle h, size_t offset = 0) {
    ASSERT_EQ(CUDA_SUCCESS, cuMemMap(p, size, offset, h, 0));
    CUmemAccessDesc a = rw_access();
    ASSERT_EQ(CUDA_SUCCESS, cuMemSetAccess(p, size, &a, 1));
  }
  std::vector<std::pair<CUdeviceptr, size_t>> reservations_;
};

TEST_F(DriverVmm, Granularity) {
  CUmemAllocationProp prop = device_prop();
  size_t g = 0;
  CU_OK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  EXPECT_EQ(kGran, g);
  CU_OK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  EXPECT_EQ(kGran, g);
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
  CU_OK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  CU_OK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  prop = device_prop(1);
  EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  prop = device_prop();
  prop.type = CU_MEM_ALLOCATION_TYPE_INVALID;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  prop = device_prop();
  prop.location.type = CU_MEM_LOCATION_TYPE_INVALID;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemGetAllocationGranularity(&g, nullptr, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  prop = device_prop();
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
            cuMemGetAllocationGranularity(&g, &prop, static_cast<CUmemAllocationGranularity_flags>(7)));
}

TEST_F(DriverVmm, CreateValidates) {
  CUmemAllocationProp prop = device_prop();
  CUmemGenericAllocationHandle h;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, kMiB, &prop, 0));  // not a granularity multiple
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, 0, &prop, 0));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, kGran, &prop, 1));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, kGran, nullptr, 0));
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
  EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, cuMemCreate(&h, kGran, &prop, 0));
  prop = device_prop(5);
  EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cuMemCreate(&h, kGran, &prop, 0));
  EXPECT_EQ(0u, gpusim_device_used(0));
}

TEST_F(DriverVmm, CreateMapAccessWriteRead) {
  const size_t n = 2 * kGran;
  CUdeviceptr p = reserve(2 * n);
  EXPECT_EQ(0u, p % kGran);
  CUmemGenericAllocationHandle h = create(n);
  EXPECT_EQ(n, gpusim_device_used(0));
  map_rw(p, n, h);
  EXPECT_EQ("rw-s", perms_at(p));
  EXPECT_EQ("rw-s", perms_at(p + n - 1));
  EXPECT_EQ("---p", perms_at(p + n));  // the rest is still only reserved
  auto* c = static_cast<unsigned char*>(ptr(p));
  EXPECT_EQ(0, c[0]);  // new physical memory reads as zeros
  for (size_t i = 0; i < n; i += 4096) c[i] = static_cast<unsigned char>(i / 4096);
  for (size_t i = 0; i < n; i += 4096) ASSERT_EQ(static_cast<unsigned char>(i / 4096), c[i]);
  CU_OK(cuMemUnmap(p, n));
  CU_OK(cuMemRelease(h));
  EXPECT_EQ(0u, gpusim_device_used(0));
}

// gpusim_calls counts every call that gives or takes memory: the benchmarks
// read a peer allocator's driver calls from it.
TEST_F(DriverVmm, CallsAreCounted) {
  const long create0 = gpusim_calls("cuMemCreate"), map0 = gpusim_calls("cuMemMap"),
             unmap0 = gpusim_calls("cuMemUnmap"), release0 = gpusim_calls("cuMemRelease"),
             access0 = gpusim_calls("cuMemSetAccess"), reserve0 = gpusim_calls("cuMemAddressReserve");
  CUdeviceptr p = reserve(kGran);
  CUmemGenericAllocationHandle h = create(kGran);
  map_rw(p, kGran, h);
  CU_OK(cuMemUnmap(p, kGran));
  CU_OK(cuMemRelease(h));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemMap(0, kGran, 0, h, 0));  // failed calls count too
  EXPECT_EQ(create0 + 1, gpusim_calls("cuMemCreate"));
  EXPECT_EQ(map0 + 2, gpusim_calls("cuMemMap"));
  EXPECT_EQ(unmap0 + 1, gpusim_calls("cuMemUnmap"));
  EXPECT_EQ(release0 + 1, gpusim_calls("cuMemRelease"));
  EXPECT_EQ(access0 + 1, gpusim_calls("cuMemSetAccess"));
  EXPECT_EQ(reserve0 + 1, gpusim_calls("cuMemAddressReserve"));
  const long malloc0 = gpusim_calls("cudaMalloc"), free0 = gpusim_calls("cudaFree");
  void* d = nullptr;
  ASSERT_EQ(cudaSuccess, cudaMalloc(&d, 4096));
  ASSERT_EQ(cudaSuccess, cudaFree(d));
  ASSERT_EQ(cudaSuccess, cudaFree(nullptr));  // not counted
  EXPECT_EQ(malloc0 + 1, gpusim_calls("cudaMalloc"));
  EXPECT_EQ(free0 + 1, gpusim_calls("cudaFree"));
  // The runtime's host-side waits and event records too.
  const long dsync0 = gpusim_calls("cudaDeviceSynchronize"), ssync0 = gpusim_calls("cudaStreamSynchronize"),
             esync0 = gpusim_calls("cudaEventSynchronize"), record0 = gpusim_calls("cudaEventRecord");
  cudaEvent_t ev = nullptr;
  ASSERT_EQ(cudaSuccess, cudaEventCreate(&ev));
  ASSERT_EQ(cudaSuccess, cudaEventRecord(ev, nullptr));
  ASSERT_EQ(cudaSuccess, cudaEventSynchronize(ev));
  ASSERT_EQ(cudaSuccess, cudaEventQuery(ev));  // not counted: it never waits
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(nullptr));
  ASSERT_EQ(cudaSuccess, cudaDeviceSynchronize());
  ASSERT_EQ(cudaSuccess, cudaEventDestroy(ev));
  EXPECT_EQ(dsync0 + 1, gpusim_calls("cudaDeviceSynchronize"));
  EXPECT_EQ(ssync0 + 1, gpusim_calls("cudaStreamSynchronize"));
  EXPECT_EQ(esync0 + 1, gpusim_calls("cudaEventSynchronize"));
  EXPECT_EQ(record0 + 1, gpusim_calls("cudaEventRecord"));
  EXPECT_EQ(-1, gpusim_calls("cuMemGetInfo"));
  EXPECT_EQ(-1, gpusim_calls(nullptr));
}

TEST_F(DriverVmm, ReservationHonoursAlignment) {
  CUdeviceptr p = reserve(kGran, 64 * kMiB);
  EXPECT_EQ(0u, p % (64 * kMiB));
  CUdeviceptr q = 0;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(&q, kGran, 3 * kMiB, 0, 0));  // not a power of 2
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(&q, 100, 0, 0, 0));          // not page-sized
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(&q, kGran, 0, 0, 1));        // flags
}

TEST_F(DriverVmm, ReservationHonoursFreeHint) {
  CUdeviceptr p = reserve(4 * kGran);
  CU_OK(cuMemAddressFree(p, 4 * kGran));
  reservations_.clear();
  CUdeviceptr q = 0;
  CU_OK(cuMemAddressReserve(&q, 4 * kGran, 0, p, 0));
  reservations_.push_back({q, 4 * kGran});
  EXPECT_EQ(p, q);
}

TEST_F(DriverVmm, AccessIsNotGrantedBeforeSetAccess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  CUdeviceptr p = reserve(kGran);
  CUmemGenericAllocationHandle h = create(kGran);
  CU_OK(cuMemMap(p, kGran, 0, h, 0));
  EXPECT_EQ("---s", perms_at(p));
  EXPECT_EXIT(touch_and_exit(p, false), ::testing::ExitedWithCode(42), "");

  CUmemAccessDesc ro = rw_access(0, CU_MEM_ACCESS_FLAGS_PROT_READ);
  CU_OK(cuMemSetAccess(p, kGran, &ro, 1));
  EXPECT_EQ("r--s", perms_at(p));
  EXPECT_EXIT(touch_and_exit(p, false), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(touch_and_exit(p, true), ::testing::ExitedWithCode(42), "");

  CUmemAccessDesc rw = rw_access();
  CU_OK(cuMemSetAccess(p, kGran, &rw, 1));
  EXPECT_EXIT(touch_and_exit(p, true), ::testing::ExitedWithCode(0), "");
  unsigned long long flags = 0;
  CUmemLocation loc = rw.location;
  CU_OK(cuMemGetAccess(&flags, &loc, p + 100));
  EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READWRITE, flags);

  CUmemAccessDesc none = rw_access(0, CU_MEM_ACCESS_FLAGS_PROT_NONE);
  CU_OK(cuMemSetAccess(p, kGran, &none, 1));
  EXPECT_EQ("---s", perms_at(p));
  CU_OK(cuMemUnmap(p, kGran));
  CU_OK(cuMemRelease(h));
}

TEST_F(DriverVmm, SetAccessValidates) {
  CUdeviceptr p = reserve(4 * kGran);
  CUmemGenericAllocationHandle h = create(kGran);
  CU_OK(cuMemMap(p, kGran, 0, h, 0));
  CUmemAccessDesc a = rw_access();
  // Every byte of the range must be mapped.
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(p, 2 * kGran, &a, 1));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(p + kGran, kGran, &a, 1));
  EXPECT_EQ("---s", perms_at(p));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(p, kGran, &a, 0));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(p, kGran, nullptr, 1));
  CUmemAccessDesc bad = rw_access(3);
  EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cuMemSetAccess(p, kGran, &bad, 1));
  bad = rw_access(0, static_cast<CUmemAccess_flags>(2));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(p, kGran, &bad, 1));
  // Host access to device memory.
  CUmemAccessDesc host = a;
  host.location.type = CU_MEM_LOCATION_TYPE_HOST;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(p, kGran, &host, 1));
  // A sub-range of a mapping is fine.
  CU_OK(cuMemSetAccess(p, kGran / 2, &a, 1));
  EXPECT_EQ("rw-s", perms_at(p));
  EXPECT_EQ("---s", perms_at(p + kGran / 2));
  CU_OK(cuMemUnmap(p, kGran));
  CU_OK(cuMemRelease(h));
}

TEST_F(DriverVmm, HostLocatedHandle) {
  CUmemAllocationProp prop = device_prop();
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
  CUmemGenericAllocationHandle h;
  CU_OK(cuMemCreate(&h, kGran, &prop, 0));
  EXPECT_EQ(0u, gpusim_device_used(0));  // not device memory
  CUdeviceptr p = reserve(kGran);
  CU_OK(cuMemMap(p, kGran, 0, h, 0));
  CUmemAccessDesc a[2] = {rw_access(), rw_access()};
  a[1].location.type = CU_MEM_LOCATION_TYPE_HOST;
  CU_OK(cuMemSetAccess(p, kGran, a, 2));
  static_cast<char*>(ptr(p))[5] = 7;
  CU_OK(cuMemUnmap(p, kGran));
  CU_OK(cuMemRelease(h));
}

TEST_F(DriverVmm, TwoMappingsOfOneHandleAlias) {
  CUdeviceptr a = reserve(kGran);
  CUdeviceptr b = reserve(2 * kGran);
  CUmemGenericAllocationHandle h = create(kGran);
  map_rw(a, kGran, h);
  map_rw(b + kGran, kGran, h);
  EXPECT_EQ(kGran, gpusim_device_used(0));  // one physical allocation
  auto* x = static_cast<char*>(ptr(a));
  auto* y = static_cast<char*>(ptr(b + kGran));
  std::strcpy(x + 1000, "through a");
  EXPECT_STREQ("through a", y + 1000);
  std::strcpy(y + 5000, "through b");
  EXPECT_STREQ("through b", x + 5000);
  CU_OK(cuMemUnmap(a, kGran));
  EXPECT_STREQ("through b", y + 5000);  // the other mapping is untouched
  CU_OK(cuMemUnmap(b + kGran, kGran));
  CU_OK(cuMemRelease(h));
  EXPECT_EQ(0u, gpusim_device_used(0));
}

TEST_F(DriverVmm, MapAtOffset) {
  CUdeviceptr whole = reserve(2 * kGran);
  CUdeviceptr half = reserve(kGran);
  CUmemGenericAllocationHandle h = create(2 * kGran);
  map_rw(whole, 2 * kGran, h);
  map_rw(half, kGran, h, kGran);  // the second granule of h
  static_cast<char*>(ptr(whole))[kGran + 3] = 'z';
  EXPECT_EQ('z', static_cast<char*>(ptr(half))[3]);
  CU_OK(cuMemUnmap(whole, 2 * kGran));
  CU_OK(cuMemUnmap(half, kGran));
  CU_OK(cuMemRelease(h));
}

TEST_F(DriverVmm, MapValidates) {
  CUdeviceptr p = reserve(4 * kGran);
  CUmemGenericAllocationHandle h = create(2 * kGran);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemMap(p + 4096, kGran, 0, h, 0));  // unaligned
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemMap(p, kMiB, 0, h, 0));          // partial granule
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemMap(p, kGran, kGran * 2, h, 0));  // past the handle
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemMap(p, 3 * kGran, 0, h, 0));      // larger than the handle
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemMap(p + 3 * kGran, 2 * kGran, 0, h, 0));  // past the reservation
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemMap(p, kGran, 0, h + 12345, 0));  // no such handle
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemMap(p, kGran, 0, h, 1));          // flags
  // Outside any reservation.
  void* heap = mmap(nullptr, 4 * kGran, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CUdeviceptr out = (reinterpret_cast<CUdeviceptr>(heap) + kGran - 1) & ~static_cast<CUdeviceptr>(kGran - 1);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemMap(out, kGran, 0, h, 0));
  munmap(heap, 4 * kGran);
  // Not over an existing mapping.
  CU_OK(cuMemMap(p + kGran, 2 * kGran, 0, h, 0));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemMap(p, 2 * kGran, 0, h, 0));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemMap(p + 2 * kGran, kGran, 0, h, 0));
  CU_OK(cuMemMap(p, kGran, 0, h, 0));  // the free granule before it is fine
  CU_OK(cuMemUnmap(p, kGran));
  CU_OK(cuMemUnmap(p + kGran, 2 * kGran));
  CU_OK(cuMemRelease(h));
}

TEST_F(DriverVmm, UnmapCoversWholeMappingsAndKeepsReservation) {
  CUdeviceptr p = reserve(4 * kGran);
  CUmemGenericAllocationHandle a = create(2 * kGran), b = create(kGran);
  map_rw(p, 2 * kGran, a);
  map_rw(p + 2 * kGran, kGran, b);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(p, kGran));                  // half a mapping
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(p + kGran, 2 * kGran));      // not at a mapping's start
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(p, 4 * kGran));              // runs past the last one
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(p + 3 * kGran, kGran));      // nothing mapped there
  EXPECT_EQ("rw-s", perms_at(p));
  CU_OK(cuMemUnmap(p, 3 * kGran));  // two adjacent whole mappings at once
  EXPECT_EQ("---p", perms_at(p));
  EXPECT_EQ("---p", perms_at(p + 2 * kGran));
  // Still reserved: a new mapping starts without access.
  CU_OK(cuMemMap(p, kGran, 0, b, 0));
  EXPECT_EQ("---s", perms_at(p));
  CU_OK(cuMemUnmap(p, kGran));
  CU_OK(cuMemRelease(a));
  CU_OK(cuMemRelease(b));
}

TEST_F(DriverVmm, AddressFreeRequiresNoMappings) {
  CUdeviceptr p = 0;
  CU_OK(cuMemAddressReserve(&p, 2 * kGran, 0, 0, 0));
  CUmemGenericAllocationHandle h = create(kGran);
  CU_OK(cuMemMap(p, kGran, 0, h, 0));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(p, 2 * kGran));
  CU_OK(cuMemUnmap(p, kGran));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(p, kGran));       // wrong size
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(p + kGran, kGran));  // not the start
  CU_OK(cuMemAddressFree(p, 2 * kGran));
  EXPECT_EQ("", perms_at(p));  // the range is gone
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(p, 2 * kGran));
  CU_OK(cuMemRelease(h));
}

TEST_F(DriverVmm, ReleaseWhileMappedKeepsMemoryUntilUnmap) {
  bind_primary_context();  // for cuMemGetInfo
  CUdeviceptr p = reserve(2 * kGran);
  CUmemGenericAllocationHandle h = create(2 * kGran);
  map_rw(p, 2 * kGran, h);
  std::strcpy(static_cast<char*>(ptr(p)), "alive");
  size_t free0 = 0, total = 0;
  CU_OK(cuMemGetInfo(&free0, &total));
  EXPECT_EQ(total - 2 * kGran, free0);
  CU_OK(cuMemRelease(h));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemRelease(h));  // one reference only
  EXPECT_STREQ("alive", static_cast<char*>(ptr(p)));
  size_t free1 = 0;
  CU_OK(cuMemGetInfo(&free1, &total));
  EXPECT_EQ(free0, free1);  // still allocated
  EXPECT_EQ(2 * kGran, gpusim_device_used(0));
  CU_OK(cuMemUnmap(p, 2 * kGran));
  CU_OK(cuMemGetInfo(&free1, &total));
  EXPECT_EQ(total, free1);  // freed with the last mapping
  EXPECT_EQ(0u, gpusim_device_used(0));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemMap(p, kGran, 0, h, 0));  // the handle is gone
}

TEST_F(DriverVmm, RetainAllocationHandle) {
  bind_primary_context();  // for cuMemGetAddressRange
  CUdeviceptr p = reserve(2 * kGran);
  CUmemGenericAllocationHandle h = create(2 * kGran);
  map_rw(p, 2 * kGran, h);
  CUmemGenericAllocationHandle r = 0;
  CU_OK(cuMemRetainAllocationHandle(&r, ptr(p + kGran + 17)));
  EXPECT_EQ(h, r);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemRetainAllocationHandle(&r, ptr(p + 2 * kGran)));
  CUdeviceptr base = 0;
  size_t size = 0;
  CU_OK(cuMemGetAddressRange(&base, &size, p + kGran));
  EXPECT_EQ(p, base);
  EXPECT_EQ(2 * kGran, size);
  CU_OK(cuMemRelease(h));
  CU_OK(cuMemUnmap(p, 2 * kGran));
  EXPECT_EQ(2 * kGran, gpusim_device_used(0));  // the retained reference keeps it
  CU_OK(cuMemRelease(r));
  EXPECT_EQ(0u, gpusim_device_used(0));
}

TEST_F(DriverVmm, AllocationProperties) {
  CUmemAllocationProp prop = device_prop(0, true);
  prop.allocFlags.gpuDirectRDMACapable = 1;
  CUmemGenericAllocationHandle h;
  CU_OK(cuMemCreate(&h, kGran, &prop, 0));
  CUmemAllocationProp got;
  std::memset(&got, 0xff, sizeof(got));
  CU_OK(cuMemGetAllocationPropertiesFromHandle(&got, h));
  EXPECT_EQ(CU_MEM_ALLOCATION_TYPE_PINNED, got.type);
  EXPECT_EQ(CU_MEM_LOCATION_TYPE_DEVICE, got.location.type);
  EXPECT_EQ(0, got.location.id);
  EXPECT_EQ(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, got.requestedHandleTypes);
  EXPECT_EQ(1, got.allocFlags.gpuDirectRDMACapable);
  CU_OK(cuMemRelease(h));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemGetAllocationPropertiesFromHandle(&got, h));
}

TEST_F(DriverVmm, ExportToPosixFdAliases) {
  CUdeviceptr p = reserve(kGran);
  CUmemGenericAllocationHandle h = create(kGran, /*posix_fd=*/true);
  map_rw(p, kGran, h);
  int fd = -1;
  CU_OK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  ASSERT_GE(fd, 0);
  void* m = mmap(nullptr, kGran, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(MAP_FAILED, m);
  std::strcpy(static_cast<char*>(ptr(p)) + 64, "device side");
  EXPECT_STREQ("device side", static_cast<char*>(m) + 64);
  std::strcpy(static_cast<char*>(m) + 4096, "fd side");
  EXPECT_STREQ("fd side", static_cast<char*>(ptr(p)) + 4096);
  munmap(m, kGran);
  close(fd);
  CU_OK(cuMemUnmap(p, kGran));
  CU_OK(cuMemRelease(h));
}

TEST_F(DriverVmm, ExportRequiresRequestedType) {
  CUmemGenericAllocationHandle h = create(kGran);  // no handle types requested
  int fd = -1;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  CUmemFabricHandle fabric;
  EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, cuMemExportToShareableHandle(&fabric, h, CU_MEM_HANDLE_TYPE_FABRIC, 0));
  CU_OK(cuMemRelease(h));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
}

TEST_F(DriverVmm, ImportFromPosixFd) {
  CUdeviceptr a = reserve(kGran), b = reserve(kGran);
  CUmemAllocationProp prop = device_prop(0, true);
  prop.allocFlags.gpuDirectRDMACapable = 1;
  CUmemGenericAllocationHandle h;
  CU_OK(cuMemCreate(&h, kGran, &prop, 0));
  map_rw(a, kGran, h);
  int fd = -1;
  CU_OK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  CUmemGenericAllocationHandle imported = 0;
  CU_OK(cuMemImportFromShareableHandle(&imported, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  close(fd);  // the caller's fd; the imported handle keeps its own
  EXPECT_NE(h, imported);
  EXPECT_EQ(kGran, gpusim_device_used(0));  // the same memory, not charged twice
  CUmemAllocationProp got;
  CU_OK(cuMemGetAllocationPropertiesFromHandle(&got, imported));
  EXPECT_EQ(CU_MEM_LOCATION_TYPE_DEVICE, got.location.type);
  EXPECT_EQ(0, got.location.id);
  EXPECT_EQ(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, got.requestedHandleTypes);
  EXPECT_EQ(1, got.allocFlags.gpuDirectRDMACapable);
  map_rw(b, kGran, imported);
  std::strcpy(static_cast<char*>(ptr(a)), "shared");
  EXPECT_STREQ("shared", static_cast<char*>(ptr(b)));
  CU_OK(cuMemUnmap(a, kGran));
  CU_OK(cuMemRelease(h));
  EXPECT_STREQ("shared", static_cast<char*>(ptr(b)));  // the import keeps the memory
  CU_OK(cuMemUnmap(b, kGran));
  CU_OK(cuMemRelease(imported));
}

TEST_F(DriverVmm, ImportRejectsForeignFds) {
  CUmemGenericAllocationHandle h;
  int null_fd = open("/dev/null", O_RDWR);
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
            cuMemImportFromShareableHandle(&h, reinterpret_cast<void*>(static_cast<intptr_t>(null_fd)),
                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  close(null_fd);
  int other = memfd_create("not-cuda", 0);
  ASSERT_EQ(0, ftruncate(other, kGran));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
            cuMemImportFromShareableHandle(&h, reinterpret_cast<void*>(static_cast<intptr_t>(other)),
                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  close(other);
  CUmemFabricHandle fabric;
  std::memset(&fabric, 0, sizeof(fabric));
  EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, cuMemImportFromShareableHandle(&h, &fabric, CU_MEM_HANDLE_TYPE_FABRIC));
}

TEST_F(DriverVmm, MemGetInfoTracksHandles) {
  bind_primary_context();  // for cuMemGetInfo
  size_t free0 = 0, total = 0;
  CU_OK(cuMemGetInfo(&free0, &total));
  EXPECT_EQ(8ull << 30, total);
  EXPECT_EQ(total, free0);
  CUmemGenericAllocationHandle h = create(4 * kGran);
  size_t free1 = 0;
  CU_OK(cuMemGetInfo(&free1, &total));
  EXPECT_EQ(free0 - 4 * kGran, free1);
  CU_OK(cuMemRelease(h));
  CU_OK(cuMemGetInfo(&free1, &total));
  EXPECT_EQ(free0, free1);
}

// Many threads creating, mapping, writing and tearing down at once (for
// ThreadSanitizer, and for the registry's consistency).
TEST_F(DriverVmm, ConcurrentUse) {
  constexpr int kThreads = 4, kRounds = 20;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        CUdeviceptr p = 0;
        CUmemGenericAllocationHandle h = 0;
        CUmemAllocationProp prop = device_prop();
        CUmemAccessDesc a = rw_access();
        bool ok = cuMemAddressReserve(&p, 2 * kGran, 0, 0, 0) == CUDA_SUCCESS &&
                  cuMemCreate(&h, kGran, &prop, 0) == CUDA_SUCCESS &&
                  cuMemMap(p + kGran, kGran, 0, h, 0) == CUDA_SUCCESS &&
                  cuMemSetAccess(p + kGran, kGran, &a, 1) == CUDA_SUCCESS;
        if (ok) {
          auto* c = static_cast<volatile int*>(ptr(p + kGran));
          c[i] = t * 1000 + i;
          ok = c[i] == t * 1000 + i;
        }
        ok = ok && cuMemRelease(h) == CUDA_SUCCESS && cuMemUnmap(p + kGran, kGran) == CUDA_SUCCESS &&
             cuMemAddressFree(p, 2 * kGran) == CUDA_SUCCESS;
        if (!ok) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(0, failures.load());
  EXPECT_EQ(0u, gpusim_device_used(0));
}

// ---- with the runtime ----

TEST_F(DriverVmm, RuntimeSeesMappedVmmAsDeviceMemory) {
  CUdeviceptr p = reserve(2 * kGran);
  CUmemGenericAllocationHandle h = create(2 * kGran);
  map_rw(p, 2 * kGran, h);
  cudaPointerAttributes attr;
  ASSERT_EQ(cudaSuccess, cudaPointerGetAttributes(&attr, ptr(p + 12345)));
  EXPECT_EQ(cudaMemoryTypeDevice, attr.type);
  EXPECT_EQ(0, attr.device);
  // The runtime's cudaMemGetInfo sees the handle too: one capacity.
  size_t free_rt = 0, total_rt = 0, free_drv = 0, total_drv = 0;
  ASSERT_EQ(cudaSuccess, cudaMemGetInfo(&free_rt, &total_rt));
  CU_OK(cuMemGetInfo(&free_drv, &total_drv));
  EXPECT_EQ(free_drv, free_rt);
  EXPECT_EQ(total_drv - 2 * kGran, free_rt);
  CU_OK(cuMemUnmap(p, 2 * kGran));
  CU_OK(cuMemRelease(h));
}

TEST_F(DriverVmm, CudaMemcpyBetweenVmmAndPageableHost) {
  const size_t n = 2 * kGran;
  CUdeviceptr p = reserve(n);
  CUmemGenericAllocationHandle h = create(n);
  map_rw(p, n, h);
  std::vector<unsigned char> in(n), out(n, 0);
  for (size_t i = 0; i < n; ++i) in[i] = static_cast<unsigned char>(i * 7 + 3);
  ASSERT_EQ(cudaSuccess, cudaMemcpy(ptr(p), in.data(), n, cudaMemcpyHostToDevice));
  ASSERT_EQ(cudaSuccess, cudaMemcpy(out.data(), ptr(p), n, cudaMemcpyDeviceToHost));
  EXPECT_EQ(in, out);
  ASSERT_EQ(cudaSuccess, cudaMemset(ptr(p), 0x5a, 4096));
  ASSERT_EQ(cudaSuccess, cudaMemcpy(out.data(), ptr(p), 4096, cudaMemcpyDefault));
  EXPECT_EQ(0x5a, out[0]);
  EXPECT_EQ(0x5a, out[4095]);
  CU_OK(cuCtxSynchronize());
  CU_OK(cuMemUnmap(p, n));
  CU_OK(cuMemRelease(h));
}

}  // namespace

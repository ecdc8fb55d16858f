// Fabric handles of the simulated driver (README.md, "Driver API", VMM;
// Note [A fabric handle names a memfd of its exporter] in
// driver_vmm_backing.h), with GPUSIM_FABRIC_HANDLES=1 (CMakeLists.txt): the
// device says it offers them, a handle created asking for them exports 64
// bytes that another process imports as the same bytes, with no descriptor
// passed. driver_fabric_refused_test.cc: where creation is refused.
#include <cuda.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "driver_test_util.h"

using namespace drivertest;

namespace {

CUmemAllocationProp fabric_prop() {
  CUmemAllocationProp p = device_prop(0, /*posix_fd=*/true);
  p.requestedHandleTypes =
      static_cast<CUmemAllocationHandleType>(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC);
  return p;
}

// Maps `h` read-write over a new reservation of kGran bytes.
CUdeviceptr map_rw(CUmemGenericAllocationHandle h) {
  CUdeviceptr p = 0;
  if (cuMemAddressReserve(&p, kGran, 0, 0, 0) != CUDA_SUCCESS) return 0;
  CUmemAccessDesc a = rw_access();
  if (cuMemMap(p, kGran, 0, h, 0) != CUDA_SUCCESS || cuMemSetAccess(p, kGran, &a, 1) != CUDA_SUCCESS) return 0;
  return p;
}

void unmap(CUdeviceptr p) {
  EXPECT_EQ(CUDA_SUCCESS, cuMemUnmap(p, kGran));
  EXPECT_EQ(CUDA_SUCCESS, cuMemAddressFree(p, kGran));
}

TEST(DriverFabric, OnlyAHandleCreatedForFabricExportsOne) {
  CU_OK(cuInit(0));
  CUmemAllocationProp p = device_prop(0, /*posix_fd=*/true);
  CUmemGenericAllocationHandle h;
  CU_OK(cuMemCreate(&h, kGran, &p, 0));
  CUmemFabricHandle f;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemExportToShareableHandle(&f, h, CU_MEM_HANDLE_TYPE_FABRIC, 0));
  CU_OK(cuMemRelease(h));
  // Noise names nothing.
  std::memset(&f, 0x5a, sizeof(f));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemImportFromShareableHandle(&h, &f, CU_MEM_HANDLE_TYPE_FABRIC));
}

TEST(DriverFabric, AnImportMapsTheSameBytesAndKeepsThemAfterTheExportersRelease) {
  CU_OK(cuInit(0));
  CUmemAllocationProp p = fabric_prop();
  CUmemGenericAllocationHandle h, imported;
  CU_OK(cuMemCreate(&h, kGran, &p, 0));
  CUmemFabricHandle f;
  static_assert(sizeof(f) == 64, "64 bytes");
  CU_OK(cuMemExportToShareableHandle(&f, h, CU_MEM_HANDLE_TYPE_FABRIC, 0));
  CU_OK(cuMemImportFromShareableHandle(&imported, &f, CU_MEM_HANDLE_TYPE_FABRIC));
  CUdeviceptr a = map_rw(h), b = map_rw(imported);
  ASSERT_TRUE(a && b);
  std::memset(ptr(a), 0x3c, kGran);
  EXPECT_EQ(0x3c, static_cast<unsigned char*>(ptr(b))[kGran - 1]);
  unmap(a);
  CU_OK(cuMemRelease(h));
  EXPECT_EQ(0x3c, static_cast<unsigned char*>(ptr(b))[12345]);  // the import holds the memory
  // The exporter's handle is gone: its fabric handle names nothing now.
  CUmemGenericAllocationHandle again;
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemImportFromShareableHandle(&again, &f, CU_MEM_HANDLE_TYPE_FABRIC));
  unmap(b);
  CU_OK(cuMemRelease(imported));
}

// Another process imports the 64 bytes (no descriptor passed: the child
// gets them in its copy of memory, as it would over any channel), writes,
// and the exporter reads what it wrote; then the reverse.
TEST(DriverFabric, AnotherProcessImportsTheSameBytesBothWays) {
  CU_OK(cuInit(0));
  CUmemAllocationProp p = fabric_prop();
  CUmemGenericAllocationHandle h;
  CU_OK(cuMemCreate(&h, kGran, &p, 0));
  CUmemFabricHandle f;
  CU_OK(cuMemExportToShareableHandle(&f, h, CU_MEM_HANDLE_TYPE_FABRIC, 0));
  CUdeviceptr a = map_rw(h);
  ASSERT_NE(0u, a);
  std::memset(ptr(a), 0x11, kGran);
  int to_child[2], to_parent[2];
  ASSERT_EQ(0, pipe(to_child));
  ASSERT_EQ(0, pipe(to_parent));
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    CUmemGenericAllocationHandle mine;
    if (cuMemImportFromShareableHandle(&mine, &f, CU_MEM_HANDLE_TYPE_FABRIC) != CUDA_SUCCESS) _exit(2);
    CUdeviceptr b = map_rw(mine);
    if (!b) _exit(3);
    auto* bytes = static_cast<unsigned char*>(ptr(b));
    if (bytes[0] != 0x11 || bytes[kGran - 1] != 0x11) _exit(4);  // the exporter's bytes
    std::memset(bytes, 0x22, kGran);
    char c = 'w';
    if (write(to_parent[1], &c, 1) != 1 || read(to_child[0], &c, 1) != 1) _exit(5);
    if (bytes[7] != 0x33) _exit(6);  // the exporter's write since
    _exit(0);
  }
  char c;
  ASSERT_EQ(1, read(to_parent[0], &c, 1));
  auto* bytes = static_cast<unsigned char*>(ptr(a));
  EXPECT_EQ(0x22, bytes[0]);
  EXPECT_EQ(0x22, bytes[kGran - 1]);
  std::memset(bytes, 0x33, kGran);
  ASSERT_EQ(1, write(to_child[1], &c, 1));
  int status = 0;
  ASSERT_EQ(child, waitpid(child, &status, 0));
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(0, WEXITSTATUS(status));
  unmap(a);
  CU_OK(cuMemRelease(h));
}

}  // namespace

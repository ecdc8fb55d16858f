// Where the simulated driver keeps the bytes of physical VMM allocations
// (driver_vmm_backing.h, Note [One arena, not one memfd per handle]): far
// more handles than the process may open files, pages held only while
// touched and given back on release, and the first export moving a mapped
// handle onto a memfd of its own without losing its bytes, its mappings or
// their protections. The documented VMM behaviour itself: driver_vmm_test.cc.
#include <cuda.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "driver_test_util.h"
#include "gpusim.h"

using namespace drivertest;

namespace {

// Open descriptors of this process.
int open_fds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n - 1;  // opendir's own
}

// Bytes of memory the arena memfd holds (its allocated blocks); 0 when there
// is none yet.
size_t arena_bytes() {
  for (int fd = 0; fd < 1024; ++fd) {
    char path[64], target[256];
    std::snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, target, sizeof(target) - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    if (std::strncmp(target, "/memfd:gpusim-vmm-arena", 23) != 0) continue;
    struct stat st;
    if (fstat(fd, &st) != 0) return 0;
    return static_cast<size_t>(st.st_blocks) * 512;
  }
  return 0;
}

// The most a touch of one page may fault in: a huge page when the kernel
// backs shmem with them.
size_t touch_unit() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/shmem_enabled");
  std::string s;
  std::getline(f, s);
  bool huge = s.find("[always]") != std::string::npos || s.find("[within_size]") != std::string::npos ||
              s.find("[force]") != std::string::npos;
  return huge ? kGran : static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

class DriverVmmBacking : public DriverTest {
 protected:
  void TearDown() override {
    for (auto& r : reservations_) cuMemAddressFree(r.first, r.second);
  }
  CUdeviceptr reserve(size_t size) {
    CUdeviceptr p = 0;
    EXPECT_EQ(CUDA_SUCCESS, cuMemAddressReserve(&p, size, 0, 0, 0));
    reservations_.push_back({p, size});
    return p;
  }
  // As gpuslack's allocator and PyTorch's expandable segments ask: exportable.
  CUmemGenericAllocationHandle create(size_t size = kGran) {
    CUmemAllocationProp prop = device_prop(0, /*posix_fd=*/true);
    CUmemGenericAllocationHandle h = 0;
    EXPECT_EQ(CUDA_SUCCESS, cuMemCreate(&h, size, &prop, 0));
    return h;
  }
  void map(CUdeviceptr p, CUmemGenericAllocationHandle h,
           CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
    ASSERT_EQ(CUDA_SUCCESS, cuMemMap(p, kGran, 0, h, 0));
    CUmemAccessDesc a = rw_access(0, flags);
    ASSERT_EQ(CUDA_SUCCESS, cuMemSetAccess(p, kGran, &a, 1));
  }
  std::vector<std::pair<CUdeviceptr, size_t>> reservations_;
};

uint64_t* words(CUdeviceptr p) { return static_cast<uint64_t*>(ptr(p)); }
constexpr size_t kWords = kGran / sizeof(uint64_t);

// 2,000 handles of 2 MiB, created, mapped and released under a limit of 256
// open files: what a replay of a 4 GiB trace in 2 MiB chunks does (one
// memfd per handle stopped at the limit).
TEST_F(DriverVmmBacking, MoreHandlesThanFileDescriptors) {
  constexpr size_t kHandles = 2000;
  struct rlimit lim;
  ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &lim));
  lim.rlim_cur = 256;
  ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &lim));
  int fds0 = open_fds();
  CUdeviceptr base = reserve(kHandles * kGran);
  std::vector<CUmemGenericAllocationHandle> hs;
  for (size_t i = 0; i < kHandles; ++i) {
    hs.push_back(create());
    ASSERT_NE(0u, hs.back()) << "handle " << i;
    map(base + i * kGran, hs.back());
  }
  EXPECT_LE(open_fds(), fds0 + 1);  // the arena, if anything
  EXPECT_EQ(kHandles * kGran, gpusim_device_used(0));
  EXPECT_EQ(0u, arena_bytes());  // nothing touched, nothing faulted in
  // Each handle its own bytes: a word at both ends.
  for (size_t i = 0; i < kHandles; ++i) {
    uint64_t* w = words(base + i * kGran);
    w[0] = 2 * i + 1;
    w[kWords - 1] = 2 * i + 2;
  }
  for (size_t i = 0; i < kHandles; ++i) {
    uint64_t* w = words(base + i * kGran);
    ASSERT_EQ(2 * i + 1, w[0]) << "handle " << i;
    ASSERT_EQ(2 * i + 2, w[kWords - 1]) << "handle " << i;
  }
  size_t held = arena_bytes();
  EXPECT_GE(held, kHandles * 2 * static_cast<size_t>(sysconf(_SC_PAGESIZE)));
  EXPECT_LE(held, kHandles * 2 * touch_unit());  // only the touched pages
  // Released while mapped: the memory stays until the mapping goes.
  for (size_t i = 0; i < kHandles; ++i) ASSERT_EQ(CUDA_SUCCESS, cuMemRelease(hs[i]));
  EXPECT_EQ(kHandles * kGran, gpusim_device_used(0));
  EXPECT_EQ(2 * kHandles, words(base + (kHandles - 1) * kGran)[kWords - 1]);
  CU_OK(cuMemUnmap(base, kHandles * kGran));
  EXPECT_EQ(0u, gpusim_device_used(0));
  EXPECT_EQ(0u, arena_bytes());  // every page given back
  EXPECT_LE(open_fds(), fds0 + 1);
  // Memory created afterwards starts zeroed, wherever it comes from.
  CUmemGenericAllocationHandle again = create();
  map(base, again);
  EXPECT_EQ(0u, words(base)[0]);
  EXPECT_EQ(0u, words(base)[kWords - 1]);
  CU_OK(cuMemUnmap(base, kGran));
  CU_OK(cuMemRelease(again));
}

// The first export moves a mapped handle onto a memfd of its own: its bytes,
// both of its mappings, their protections and its neighbours' bytes survive.
TEST_F(DriverVmmBacking, FirstExportMovesLiveMappings) {
  CUdeviceptr p = reserve(3 * kGran), q = reserve(kGran);
  CUmemGenericAllocationHandle before = create(), h = create(), after = create();
  map(p, before);
  map(p + kGran, h);
  map(p + 2 * kGran, after);
  map(q, h, CU_MEM_ACCESS_FLAGS_PROT_READ);
  words(p)[kWords - 1] = 11;
  words(p + kGran)[0] = 22;
  words(p + kGran)[kWords - 1] = 23;
  words(p + 2 * kGran)[0] = 33;
  EXPECT_EQ(22u, words(q)[0]);
  int fd = -1;
  CU_OK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  ASSERT_GE(fd, 0);
  EXPECT_EQ("rw-s", perms_at(p + kGran));
  EXPECT_EQ("r--s", perms_at(q));
  EXPECT_EQ(22u, words(p + kGran)[0]);
  EXPECT_EQ(23u, words(q)[kWords - 1]);
  EXPECT_EQ(11u, words(p)[kWords - 1]);
  EXPECT_EQ(33u, words(p + 2 * kGran)[0]);
  // Untouched pages were not copied into being.
  struct stat st;
  ASSERT_EQ(0, fstat(fd, &st));
  EXPECT_EQ(static_cast<off_t>(kGran), st.st_size);
  EXPECT_LE(static_cast<size_t>(st.st_blocks) * 512, 2 * touch_unit());
  // The mappings and the exported file are one memory.
  auto* m = static_cast<uint64_t*>(mmap(nullptr, kGran, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  ASSERT_NE(MAP_FAILED, static_cast<void*>(m));
  EXPECT_EQ(22u, m[0]);
  m[7] = 77;
  EXPECT_EQ(77u, words(p + kGran)[7]);
  EXPECT_EQ(77u, words(q)[7]);
  words(p + kGran)[8] = 88;
  EXPECT_EQ(88u, m[8]);
  EXPECT_EQ(88u, words(q)[8]);
  munmap(m, kGran);
  close(fd);
  // A second export is the same file.
  CU_OK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  m = static_cast<uint64_t*>(mmap(nullptr, kGran, PROT_READ, MAP_SHARED, fd, 0));
  ASSERT_NE(MAP_FAILED, static_cast<void*>(m));
  EXPECT_EQ(88u, m[8]);
  munmap(m, kGran);
  close(fd);
  // Released while mapped, the moved handle keeps its memory until unmapped.
  CU_OK(cuMemRelease(h));
  CU_OK(cuMemUnmap(p + kGran, kGran));
  EXPECT_EQ(88u, words(q)[8]);
  EXPECT_EQ(3 * kGran, gpusim_device_used(0));
  CU_OK(cuMemUnmap(q, kGran));
  EXPECT_EQ(2 * kGran, gpusim_device_used(0));
  CU_OK(cuMemUnmap(p, kGran));
  CU_OK(cuMemUnmap(p + 2 * kGran, kGran));
  CU_OK(cuMemRelease(before));
  CU_OK(cuMemRelease(after));
  EXPECT_EQ(0u, gpusim_device_used(0));
}

// Exported before it is ever mapped, then mapped: the mapping is the file.
TEST_F(DriverVmmBacking, MapAfterExportMapsTheExportedFile) {
  CUdeviceptr p = reserve(kGran);
  CUmemGenericAllocationHandle h = create();
  int fd = -1;
  CU_OK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  map(p, h);
  auto* m = static_cast<uint64_t*>(mmap(nullptr, kGran, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  ASSERT_NE(MAP_FAILED, static_cast<void*>(m));
  words(p)[3] = 3;
  EXPECT_EQ(3u, m[3]);
  munmap(m, kGran);
  close(fd);
  CU_OK(cuMemUnmap(p, kGran));
  CU_OK(cuMemRelease(h));
}

// Another process imports the exported fd, maps it and sees (and writes) the
// exporter's bytes.
TEST_F(DriverVmmBacking, ExportedHandleImportsInAnotherProcess) {
  CUdeviceptr p = reserve(kGran);
  CUmemGenericAllocationHandle h = create();
  map(p, h);
  words(p)[5] = 55;
  int fd = -1;
  CU_OK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    CUmemGenericAllocationHandle imported = 0;
    CUdeviceptr c = 0;
    if (cuMemImportFromShareableHandle(&imported, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != CUDA_SUCCESS)
      _exit(2);
    if (cuMemAddressReserve(&c, kGran, 0, 0, 0) != CUDA_SUCCESS) _exit(3);
    if (cuMemMap(c, kGran, 0, imported, 0) != CUDA_SUCCESS) _exit(4);
    CUmemAccessDesc a = rw_access();
    if (cuMemSetAccess(c, kGran, &a, 1) != CUDA_SUCCESS) _exit(5);
    if (words(c)[5] != 55) _exit(6);
    words(c)[6] = 66;
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(child, waitpid(child, &status, 0));
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(0, WEXITSTATUS(status));
  EXPECT_EQ(66u, words(p)[6]);
  close(fd);
  CU_OK(cuMemUnmap(p, kGran));
  CU_OK(cuMemRelease(h));
}

}  // namespace

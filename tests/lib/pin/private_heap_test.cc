#include "pin/private_heap.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <malloc.h>

#include <cstring>

namespace gpuslack {
namespace pin {
namespace {

TEST(PrivateHeap, IsJemalloc53AndCountsItsBytes) {
  EXPECT_EQ(0, std::strncmp(jemalloc_version(), "5.3.0", 5)) << jemalloc_version();
  size_t before = private_allocated_bytes();
  void* p = private_alloc(1 << 20);
  ASSERT_NE(nullptr, p);
  std::memset(p, 1, 1 << 20);
  EXPECT_GE(private_allocated_bytes(), before + (1 << 20));
  private_free(p);
  EXPECT_LT(private_allocated_bytes(), before + (1 << 20));
}

TEST(PrivateHeap, LeavesTheProcessMallocAlone) {
  // This test links the private instance statically. Had it defined malloc
  // or free, the process's would resolve into this executable; they must
  // still come from a shared library (the C library, or a sanitizer's).
  Dl_info self{}, m{}, f{};
  ASSERT_TRUE(dladdr(reinterpret_cast<void*>(&private_alloc), &self));
  ASSERT_TRUE(dladdr(dlsym(RTLD_DEFAULT, "malloc"), &m));
  ASSERT_TRUE(dladdr(dlsym(RTLD_DEFAULT, "free"), &f));
  EXPECT_NE(self.dli_fbase, m.dli_fbase) << m.dli_fname;
  EXPECT_NE(self.dli_fbase, f.dli_fbase) << f.dli_fname;
  size_t before = private_allocated_bytes();
  void* q = malloc(1 << 20);
  EXPECT_LT(private_allocated_bytes(), before + (1 << 20));
  free(q);
}

}  // namespace
}  // namespace pin
}  // namespace gpuslack

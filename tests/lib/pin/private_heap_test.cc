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
  // The process's malloc is still the C library's: the private instance
  // exports nothing and shadows nothing.
  void* libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  ASSERT_NE(nullptr, libc);
  EXPECT_EQ(dlsym(libc, "malloc"), dlsym(RTLD_DEFAULT, "malloc"));
  EXPECT_EQ(dlsym(libc, "free"), dlsym(RTLD_DEFAULT, "free"));
  size_t before = private_allocated_bytes();
  void* q = malloc(1 << 20);
  EXPECT_LT(private_allocated_bytes(), before + (1 << 20));
  free(q);
  dlclose(libc);
}

}  // namespace
}  // namespace pin
}  // namespace gpuslack

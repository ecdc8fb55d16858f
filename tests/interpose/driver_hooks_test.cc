// The driver API hooks (interpose/driver_hook_table.h) and the entry-point
// lookups (interpose/entry_points.cc), in process: every driver row returns
// exactly what the driver returns and leaves the same bytes, for valid and
// invalid arguments and on a thread with no context; the ledger counts what
// went through the hooks; cuGetProcAddress and cudaGetDriverEntryPoint
// through gpuslack hand out gpuslack's hook of the exact variant the
// version and the per-thread flag select, and the driver's own pointer, the
// same result and the same status for everything else.
//
// Like hooks_test.cc: the test links the simulated runtime (and with it the
// driver) and dlopen()s libgpuslack.so, so each symbol is reachable as the
// driver's own function and as gpuslack's hook.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "driver_hook_table.h"
#include "in_process.h"

namespace {

using gpuslack::CallInfo;  // named by the table's info column

struct Api {
#define GPUSLACK_API_MEMBER(sym, ret, params, ...) ret(*sym) params = nullptr;
  GPUSLACK_DRIVER_HOOKS(GPUSLACK_API_MEMBER)
  GPUSLACK_DRIVER_COUNTED_HOOKS(GPUSLACK_API_MEMBER)
#undef GPUSLACK_API_MEMBER
  CUresult (*get_proc)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*) = nullptr;
};

void* gpuslack_handle() { return in_process::gpuslack("text_summary:off,json_summary:false"); }
void* driver_handle() {
  static void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return h;
}

Api load(void* handle) {
  Api a;
#define GPUSLACK_API_LOAD(sym, ...) a.sym = reinterpret_cast<decltype(a.sym)>(dlsym(handle, #sym));
  GPUSLACK_DRIVER_HOOKS(GPUSLACK_API_LOAD)
  GPUSLACK_DRIVER_COUNTED_HOOKS(GPUSLACK_API_LOAD)
#undef GPUSLACK_API_LOAD
  a.get_proc = reinterpret_cast<decltype(a.get_proc)>(dlsym(handle, "cuGetProcAddress_v2"));
  return a;
}
const Api& driver() {
  static Api a = load(driver_handle());
  return a;
}
const Api& hooks() {
  static Api a = load(gpuslack_handle());
  return a;
}

// A current context on the calling thread, bound through the driver itself.
void bind_context() {
  static CUcontext ctx = [] {
    CUcontext c = nullptr;
    EXPECT_EQ(CUDA_SUCCESS, cuInit(0));
    EXPECT_EQ(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&c, 0));
    return c;
  }();
  ASSERT_EQ(CUDA_SUCCESS, cuCtxSetCurrent(ctx));
}

// The count of `name` in the live summary, or -1.
long count_of(const std::string& name) {
  std::string json = in_process::summary_json(gpuslack_handle());
  size_t at = json.find("\"name\": \"" + name + "\"");
  if (at == std::string::npos) return -1;
  size_t c = json.find("\"count\": ", at);
  return c == std::string::npos ? -1 : std::atol(json.c_str() + c + 9);
}

TEST(DriverHooks, EveryRowIsHookedAndDistinctFromTheDriver) {
  ASSERT_NE(nullptr, gpuslack_handle()) << dlerror();
  ASSERT_NE(nullptr, driver_handle());
  int rows = 0;
#define GPUSLACK_CHECK_ROW(sym, ...)                                    \
  EXPECT_NE(nullptr, reinterpret_cast<void*>(hooks().sym)) << #sym;     \
  EXPECT_NE(nullptr, reinterpret_cast<void*>(driver().sym)) << #sym;    \
  EXPECT_NE(reinterpret_cast<void*>(hooks().sym), reinterpret_cast<void*>(driver().sym)) << #sym; \
  ++rows;
  GPUSLACK_DRIVER_HOOKS(GPUSLACK_CHECK_ROW)
  GPUSLACK_DRIVER_COUNTED_HOOKS(GPUSLACK_CHECK_ROW)
#undef GPUSLACK_CHECK_ROW
  EXPECT_GT(rows, 60);
}

// One scenario through both: the same results, the same bytes.
struct Outcome {
  std::vector<CUresult> results;
  std::vector<unsigned char> bytes;
};

Outcome scenario(const Api& a) {
  Outcome o;
  auto r = [&](CUresult x) { o.results.push_back(x); };
  const size_t n = 1 << 16;
  CUdeviceptr d = 0, e = 0;
  r(a.cuMemAlloc_v2(&d, n));
  r(a.cuMemAlloc_v2(&e, n));
  r(a.cuMemAlloc_v2(&e, 0));  // invalid size: e is cleared as the driver clears it
  r(a.cuMemAlloc_v2(&e, n));
  std::vector<unsigned char> host(n), back(n);
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<unsigned char>(i * 13);
  r(a.cuMemcpyHtoD_v2(d, host.data(), n));
  r(a.cuMemcpyHtoD_v2(d + n / 2, host.data(), n));  // past the allocation's end
  r(a.cuMemcpyHtoD_v2_ptds(d, host.data(), n / 2));
  r(a.cuMemcpyDtoD_v2(e, d, n));
  r(a.cuMemsetD8_v2(e + 16, 0xab, 32));
  r(a.cuMemsetD32_v2(e + 1, 7, 4));  // misaligned
  r(a.cuMemsetD16Async(e + 64, 0x1234, 8, nullptr));
  r(a.cuStreamSynchronize(nullptr));
  r(a.cuMemcpyDtoH_v2(back.data(), e, n));
  r(a.cuMemcpyDtoH_v2(back.data(), 0x10, 8));  // not device memory
  CUDA_MEMCPY2D c{};
  c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  c.srcDevice = e;
  c.srcPitch = 256;
  c.dstMemoryType = CU_MEMORYTYPE_HOST;
  c.dstHost = back.data() + 1024;
  c.dstPitch = 128;
  c.WidthInBytes = 64;
  c.Height = 8;
  r(a.cuMemcpy2D_v2(&c));
  CUdeviceptr range_base = 0;
  size_t range_size = 0;
  r(a.cuMemGetAddressRange_v2(&range_base, &range_size, d + 100));  // the allocation holding it
  r(static_cast<CUresult>(range_base == d && range_size == n));
  r(a.cuMemGetAddressRange_v2(&range_base, &range_size, 0x10));  // not device memory
  r(a.cuMemFree_v2(e + 8));  // interior pointer
  r(a.cuMemFree_v2(d));
  r(a.cuMemFree_v2(e));
  r(a.cuMemFree_v2(d));  // freed twice
  CUstream s = nullptr;
  r(a.cuStreamCreate(&s, 7));  // invalid flags
  r(a.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  r(a.cuStreamSynchronize(s));
  r(a.cuStreamDestroy_v2(s));
  r(a.cuStreamDestroy_v2(nullptr));
  r(a.cuCtxSynchronize());
  r(a.cuEventSynchronize(nullptr));
  o.bytes = back;
  return o;
}

TEST(DriverHooks, ForwardedUnchangedWithValidAndInvalidArguments) {
  ASSERT_NE(nullptr, gpuslack_handle());
  bind_context();
  Outcome native = scenario(driver());
  long before = count_of("cuMemAlloc_v2");
  Outcome hooked = scenario(hooks());
  EXPECT_EQ(native.results, hooked.results);
  EXPECT_EQ(native.bytes, hooked.bytes);
  // 4 calls of cuMemAlloc_v2 per scenario, failed ones included.
  EXPECT_EQ((before < 0 ? 0 : before) + 4, count_of("cuMemAlloc_v2"));
  EXPECT_GE(count_of("cuMemcpyHtoD_v2_ptds"), 1);
  EXPECT_GE(count_of("cuStreamDestroy_v2"), 2);
}

TEST(DriverHooks, AThreadWithoutAContextGetsTheDriversAnswer) {
  ASSERT_NE(nullptr, gpuslack_handle());
  bind_context();  // the driver is initialized; the new thread has no context
  CUresult native = CUDA_SUCCESS, hooked = CUDA_SUCCESS, sync_native = CUDA_SUCCESS, sync_hooked = CUDA_SUCCESS;
  std::thread([&] {
    CUdeviceptr p = 0;
    native = driver().cuMemAlloc_v2(&p, 4096);
    hooked = hooks().cuMemAlloc_v2(&p, 4096);
    sync_native = driver().cuStreamSynchronize(nullptr);
    sync_hooked = hooks().cuStreamSynchronize(nullptr);
  }).join();
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, native);
  EXPECT_EQ(native, hooked);
  EXPECT_EQ(sync_native, sync_hooked);
}

// What gpuslack's cuGetProcAddress_v2 hands out for (name, version, flags),
// next to what the driver's does.
struct Lookup {
  CUresult result;
  void* fn;
  CUdriverProcAddressQueryResult status;
};
Lookup lookup(const Api& a, const char* name, int version, cuuint64_t flags) {
  Lookup l{CUDA_ERROR_UNKNOWN, reinterpret_cast<void*>(1), CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT};
  l.result = a.get_proc(name, &l.fn, version, flags, &l.status);
  return l;
}

TEST(DriverHooks, CuGetProcAddressHandsOutTheHookOfTheExactVariant) {
  ASSERT_NE(nullptr, hooks().get_proc);
  ASSERT_NE(hooks().get_proc, driver().get_proc);
  struct Case {
    const char* name;
    int version;
    cuuint64_t flags;
    void* expected;  // gpuslack's hook
  } cases[] = {
      {"cuMemAlloc", 13000, 0, reinterpret_cast<void*>(hooks().cuMemAlloc_v2)},
      {"cuMemAlloc", 3020, 0, reinterpret_cast<void*>(hooks().cuMemAlloc_v2)},
      {"cuMemcpyHtoD", 12000, 0, reinterpret_cast<void*>(hooks().cuMemcpyHtoD_v2)},
      {"cuMemcpyHtoD", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
       reinterpret_cast<void*>(hooks().cuMemcpyHtoD_v2_ptds)},
      {"cuMemcpyHtoD", 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, reinterpret_cast<void*>(hooks().cuMemcpyHtoD_v2)},
      {"cuStreamSynchronize", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
       reinterpret_cast<void*>(hooks().cuStreamSynchronize_ptsz)},
      // No per-thread variant: the legacy one, as the driver does.
      {"cuMemCreate", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
       reinterpret_cast<void*>(hooks().cuMemCreate)},
      {"cuMemMap", 12000, 0, reinterpret_cast<void*>(hooks().cuMemMap)},
      {"cuStreamDestroy", 12000, 0, reinterpret_cast<void*>(hooks().cuStreamDestroy_v2)},
      {"cuCtxSynchronize", 12080, 0, reinterpret_cast<void*>(hooks().cuCtxSynchronize)},
      {"cuCtxSynchronize", 13000, 0, reinterpret_cast<void*>(hooks().cuCtxSynchronize_v2)},
      {"cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
       reinterpret_cast<void*>(hooks().cuLaunchKernel_ptsz)},
  };
  for (const Case& c : cases) {
    Lookup native = lookup(driver(), c.name, c.version, c.flags);
    Lookup hooked = lookup(hooks(), c.name, c.version, c.flags);
    SCOPED_TRACE(std::string(c.name) + " @" + std::to_string(c.version) + " flags " + std::to_string(c.flags));
    EXPECT_EQ(native.result, hooked.result);
    EXPECT_EQ(native.status, hooked.status);
    ASSERT_NE(nullptr, native.fn);
    EXPECT_EQ(c.expected, hooked.fn);
  }
  // Not hooked: the driver's pointer, result and status unchanged.
  for (const char* name : {"cuDeviceGet", "cuMemGetInfo", "cuNoSuchFunction", "cuInit"}) {
    Lookup native = lookup(driver(), name, 13000, 0);
    Lookup hooked = lookup(hooks(), name, 13000, 0);
    EXPECT_EQ(native.result, hooked.result) << name;
    EXPECT_EQ(native.status, hooked.status) << name;
    EXPECT_EQ(native.fn, hooked.fn) << name;
  }
  // Bad arguments: the driver's error.
  void* fn = nullptr;
  EXPECT_EQ(driver().get_proc(nullptr, &fn, 13000, 0, nullptr), hooks().get_proc(nullptr, &fn, 13000, 0, nullptr));
  EXPECT_EQ(driver().get_proc("cuMemAlloc", &fn, 13000, 0x100, nullptr),
            hooks().get_proc("cuMemAlloc", &fn, 13000, 0x100, nullptr));
  EXPECT_EQ(driver().get_proc("cuMemAlloc", nullptr, 13000, 0, nullptr),
            hooks().get_proc("cuMemAlloc", nullptr, 13000, 0, nullptr));
}

// Note [Only the function the hook forwards to] (entry_points.cc): a lookup
// whose answer is not the exported function the hook forwards to (here the
// simulated driver's own wrapper, GPUSIM_WRAP_ENTRY_POINT, as a tool that
// wraps the driver's entry points would hand out) is passed on unchanged.
TEST(DriverHooks, ALookupThatFindsAnotherFunctionKeepsIt) {
  ASSERT_EQ(0, setenv("GPUSIM_WRAP_ENTRY_POINT", "cuMemAlloc", 1));
  Lookup native = lookup(driver(), "cuMemAlloc", 13000, 0);
  Lookup hooked = lookup(hooks(), "cuMemAlloc", 13000, 0);
  // The same name again through the hook once the wrapper is gone.
  ASSERT_EQ(0, unsetenv("GPUSIM_WRAP_ENTRY_POINT"));
  Lookup plain = lookup(hooks(), "cuMemAlloc", 13000, 0);
  ASSERT_EQ(CUDA_SUCCESS, native.result);
  ASSERT_NE(reinterpret_cast<void*>(driver().cuMemAlloc_v2), native.fn) << "the knob gave no wrapper";
  EXPECT_EQ(native.result, hooked.result);
  EXPECT_EQ(native.status, hooked.status);
  EXPECT_EQ(native.fn, hooked.fn);
  EXPECT_NE(reinterpret_cast<void*>(hooks().cuMemAlloc_v2), hooked.fn);
  EXPECT_EQ(reinterpret_cast<void*>(hooks().cuMemAlloc_v2), plain.fn);
  // What was handed out works: it is the wrapper, which calls the driver.
  ASSERT_NE(nullptr, gpuslack_handle());
  bind_context();
  CUdeviceptr p = 0;
  ASSERT_EQ(CUDA_SUCCESS, reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(hooked.fn)(&p, 4096));
  EXPECT_EQ(CUDA_SUCCESS, driver().cuMemFree_v2(p));
}

TEST(DriverHooks, TheRuntimesEntryPointsHandOutTheHooksTooAsTorchAsksForThem) {
  using ByVersion = cudaError_t (*)(const char*, void**, unsigned int, unsigned long long,
                                    cudaDriverEntryPointQueryResult*);
  auto real = reinterpret_cast<ByVersion>(
      dlsym(dlopen("libcudart.so.13", RTLD_NOW), "cudaGetDriverEntryPointByVersion"));
  auto hooked = reinterpret_cast<ByVersion>(dlsym(gpuslack_handle(), "cudaGetDriverEntryPointByVersion"));
  ASSERT_NE(nullptr, real);
  ASSERT_NE(nullptr, hooked);
  struct Case {
    const char* name;
    void* expected;
  } cases[] = {{"cuMemCreate", reinterpret_cast<void*>(hooks().cuMemCreate)},
               {"cuMemMap", reinterpret_cast<void*>(hooks().cuMemMap)},
               {"cuMemSetAccess", reinterpret_cast<void*>(hooks().cuMemSetAccess)},
               {"cuMemAddressReserve", reinterpret_cast<void*>(hooks().cuMemAddressReserve)},
               {"cuMemUnmap", reinterpret_cast<void*>(hooks().cuMemUnmap)}};
  for (const Case& c : cases) {
    void* fn_real = nullptr;
    void* fn_hooked = nullptr;
    cudaDriverEntryPointQueryResult s_real{}, s_hooked{};
    EXPECT_EQ(real(c.name, &fn_real, 12000, cudaEnableDefault, &s_real),
              hooked(c.name, &fn_hooked, 12000, cudaEnableDefault, &s_hooked));
    EXPECT_EQ(s_real, s_hooked) << c.name;
    EXPECT_NE(nullptr, fn_real) << c.name;
    EXPECT_EQ(c.expected, fn_hooked) << c.name;
  }
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult s_real{}, s_hooked{};
  EXPECT_EQ(real("cuNoSuchFunction", &fn, 12000, 0, &s_real), hooked("cuNoSuchFunction", &fn, 12000, 0, &s_hooked));
  EXPECT_EQ(s_real, s_hooked);
}

}  // namespace

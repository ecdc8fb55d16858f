// Shared by the simulated CUPTI's tests (cupti_*_test.cc): a client that
// registers buffer callbacks (process-wide or for one subscriber) and keeps
// a copy of every record it is handed, and the launches the tests make.
//
// Collector<N> is a distinct set of callbacks per N, so that one process can
// hold several clients (one per subscriber). Its state is guarded by its
// mutex: buffers complete on CUPTI's worker thread as well as on the thread
// that flushes.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_version.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace cuptitest {

#define CUPTI_OK(x) ASSERT_EQ(CUPTI_SUCCESS, (x))
#define CUDA_OK(x) ASSERT_EQ(cudaSuccess, (x))

inline uint64_t tid() { return static_cast<uint64_t>(syscall(SYS_gettid)); }

template <int N>
struct Collector {
  static inline std::mutex mu;
  static inline std::vector<CUpti_ActivityKernel11> kernels;
  static inline std::vector<CUpti_ActivityMemcpy6> memcpys;
  static inline std::vector<CUpti_ActivityMemset4> memsets;
  static inline std::vector<uint64_t> completing_threads;
  static inline std::set<uint8_t*> buffers_seen;
  static inline long buffers = 0;
  static inline long bad_records = 0;
  // What the next buffer requests get: 0 bytes declines them.
  static inline std::atomic<size_t> buffer_bytes{1 << 20};
  static inline std::atomic<size_t> max_records{0};

  static void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max) {
    size_t n = buffer_bytes.load();
    *buffer = n ? static_cast<uint8_t*>(std::aligned_alloc(8, (n + 7) / 8 * 8)) : nullptr;
    *size = n;
    *max = max_records.load();
  }
  static void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) { take(buffer, valid); }
  static void CUPTIAPI requested_v2(uint8_t** buffer, size_t* size, size_t* max, CUpti_BufferCallbackRequestInfo*) {
    requested(buffer, size, max);
  }
  static void CUPTIAPI completed_v2(uint8_t* buffer, size_t, size_t valid, CUpti_BufferCallbackCompleteInfo* info) {
    EXPECT_NE(nullptr, info);
    if (info) EXPECT_EQ(tid(), info->threadId);
    take(buffer, valid);
  }

  static void take(uint8_t* buffer, size_t valid) {
    std::lock_guard<std::mutex> l(mu);
    ++buffers;
    buffers_seen.insert(buffer);
    completing_threads.push_back(tid());
    CUpti_Activity* r = nullptr;
    CUptiResult st;
    while ((st = cuptiActivityGetNextRecord(buffer, valid, &r)) == CUPTI_SUCCESS) {
      switch (r->kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
          kernels.push_back(*reinterpret_cast<CUpti_ActivityKernel11*>(r));
          break;
        case CUPTI_ACTIVITY_KIND_MEMCPY: memcpys.push_back(*reinterpret_cast<CUpti_ActivityMemcpy6*>(r)); break;
        case CUPTI_ACTIVITY_KIND_MEMSET: memsets.push_back(*reinterpret_cast<CUpti_ActivityMemset4*>(r)); break;
        default: ++bad_records; break;
      }
    }
    if (st != CUPTI_ERROR_MAX_LIMIT_REACHED) ++bad_records;
    std::free(buffer);
  }

  static size_t kernel_count() {
    std::lock_guard<std::mutex> l(mu);
    return kernels.size();
  }

  static CUptiResult register_legacy() { return cuptiActivityRegisterCallbacks(requested, completed); }
  static CUptiResult register_for(CUpti_SubscriberHandle s) {
    return cuptiActivityRegisterCallbacks_v2(s, requested_v2, completed_v2);
  }
};

// A host function exported from the test binary (ENABLE_EXPORTS), launched
// as a kernel: its symbol is the name the records carry, mangled.
__attribute__((visibility("default"))) void test_kernel(float* out, int n);
inline constexpr const char* kTestKernelName = "_ZN9cuptitest11test_kernelEPfi";

inline cudaError_t launch(cudaStream_t s, unsigned blocks) {
  void* args[] = {nullptr};
  return cudaLaunchKernel(reinterpret_cast<const void*>(&test_kernel), dim3(blocks), dim3(128), args, 0, s);
}

// Subscribes with cuptiSubscribe_v2; `old` receives oldSubscriberName.
inline CUptiResult subscribe_v2(CUpti_SubscriberHandle* h, const char* name, bool multiple, std::string* old) {
  char buf[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = "(untouched)";
  CUpti_SubscriberParams p;
  std::memset(&p, 0, sizeof(p));
  p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  p.subscriberName = name;
  p.oldSubscriberName = buf;
  p.oldSubscriberSize = sizeof(buf);
  p.allowMultipleSubscribers = multiple ? 1 : 0;
  CUptiResult r = cuptiSubscribe_v2(h, nullptr, nullptr, &p);
  if (old) *old = buf;
  return r;
}

// Waits (wide margin) until `pred` holds.
template <class F>
bool eventually(F pred, double seconds = 10) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return pred();
}

}  // namespace cuptitest

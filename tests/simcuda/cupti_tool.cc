// The simulated second CUPTI tool (gpusim_cupti_tool.h): a minimal activity
// tracer, written as the CUPTI samples write one (docs.nvidia.com/cupti,
// "CUPTI Activity API": request buffers, complete buffers, walk them with
// cuptiActivityGetNextRecord).
#include "gpusim_cupti_tool.h"

#include <cupti_activity.h>
#include <cupti_callbacks.h>

#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr size_t kBufferBytes = 64 << 10;

std::atomic<long> g_records{0};
std::atomic<long> g_buffers{0};
int g_mode = 0;
CUpti_SubscriberHandle g_subscriber = nullptr;
char g_holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 64] = "";

void count(uint8_t* buffer, size_t valid) {
  CUpti_Activity* r = nullptr;
  long kernels = 0;
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS)
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || r->kind == CUPTI_ACTIVITY_KIND_KERNEL) ++kernels;
  g_records.fetch_add(kernels);
  g_buffers.fetch_add(1);
  std::free(buffer);
}

void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}
void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) { count(buffer, valid); }
void CUPTIAPI requested_v2(uint8_t** buffer, size_t* size, size_t* max_records, CUpti_BufferCallbackRequestInfo*) {
  requested(buffer, size, max_records);
}
void CUPTIAPI completed_v2(uint8_t* buffer, size_t, size_t valid, CUpti_BufferCallbackCompleteInfo*) {
  count(buffer, valid);
}

// The legacy calls, direct or (GPUSIM_CUPTI_TOOL_BY_HANDLE) by dlsym on a
// handle of libcupti, as XLA's CUPTI stub finds them.
struct Legacy {
  decltype(&cuptiSubscribe) subscribe = cuptiSubscribe;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = cuptiActivityRegisterCallbacks;
  decltype(&cuptiActivityEnable) enable = cuptiActivityEnable;
  bool by_handle() {
    void* h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!h) return false;
    subscribe = reinterpret_cast<decltype(subscribe)>(dlsym(h, "cuptiSubscribe"));
    register_callbacks = reinterpret_cast<decltype(register_callbacks)>(dlsym(h, "cuptiActivityRegisterCallbacks"));
    enable = reinterpret_cast<decltype(enable)>(dlsym(h, "cuptiActivityEnable"));
    return subscribe && register_callbacks && enable;
  }
};

int g_injected_rc = -1;

void report_injected() {
  long got = g_injected_rc == 0 ? (gpusim_cupti_tool_stop(), gpusim_cupti_tool_records()) : 0;
  std::fprintf(stderr, "gpusim_cupti_tool: injected rc %d records %ld\n", g_injected_rc, got);
}

}  // namespace

extern "C" int InitializeInjection(void) {
  const char* mode = std::getenv("GPUSIM_CUPTI_TOOL_INJECTED_MODE");
  g_injected_rc = gpusim_cupti_tool_start(mode && *mode ? std::atoi(mode) : GPUSIM_CUPTI_TOOL_LEGACY, "injected tool");
  std::atexit(report_injected);
  return 1;
}

extern "C" int gpusim_cupti_tool_start(int mode, const char* name) {
  g_holder[0] = '\0';
  CUptiResult r;
  Legacy legacy;
  if (mode == GPUSIM_CUPTI_TOOL_BY_HANDLE && !legacy.by_handle()) return CUPTI_ERROR_NOT_INITIALIZED;
  if (mode == GPUSIM_CUPTI_TOOL_LEGACY || mode == GPUSIM_CUPTI_TOOL_BY_HANDLE) {
    r = legacy.subscribe(&g_subscriber, nullptr, nullptr);
  } else {
    CUpti_SubscriberParams p;
    std::memset(&p, 0, sizeof(p));
    p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    p.subscriberName = name;
    p.oldSubscriberName = g_holder;
    p.oldSubscriberSize = sizeof(g_holder);
    p.allowMultipleSubscribers = mode == GPUSIM_CUPTI_TOOL_SHARED ? 1 : 0;
    r = cuptiSubscribe_v2(&g_subscriber, nullptr, nullptr, &p);
  }
  if (r != CUPTI_SUCCESS) {
    g_subscriber = nullptr;
    return r;
  }
  g_mode = mode;
  g_records = 0;
  g_buffers = 0;
  if (mode == GPUSIM_CUPTI_TOOL_LEGACY || mode == GPUSIM_CUPTI_TOOL_BY_HANDLE) {
    if ((r = legacy.register_callbacks(requested, completed)) != CUPTI_SUCCESS) return r;
    return legacy.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  }
  if ((r = cuptiActivityRegisterCallbacks_v2(g_subscriber, requested_v2, completed_v2)) != CUPTI_SUCCESS) return r;
  return cuptiActivityEnable_v2(g_subscriber, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, nullptr);
}

extern "C" int gpusim_cupti_tool_flush(void) { return cuptiActivityFlushAll(0); }

extern "C" int gpusim_cupti_tool_stop(void) {
  if (!g_subscriber) return CUPTI_ERROR_INVALID_PARAMETER;
  CUptiResult first = cuptiActivityFlushAll(0);
  CUptiResult r = g_mode == GPUSIM_CUPTI_TOOL_LEGACY || g_mode == GPUSIM_CUPTI_TOOL_BY_HANDLE
                      ? cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
                      : cuptiActivityDisable_v2(g_subscriber, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, nullptr);
  if (first == CUPTI_SUCCESS) first = r;
  r = cuptiUnsubscribe(g_subscriber);
  if (first == CUPTI_SUCCESS) first = r;
  g_subscriber = nullptr;
  return first;
}

extern "C" long gpusim_cupti_tool_records(void) { return g_records.load(); }
extern "C" long gpusim_cupti_tool_buffers(void) { return g_buffers.load(); }
extern "C" const char* gpusim_cupti_tool_holder(void) { return g_holder; }

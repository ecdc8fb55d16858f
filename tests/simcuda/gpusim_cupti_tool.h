// A second CUPTI tool in the process, for tests (libgpusim_cupti_tool.so):
// subscribes, registers its buffer callbacks, enables kernel activity
// (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) and counts the kernel records it
// receives, the way a profiler (Kineto, Nsight's injection) would. A test
// starts it before or after the code under test subscribes and checks, with
// gpusim_cupti_tool_records(), that it still gets its records.
//
// Not a header of the product: test-only. Thread safety: start/stop/flush
// from one thread at a time; the counters may be read from any thread.
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum gpusim_cupti_tool_mode {
  // cuptiSubscribe, then the process-wide calls (cuptiActivityRegisterCallbacks,
  // cuptiActivityEnable): what a tool written before CUPTI 13.2 does.
  GPUSIM_CUPTI_TOOL_LEGACY = 1,
  // cuptiSubscribe_v2 with allowMultipleSubscribers = 1, then the
  // per-subscriber calls (cuptiActivityRegisterCallbacks_v2, ..._Enable_v2).
  GPUSIM_CUPTI_TOOL_SHARED = 2,
  // cuptiSubscribe_v2 with allowMultipleSubscribers = 0, then the
  // per-subscriber calls.
  GPUSIM_CUPTI_TOOL_EXCLUSIVE = 3,
  // As LEGACY, but every CUPTI function found by dlsym on a handle of its
  // own dlopen("libcupti.so.13", RTLD_LOCAL): what XLA's CUPTI stub does
  // for the JAX and TensorFlow profilers (xla/tsl/cuda/cupti_stub.cc).
  GPUSIM_CUPTI_TOOL_BY_HANDLE = 4,
};

// Loaded by CUDA_INJECTION64_PATH, the simulated driver calls this at
// cuInit: the tool starts in GPUSIM_CUPTI_TOOL_INJECTED_MODE (default
// LEGACY) as "injected tool" and, at exit, flushes and prints
// "gpusim_cupti_tool: injected rc R records N" on stderr.
__attribute__((visibility("default"))) int InitializeInjection(void);

// Starts the tool; `name` is its subscriberName (v2 modes). Returns the
// CUptiResult of the subscription (0: subscribed, and tracing); on
// CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, gpusim_cupti_tool_holder()
// says who holds CUPTI. Any other failing CUPTI call is returned as well.
__attribute__((visibility("default"))) int gpusim_cupti_tool_start(int mode, const char* name);
// Flushes (cuptiActivityFlushAll), disables its kinds and unsubscribes.
// Returns the first failing CUptiResult, or 0.
__attribute__((visibility("default"))) int gpusim_cupti_tool_stop(void);
// cuptiActivityFlushAll(0): what it has recorded is then counted.
__attribute__((visibility("default"))) int gpusim_cupti_tool_flush(void);
// Kernel records, and buffers, it received since it was started.
__attribute__((visibility("default"))) long gpusim_cupti_tool_records(void);
__attribute__((visibility("default"))) long gpusim_cupti_tool_buffers(void);
// The oldSubscriberName of its last failed subscription ("" if none).
__attribute__((visibility("default"))) const char* gpusim_cupti_tool_holder(void);

#ifdef __cplusplus
}
#endif

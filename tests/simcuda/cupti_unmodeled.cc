// libcupti.so.13 of the simulated device: the rest of what torch's Kineto
// binds (nm -D --undefined-only libtorch_cpu.so), each doing the harmless
// thing a tool can carry on with (README.md, "CUPTI"):
//   - switches for records the model never produces (API records, CUDA
//     event device timestamps, latency timestamps, launch attributes):
//     accepted, nothing changes;
//   - external correlation ids: a per-thread stack per kind, pushed and
//     popped as documented ("CUPTI_ERROR_QUEUE_EMPTY" when none); no
//     CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION records are made.
#include <vector>

#include "cupti_internal.h"

using namespace cuptisim;

CUPTISIM_EXPORT CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
  (void)cbid, (void)enable;
  return CUPTI_SUCCESS;
}
CUPTISIM_EXPORT CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  (void)cbid, (void)enable;
  return CUPTI_SUCCESS;
}
CUPTISIM_EXPORT CUptiResult cuptiActivityEnableCudaEventDeviceTimestamps(uint8_t enable) {
  (void)enable;
  return CUPTI_SUCCESS;
}
CUPTISIM_EXPORT CUptiResult cuptiActivityEnableLatencyTimestamps(uint8_t enable) {
  (void)enable;
  return CUPTI_SUCCESS;
}
CUPTISIM_EXPORT CUptiResult cuptiActivityEnableLaunchAttributes(uint8_t enable) {
  (void)enable;
  return CUPTI_SUCCESS;
}

namespace {
thread_local std::vector<uint64_t> t_external[CUPTI_EXTERNAL_CORRELATION_KIND_SIZE];
}  // namespace

CUPTISIM_EXPORT CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t id) {
  if (kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID || kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE)
    return CUPTI_ERROR_INVALID_PARAMETER;
  t_external[kind].push_back(id);
  return CUPTI_SUCCESS;
}
CUPTISIM_EXPORT CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                                  uint64_t* last_id) {
  if (kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID || kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE)
    return CUPTI_ERROR_INVALID_PARAMETER;
  auto& stack = t_external[kind];
  if (stack.empty()) return CUPTI_ERROR_QUEUE_EMPTY;
  if (last_id) *last_id = stack.back();
  stack.pop_back();
  return CUPTI_SUCCESS;
}

// Contexts and devices: CUPTI's ids for them are not modeled beyond what
// the records carry (contextId = device + 1).
CUPTISIM_EXPORT CUptiResult cuptiGetContextId(CUcontext context, uint32_t* id) {
  (void)context, (void)id;
  unmodeled("cuptiGetContextId");
  return CUPTI_ERROR_NOT_SUPPORTED;
}
CUPTISIM_EXPORT CUptiResult cuptiGetDeviceId(CUcontext context, uint32_t* id) {
  (void)context, (void)id;
  unmodeled("cuptiGetDeviceId");
  return CUPTI_ERROR_NOT_SUPPORTED;
}

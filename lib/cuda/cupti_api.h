// The CUPTI functions the GPU timeline calls (timeline/cupti_session.h),
// found at run time in libcupti, never linked (docs/design.md, principle 2).
//
// cupti() loads the table once, from the first of:
//   1. a libcupti already in the process (a profiler, or torch's Kineto,
//      loaded it): gpuslack must use the copy the other tools use, never a
//      second one;
//   2. beside the loaded libcudart (the pip wheels: nvidia/cu13/lib holds
//      both; CUDA 12's wheels put it in the sibling nvidia/cuda_cupti/lib);
//   3. $CUDA_HOME/extras/CUPTI/lib64, then $CUDA_HOME/lib64 (CUDA_HOME as
//      the caller read it through config/environment.h: never in a secure
//      process, where the timeline is off anyway);
//   4. the loader's own search (dlopen by soname).
// The soname follows the loaded runtime's major version: libcupti.so.12 for
// a CUDA 12 runtime, libcupti.so.13 otherwise (or when no runtime is found).
//
// It returns nullptr when no libcupti is found or a required entry point is
// missing; why_no_cupti() says which. The _v2 entry points (the headers'
// cuptiSubscribe_v2 and per-subscriber calls, present from CUPTI 13.2;
// several subscribers are granted only by a CUPTI newer than 13.2:
// timeline/coexistence.h) are optional: null in an older CUPTI, as is
// cuptiGetVersion's entry in a table a test builds.
//
// Thread safety: any thread; the table is immutable once published.
#pragma once

#include <cuda_runtime_api.h>
// cupti_activity.h and cupti_callbacks.h, not cupti.h: cupti.h brings the
// generated_*_meta.h of every runtime call, which need 13.2's runtime headers.
#include <cupti_activity.h>
#include <cupti_callbacks.h>

#include <string>
#include <vector>

namespace gpuslack {
namespace cuda {

// The real CUPTI signatures (cupti_callbacks.h, cupti_activity.h,
// cupti_result.h). A test may build its own table (timeline tests do).
struct CuptiApi {
  // Required.
  CUptiResult (*subscribe)(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata);
  CUptiResult (*unsubscribe)(CUpti_SubscriberHandle subscriber);
  CUptiResult (*activity_enable)(CUpti_ActivityKind kind);
  CUptiResult (*activity_disable)(CUpti_ActivityKind kind);
  CUptiResult (*activity_register_callbacks)(CUpti_BuffersCallbackRequestFunc requested,
                                             CUpti_BuffersCallbackCompleteFunc completed);
  CUptiResult (*activity_flush_all)(uint32_t flag);
  CUptiResult (*activity_get_next_record)(uint8_t* buffer, size_t valid_bytes, CUpti_Activity** record);
  CUptiResult (*activity_get_num_dropped_records)(CUcontext context, uint32_t stream_id, size_t* dropped);
  CUptiResult (*get_timestamp)(uint64_t* timestamp);
  CUptiResult (*get_result_string)(CUptiResult result, const char** text);
  // Optional: the version (cupti_version.h: 1..28 up to CUDA 12.9 Update 1,
  // then xxyyzz, 130200 for 13.2), for what a CUPTI is known to get wrong.
  CUptiResult (*get_version)(uint32_t* version);
  // Optional (null before CUPTI 13.2).
  CUptiResult (*subscribe_v2)(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata,
                              CUpti_SubscriberParams* params);
  CUptiResult (*activity_enable_v2)(CUpti_SubscriberHandle subscriber, CUpti_ActivityKind kind,
                                    CUpti_ActivityConfig* config);
  CUptiResult (*activity_disable_v2)(CUpti_SubscriberHandle subscriber, CUpti_ActivityKind kind,
                                     CUpti_ActivityConfig* config);
  CUptiResult (*activity_register_callbacks_v2)(CUpti_SubscriberHandle subscriber,
                                                CUpti_BuffersCallbackRequestFunc_v2 requested,
                                                CUpti_BuffersCallbackCompleteFunc_v2 completed);
};

// Loads the table on the first call (`cuda_home`: $CUDA_HOME or null; only
// the first call's is used), then returns it.
const CuptiApi* cupti(const char* cuda_home);
// Why cupti() returned nullptr ("" before the first call, or when it did not).
const char* why_no_cupti();
// The file cupti() loaded ("" when none).
const char* cupti_path();

// The libcupti file names to try, in order, for steps 2-4 above: pure, for
// tests. `cudart_path`: the loaded runtime's file ("" if none); `cuda_home`:
// $CUDA_HOME (null or "" if unset); `major`: the runtime's major version.
std::vector<std::string> cupti_candidates(const char* cudart_path, const char* cuda_home, int major);

// The major version a runtime file name implies ("…/libcudart.so.12.4" -> 12),
// or 0 when it does not say.
int runtime_major_from_path(const char* cudart_path);

// CUPTI's text for `r` when the table has it, else the number.
std::string cupti_result_text(const CuptiApi* api, CUptiResult r);

}  // namespace cuda
}  // namespace gpuslack

// The adaptors of NCCL's profiler plugin interface, one per version
// (profiler_abi.h): each turns its version's init arguments and event
// descriptors into the one implementation of profiler_records.h. The
// exported `ncclProfiler_vN` structs that point at them are interpose's
// (interpose/nccl_profiler_exports.cc: only interpose knows symbol names);
// NCCL loads the newest it finds, so the version whose init runs is the
// version in use (profiler_records.h, loaded_version).
//
// What gpuslack asks NCCL for (the eActivationMask init returns): collective
// events everywhere; kernel channel events from v4 on, where they carry the
// GPU's timestamps (v3's have none). No proxy, network or API events: they
// would cost NCCL's threads time and tell the summary nothing it uses. Every
// other event NCCL still starts (v5 starts its API events for a plugin that
// asked for collectives) gets a null handle, so NCCL never stops it.
//
// init never fails: when gpuslack is told not to listen (the nccl_profiler
// knob, profiler_enable.h) or its tables are full, it returns success with
// an empty mask and a null context, and NCCL sends nothing.
//
// Thread safety: NCCL calls these from any thread; see profiler_records.h.
#pragma once

#include "nccl/profiler_abi.h"

namespace gpuslack {
namespace nccl {
namespace profiler {

inline constexpr const char* kPluginName = "gpuslack";

// Common to every version.
abi::Result stop_event(void* handle);
abi::Result finalize(void* context);

namespace v1 {
abi::Result init(void** context, int* mask);
abi::Result start_event(void* context, void** handle, abi::EventDescrV1* d);
abi::Result record_event_state(void* handle, abi::EventState state, abi::StateArgsV1* args);
}  // namespace v1
namespace v2 {
abi::Result init(void** context, int* mask);
abi::Result start_event(void* context, void** handle, abi::EventDescrV2* d);
abi::Result record_event_state(void* handle, abi::EventState state, abi::StateArgsV2* args);
}  // namespace v2
namespace v3 {
abi::Result init(void** context, int* mask);
abi::Result start_event(void* context, void** handle, abi::EventDescrV3* d);
abi::Result record_event_state(void* handle, abi::EventState state, abi::StateArgsV3* args);
}  // namespace v3
namespace v4 {
abi::Result init(void** context, int* mask, const char* comm_name, uint64_t comm_hash, int nnodes, int nranks,
                 int rank, abi::Logger log);
abi::Result start_event(void* context, void** handle, abi::EventDescrV4* d);
abi::Result record_event_state(void* handle, abi::EventState state, abi::StateArgsV4* args);
}  // namespace v4
namespace v5 {
abi::Result init(void** context, uint64_t comm_id, int* mask, const char* comm_name, int nnodes, int nranks, int rank,
                 abi::Logger log);
abi::Result start_event(void* context, void** handle, abi::EventDescrV5* d);
abi::Result record_event_state(void* handle, abi::EventState state, abi::StateArgsV5* args);
}  // namespace v5
namespace v6 {
abi::Result init(void** context, uint64_t comm_id, int* mask, const char* comm_name, int nnodes, int nranks, int rank,
                 abi::Logger log);
abi::Result start_event(void* context, void** handle, abi::EventDescrV6* d);
abi::Result record_event_state(void* handle, abi::EventState state, abi::StateArgsV6* args);
}  // namespace v6

}  // namespace profiler
}  // namespace nccl
}  // namespace gpuslack

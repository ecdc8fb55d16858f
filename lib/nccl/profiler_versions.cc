// See profiler_versions.h.
#include "nccl/profiler_versions.h"

#include "nccl/profiler_enable.h"
#include "nccl/profiler_records.h"

namespace gpuslack {
namespace nccl {
namespace profiler {
namespace {

// The mask and context of one init of version `version`.
abi::Result open(int version, void** context, int* mask, uint64_t comm_hash, int nnodes, int nranks, int rank) {
  if (context) *context = nullptr;
  if (mask) *mask = 0;
  if (!context || !mask || !listening()) return abi::kSuccess;
  Context* c = open_context(version, comm_hash, nnodes, nranks, rank);
  if (!c) return abi::kSuccess;  // counted in dropped
  note_loaded(version);
  *context = c;
  *mask = abi::kProfileColl | (version >= 4 ? abi::kProfileKernelCh : 0);
  return abi::kSuccess;
}

// A v2+ collective descriptor (the fields every later version shares by name).
template <typename Coll>
void* coll_strings(void* context, const Coll& coll, uint64_t comm_hash, int channels) {
  CollStart s;
  if (!op_of(coll.func, &s.op)) return nullptr;
  s.comm_hash = comm_hash;
  s.count = coll.count;
  s.elem_size = datatype_size_of(coll.datatype);
  s.algo = algo_index(coll.algo);
  s.proto = proto_index(coll.proto);
  s.channels = channels;
  return start_coll(static_cast<Context*>(context), s);
}

// v4+ kernel channels and collectives; everything else gets no handle.
template <typename Descr>
void* start_v4_on(void* context, Descr* d) {
  if (!d) return nullptr;
  if (d->type == static_cast<decltype(d->type)>(abi::kProfileColl))
    return coll_strings(context, d->coll, 0, d->coll.nChannels);
  if (d->type == static_cast<decltype(d->type)>(abi::kProfileKernelCh))
    return start_kernel_channel(d->parentObj, d->kernelCh.pTimer);
  return nullptr;
}

template <typename Args>
abi::Result record_kernel_stop(void* handle, abi::EventState state, Args* args) {
  if (state == abi::kKernelChStop && args) kernel_channel_stop(handle, args->kernelCh.pTimer);
  return abi::kSuccess;
}

}  // namespace

abi::Result stop_event(void* handle) {
  end_event(handle);
  return abi::kSuccess;
}

abi::Result finalize(void* context) {
  close_context(static_cast<Context*>(context));
  return abi::kSuccess;
}

namespace v1 {
abi::Result init(void** context, int* mask) { return open(1, context, mask, 0, 0, 0, -1); }
abi::Result start_event(void* context, void** handle, abi::EventDescrV1* d) {
  void* h = nullptr;
  if (d && d->type == abi::kProfileColl) {
    CollStart s;
    if (op_of_v1(d->coll.func, &s.op)) {
      s.comm_hash = d->coll.commHash;
      s.count = d->coll.count;
      s.elem_size = datatype_size(d->coll.datatype);
      s.algo = algo_index_v1(d->coll.algo);
      s.proto = proto_index_v1(d->coll.proto);
      s.channels = d->coll.nMaxChannels;
      h = start_coll(static_cast<Context*>(context), s);
    }
  }
  if (handle) *handle = h;
  return abi::kSuccess;
}
abi::Result record_event_state(void*, abi::EventState, abi::StateArgsV1*) { return abi::kSuccess; }
}  // namespace v1

namespace v2 {
abi::Result init(void** context, int* mask) { return open(2, context, mask, 0, 0, 0, -1); }
abi::Result start_event(void* context, void** handle, abi::EventDescrV2* d) {
  void* h = nullptr;
  if (d && d->type == abi::kProfileColl) h = coll_strings(context, d->coll, d->coll.commHash, d->coll.nMaxChannels);
  if (handle) *handle = h;
  return abi::kSuccess;
}
abi::Result record_event_state(void*, abi::EventState, abi::StateArgsV2*) { return abi::kSuccess; }
}  // namespace v2

namespace v3 {
abi::Result init(void** context, int* mask) { return open(3, context, mask, 0, 0, 0, -1); }
abi::Result start_event(void* context, void** handle, abi::EventDescrV3* d) {
  void* h = nullptr;
  if (d && d->type == abi::kProfileColl) h = coll_strings(context, d->coll, d->coll.commHash, d->coll.nMaxChannels);
  if (handle) *handle = h;
  return abi::kSuccess;
}
abi::Result record_event_state(void*, abi::EventState, abi::StateArgsV3*) { return abi::kSuccess; }
}  // namespace v3

namespace v4 {
abi::Result init(void** context, int* mask, const char*, uint64_t comm_hash, int nnodes, int nranks, int rank,
                 abi::Logger) {
  return open(4, context, mask, comm_hash, nnodes, nranks, rank);
}
abi::Result start_event(void* context, void** handle, abi::EventDescrV4* d) {
  void* h = start_v4_on(context, d);
  if (handle) *handle = h;
  return abi::kSuccess;
}
abi::Result record_event_state(void* handle, abi::EventState state, abi::StateArgsV4* args) {
  return record_kernel_stop(handle, state, args);
}
}  // namespace v4

namespace v5 {
abi::Result init(void** context, uint64_t comm_id, int* mask, const char*, int nnodes, int nranks, int rank,
                 abi::Logger) {
  return open(5, context, mask, comm_id, nnodes, nranks, rank);
}
abi::Result start_event(void* context, void** handle, abi::EventDescrV5* d) {
  void* h = start_v4_on(context, d);
  if (handle) *handle = h;
  return abi::kSuccess;
}
abi::Result record_event_state(void* handle, abi::EventState state, abi::StateArgsV5* args) {
  return record_kernel_stop(handle, state, args);
}
}  // namespace v5

namespace v6 {
abi::Result init(void** context, uint64_t comm_id, int* mask, const char*, int nnodes, int nranks, int rank,
                 abi::Logger) {
  return open(6, context, mask, comm_id, nnodes, nranks, rank);
}
abi::Result start_event(void* context, void** handle, abi::EventDescrV6* d) {
  void* h = start_v4_on(context, d);
  if (handle) *handle = h;
  return abi::kSuccess;
}
abi::Result record_event_state(void* handle, abi::EventState state, abi::StateArgsV6* args) {
  return record_kernel_stop(handle, state, args);
}
}  // namespace v6

}  // namespace profiler
}  // namespace nccl
}  // namespace gpuslack

// The `track` column of nccl_hook_table.h: what the collectives ledger
// (nccl/collectives.h) and the communicator table (nccl/communicators.h)
// do around one NCCL call. The generator in hooks.cc calls
//   auto t = track_begin(<track expression>);   // before the real call, untimed
//   track_end(t, result, ticks);                // after it, untimed
// and the overloads below pick the work by the expression's type; Untracked
// (every runtime row) compiles to nothing.
//
// Not to be included outside interpose/.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>

#include "nccl/collectives.h"
#include "nccl/communicators.h"
#include "nccl/profiler_enable.h"
#include "timeline/timeline.h"

namespace gpuslack {
namespace interpose {

struct Untracked {};
inline Untracked track_begin(Untracked u) { return u; }
template <typename R>
inline void track_end(Untracked, R, uint64_t) {}

inline constexpr auto kAllReduce = nccl::CollectiveOp::kAllReduce;
inline constexpr auto kReduceScatter = nccl::CollectiveOp::kReduceScatter;
inline constexpr auto kAllGather = nccl::CollectiveOp::kAllGather;
inline constexpr auto kBroadcast = nccl::CollectiveOp::kBroadcast;
inline constexpr auto kReduce = nccl::CollectiveOp::kReduce;
inline constexpr auto kAlltoAll = nccl::CollectiveOp::kAlltoAll;
inline constexpr auto kGather = nccl::CollectiveOp::kGather;
inline constexpr auto kScatter = nccl::CollectiveOp::kScatter;
inline constexpr auto kSend = nccl::CollectiveOp::kSend;
inline constexpr auto kRecv = nccl::CollectiveOp::kRecv;

inline uint64_t elem_bytes(size_t count, ncclDataType_t datatype) {
  return static_cast<uint64_t>(count) * nccl::datatype_size(datatype);
}

// A collective or point-to-point call. ncclInProgress (a non-blocking
// communicator) counts as issued.
inline nccl::Collective coll(nccl::CollectiveOp op, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                               cudaStream_t stream) {
  return {op, count, static_cast<int>(datatype), comm, stream};
}
// A Send or Recv: its peer tells an exchange with the rank itself
// (nccl::bus_bytes).
inline nccl::Collective p2p(nccl::CollectiveOp op, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                            cudaStream_t stream) {
  return {op, count, static_cast<int>(datatype), comm, stream, peer};
}
inline nccl::CollectiveTrack track_begin(const nccl::Collective& c) { return nccl::collective_begin(c); }
inline void track_end(nccl::CollectiveTrack& t, ncclResult_t r, uint64_t ticks) {
  nccl::collective_end(t, r == ncclSuccess || r == ncclInProgress, ticks);
}

struct GroupStart {};
inline GroupStart track_begin(GroupStart g) { return g; }
inline void track_end(GroupStart, ncclResult_t r, uint64_t) { nccl::group_started(r == ncclSuccess); }

struct GroupEnd {};
inline nccl::GroupTrack track_begin(GroupEnd) { return nccl::group_end_begin(); }
inline void track_end(nccl::GroupTrack& g, ncclResult_t r, uint64_t) {
  nccl::group_end_finish(g, r == ncclSuccess || r == ncclInProgress);
}

// ncclCommInitRank, ...Config, ...All, ncclCommSplit: before NCCL reads its
// environment, gpuslack offers itself as NCCL's profiler plugin unless the
// user runs another (Note [Joining NCCL as its profiler] in
// nccl/profiler_enable.h). Once per process; later inits are one load.
struct CommInit {};
inline CommInit track_begin(CommInit c) {
  // prepare() may setenv, which must not run beside the timeline's start
  // (Note [The start's thread reads no environment] in timeline/timeline.cc):
  // an atomic load once that start is done.
  timeline::wait_for_start(5);
  nccl::profiler::prepare();
  return c;
}
template <typename R>
inline void track_end(CommInit, R, uint64_t) {}

// ncclCommDestroy / ncclCommAbort: the address may be reused by a later comm.
struct CommGone {
  ncclComm_t comm;
  bool aborted;
};
inline CommGone track_begin(CommGone g) { return g; }
inline void track_end(CommGone g, ncclResult_t r, uint64_t) {
  if (r == ncclSuccess || g.aborted) nccl::comm_forget(g.comm, g.aborted);
}

}  // namespace interpose
}  // namespace gpuslack

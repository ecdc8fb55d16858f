// The collectives ledger: every NCCL collective and point-to-point call,
// per (operation, datatype, log2 size bucket, communicator size), with its
// host time and, for a sample of the calls, its GPU time.
//
// What is counted: every call that NCCL accepted (ncclSuccess, or
// ncclInProgress on a non-blocking communicator): count, bytes, host ticks;
// calls on a stream that was capturing a CUDA graph are counted and also
// counted as "captured", and never timed. Bytes are nccl-tests' S: the
// per-rank buffer for AllReduce, Broadcast, Reduce, Send, Recv; the total
// over all ranks for ReduceScatter, AllGather, AlltoAll, Gather, Scatter.
//
// Note [Timing one collective in N]: the GPU time. Recording an event costs
// about 1 µs on real hardware, more than the budget a hook has. So one call
// in collective_timing_every is timed, picked deterministically (the 1st,
// (N+1)th, ... call of each operation on each thread; for grouped calls,
// the 1st, (N+1)th, ... outermost group of the thread). A timed call gets an
// event recorded on its stream before and after it; a timed group gets one
// pair per member stream around the outermost ncclGroupEnd. The pair goes
// on the thread's pending ring and is resolved by polling (cudaEventQuery)
// from later timed calls and at report time: never a synchronization. A
// full ring leaves the call untimed. GPU statistics come from the timed
// calls; counts, bytes and host time from all of them.
//
// Note [Charged time and bandwidth time]: one timed pair of T seconds
// around n members (a group's calls on one stream) gives two figures:
//   - the GPU time each member is charged (gpu_s, gpu_ns): T shared among
//     the members by bytes, so that the charges sum to T and totals over
//     rows count the stream's time once;
//   - the time a row's bandwidth is computed over (bw_s): T, once per row
//     per pair, with all of that row's bytes in the pair.
// nccl-tests times a group as one operation: its sendrecv is a send and a
// recv of S in one group, busbw = S / T; its alltoall(v) n sends and n
// recvs of S/n, algbw = S / T. Shared by bytes, the send and the recv of
// one exchange each looked twice as fast (issue 26: 1.5-1.9x the
// benchmark's figure; a grouped all-to-all-v 4.5x). With bw_s, a row's
// algbw is its bytes over the time of the groups it was in: the
// benchmark's figure for those, and for a group that mixes rows a lower
// bound on each row's own rate.
//
// Threads: a thread's shard is taken on its first collective and, when the
// thread exits, merged into the exited threads' rows and reused (Note
// [Exited threads] in ledger/ledger.h); its timed calls still in flight are
// resolved by later reports (at most 64 of them wait so; more count as
// dropped).
//
// Hot path (an untimed call outside a group): a communicator lookup
// (communicators.h), one cudaStreamIsCapturing, a probe of the thread's
// cell table and four single-writer relaxed stores: no lock, no allocation.
// Timed calls and report time take the thread shard's own mutex (guarding
// its pending ring and GPU figures) and the event pool's (sync/event_pool.h).
//
// Thread safety: begin/end/group_* on the calling thread's state; the
// snapshot from any thread. The CollectiveTrack / GroupTrack values live on
// the hooking thread's stack between the two calls.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ledger/histogram.h"

namespace gpuslack {
namespace nccl {

enum class CollectiveOp : uint8_t {
  kAllReduce, kReduceScatter, kAllGather, kBroadcast, kReduce, kAlltoAll, kGather, kScatter, kSend, kRecv,
};
inline constexpr int kCollectiveOpCount = 10;

// "all-reduce", "reduce-scatter", "all-gather", "broadcast", "reduce",
// "all-to-all", "gather", "scatter", "send", "recv".
const char* collective_op_name(CollectiveOp op);
// nccl-tests: busbw = algbw × this. AllReduce 2(n−1)/n; ReduceScatter,
// AllGather, AlltoAll, Gather, Scatter (n−1)/n; the others 1.
double bus_factor(CollectiveOp op, int nranks);
// The bytes the nccl-tests bus bandwidth counts for `bytes` of timed calls
// of `op`, `local_bytes` of them a Send/Recv with the rank itself: bytes ×
// bus_factor for a collective; for Send/Recv the bytes exchanged with other
// ranks (a rank's send to itself crosses no link: nccl-tests' alltoall of
// grouped sends to every rank, itself included, counts (n−1)/n of S).
double bus_bytes(CollectiveOp op, int nranks, double bytes, double local_bytes);
// nccl-tests' S for one call of `count` elements of `elem_size` bytes.
uint64_t collective_bytes(CollectiveOp op, size_t count, size_t elem_size, int nranks);
// NCCL datatypes by their ncclDataType_t value: "int8", ..., "float32", ...
const char* datatype_name(int datatype);
size_t datatype_size(int datatype);  // 0 for an unknown value

// One call, as the hook sees it before forwarding.
struct Collective {
  CollectiveOp op = CollectiveOp::kAllReduce;
  size_t count = 0;
  int datatype = 0;
  void* comm = nullptr;
  cudaStream_t stream = nullptr;
  int peer = -1;  // Send/Recv: the peer's rank; -1 otherwise
};

struct CollectiveTrack {
  uint32_t key = 0;
  uint64_t bytes = 0;
  cudaStream_t stream = nullptr;
  int device = -1;
  cudaEvent_t start = nullptr;  // timed and recorded
  bool captured = false;
  bool in_group = false;
  bool local = false;   // a Send/Recv with this rank itself (bus_bytes)
  bool active = false;  // the ledger could take the call (a shard exists)
};

// Sets N of Note [Timing one collective in N] (< 1 reads as 1).
void set_collective_timing_every(int n);

// Before forwarding: sizes the call, checks capture, may record the start event.
CollectiveTrack collective_begin(const Collective& c);
// After: `issued` when NCCL returned ncclSuccess or ncclInProgress.
void collective_end(CollectiveTrack& t, bool issued, uint64_t ticks);

struct GroupTrack {
  bool outermost = false;
  bool timed = false;
  int n_streams = 0;
  cudaStream_t streams[8] = {};
  int devices[8] = {};
  cudaEvent_t starts[8] = {};
};
// ncclGroupStart returned (ok: it succeeded).
void group_started(bool ok);
// Before forwarding ncclGroupEnd / after it.
GroupTrack group_end_begin();
void group_end_finish(GroupTrack& g, bool issued);

// ---- report time ----

// Per bucket of a ledger::Histogram of ns, the sum of the values it counted:
// exact means within a bucket, for estimates that leave some buckets out
// (Note [Estimated GPU time] in report/collectives.h).
using GpuNsSums = std::array<double, ledger::Histogram::kBuckets>;

struct CollectiveFigures {
  CollectiveOp op = CollectiveOp::kAllReduce;
  int datatype = 0;
  int bucket = 0;  // bytes in [2^bucket, 2^(bucket+1)); 0 also holds 0
  int nranks = 0;  // 0: unknown
  uint64_t count = 0, bytes = 0, host_ticks = 0, captured = 0;
  uint64_t timed = 0, timed_bytes = 0;  // timed calls resolved so far
  uint64_t timed_local_bytes = 0;       // of timed_bytes: Send/Recv with the rank itself
  // Note [Charged time and bandwidth time].
  double gpu_s = 0;                     // GPU time charged to the timed calls
  ledger::Histogram gpu_ns;             // per timed call, ns charged
  GpuNsSums gpu_ns_sums{};              // per gpu_ns bucket, the ns charged
  double bw_s = 0;                      // the time the row's bandwidth is computed over
};

struct CollectiveSnapshot {
  std::vector<CollectiveFigures> rows;  // merged across threads, in key order
  uint64_t pending = 0;     // timed calls not finished on the GPU yet
  uint64_t dropped = 0;     // timed calls whose events failed (an aborted comm)
  uint64_t untracked = 0;   // calls a full cell table could not hold
};

// Polls every thread's pending events (never waits), then merges.
CollectiveSnapshot collectives_snapshot();

// Forgets every figure (tests: no thread may make a collective meanwhile).
void reset_collectives();

// In the child of a fork, from its atfork handler (Note [Fork] in
// session/session.cc): forgets the parent's figures and communicators
// without touching what another thread of the parent may have been changing
// or have locked at the fork; takes no lock, allocates nothing. (The
// session's handler resets the event pool: sync/event_pool.h.)
void collectives_after_fork_child();

// Shards made so far, in use or free (Note [Exited threads] in ledger.h:
// a thread's shard is reused once it exits).
size_t collective_shard_count();

namespace testing {
// Tests of Note [Fork] only: runs `during(arg)` while the calling thread
// holds every lock of the collectives ledger (the free list's, the exited
// threads', the event pool's and its own shard's).
void while_holding_collective_locks(void (*during)(void*), void* arg);
}  // namespace testing

}  // namespace nccl
}  // namespace gpuslack

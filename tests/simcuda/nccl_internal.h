// libnccl.so.2 of the simulated device: state shared by nccl_comm.cc
// (communicators), nccl_ops.cc (enqueueing, rendezvous, groups) and
// nccl_reduce.cc (what collectives compute, modeled time).
//
// Model (README.md, "NCCL"): ranks are threads of one process, each on its
// own simulated device. A communicator's ranks share one Clique; every
// collective or point-to-point op meets its peers there, on the stream
// workers, and holds its worker for the modeled transfer time.
//
// Test-only; never included by the product.
#pragma once

#include "sim.h"

// The real library exports every nccl* name; the header's declarations get
// default visibility so that the definitions here are exported.
#pragma GCC visibility push(default)
#include <nccl.h>
#pragma GCC visibility pop

#include "nccl/cost_model.h"
#include "nccl_process.h"

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

// Like the real libnccl.so.2: the strong definition is pncclX (the profiling
// interface), and ncclX is a weak alias of it.
//   NCCL_API(ncclResult_t, ncclGetVersion, int* version) { ... }
#define NCCL_API(ret, name, ...)                                               \
  extern "C" ret name(__VA_ARGS__) __attribute__((weak, alias("p" #name)));    \
  extern "C" ret p##name(__VA_ARGS__)

namespace ncclsim {

using gpusim::Clock;

// Records `msg` as the calling thread's last error (ncclGetLastError) and
// returns `r`.
ncclResult_t fail(ncclResult_t r, const std::string& msg);

// ------------------------------------------------------------ the work --

enum class Kind {
  kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kAlltoAll,
  kGather, kScatter, kSend, kRecv,
};

// One call as the user made it: a collective, or one half of a transfer.
struct Work {
  Kind kind = Kind::kAllReduce;
  size_t count = 0;  // the API's count argument
  // As the caller passed them: plain ints, since an invalid value (which
  // validate() refuses) must not be loaded as the enum (UBSan: -fsanitize=enum).
  int type = ncclInt8;
  int op = ncclSum;
  int root = 0;      // root, or the peer of a Send/Recv
  const void* send = nullptr;
  void* recv = nullptr;
  uint64_t seq = 0;  // rendezvous number; assigned when enqueued
  // NCCL's choice for this call (nccl_fabric.cc, README.md "NCCL",
  // "Fabric"), made when the call is issued, the same on every rank: NCCL's
  // spellings, as its profiler plugin reports them. Point-to-point ops and
  // those without a communicator shape keep the defaults.
  const char* algo = "Ring";   // "Ring", "Tree"
  const char* proto = "Simple";  // "LL", "LL128", "Simple"
  int channels = 1;
  // The fabric's modeled GPU time of this call, µs; 0: no fabric configured
  // (or an op the cost model does not cover): modeled_us's one-link time.
  double fabric_us = 0;
};

// NCCL's name of the operation, as ncclFuncToString gives it ("AllReduce",
// ...): the debug lines, the kernel names and the profiler's events.
const char* kind_name(Kind k);

// What a collective computes and how long it takes (nccl_reduce.cc).
size_t type_size(int t);  // 0 for an invalid type
// Computes every rank's output of one collective; args[r] is rank r's call.
void compute(const std::vector<Work>& args);
// The call's modeled GPU time: w.fabric_us where the fabric is configured,
// else config().nccl_latency_us + the bytes the nccl-tests bus bandwidth
// counts for this call over `n` ranks, at config().nccl_gbps.
double modeled_us(const Work& w, int n);

// The fabric (nccl_fabric.cc): nodes x ranks per node of a communicator,
// from each rank's node (GPUSIM_NODE of its process).
gpuslack::nccl::Shape shape_of(const std::vector<int>& nodes);
// Makes NCCL's choice for `w` on a communicator of `shape` (algo, proto,
// channels, fabric_us). Every rank computes the same.
void choose(Work* w, const gpuslack::nccl::Shape& shape);
// Empty, or why NCCL_ALGO / NCCL_PROTO are refused (NCCL then fails the
// communicator's init with ncclInvalidUsage); read once.
const std::string& tuning_error();
// GPUSIM_NCCL_DEBUG is set.
bool debug();
// Whether two ranks' calls are the same collective.
bool same_call(const Work& a, const Work& b);
// memmove, skipped when dst == src (in place).
void copy(void* dst, const void* src, size_t bytes);
// out[i] = `op` over r of in[r][i], for i < count (ncclAvg divides by in.size()).
void reduce_into(int type, int op, const std::vector<const void*>& in, size_t count, void* out);

// -------------------------------------------------------------- cliques --

// A collective meeting point: one per collective sequence number.
struct CollSlot {
  int arrived = 0;
  int left = 0;
  bool computing = false;  // the last rank to arrive is computing results
  bool done = false;
  Clock::time_point end;   // modeled completion
  std::vector<Work> args;  // per rank
};

// One Send matched with one Recv: (space, src, dst, seq).
struct P2pSlot {
  bool posted = false;
  bool consumed = false;
  const void* src = nullptr;
  size_t bytes = 0;
  Clock::time_point posted_at;
  Clock::time_point end;
};

// Sequence spaces: ops enqueued directly are numbered when the host calls;
// ops recorded into a CUDA graph are numbered each time they run.
enum Space { kDirect = 0, kGraph = 1 };

// The state a communicator's ranks share. Outlives the ncclComm objects
// while queued ops hold it.
struct Clique {
  explicit Clique(std::vector<int> devs);

  const int nranks;
  const std::vector<int> devices;  // per rank

  std::mutex mu;
  std::condition_variable cv;
  // Everything below: guarded by mu.
  bool aborted = false;             // a rank called ncclCommAbort
  ncclResult_t error = ncclSuccess; // first asynchronous error
  std::map<std::pair<int, uint64_t>, CollSlot> colls;
  std::map<std::tuple<int, int, int, uint64_t>, P2pSlot> p2p;
  std::vector<uint64_t> coll_next[2];   // per rank and space
  std::map<std::pair<int, int>, uint64_t> send_next[2], recv_next[2];  // (src, dst)
  std::vector<int> pending;             // per rank: direct ops not yet finished
  std::vector<uint64_t> split_next;     // per rank: ncclCommSplit calls so far

  // Ranks in other processes (nccl_process.h): collectives meet there, not
  // in `colls`. Null for a communicator of this process alone.
  std::shared_ptr<Segment> segment;
  // Nodes x ranks per node; set before the comms are published. In-process
  // communicators are on this process's node.
  gpuslack::nccl::Shape shape;
  // NCCL's commHash, told to its profiler plugin (set before the ranks
  // become ready): the same in every rank and process (from the unique id;
  // a split's from its parent's). The plugin hears the nodes from `shape`.
  uint64_t comm_hash = 0;
};

}  // namespace ncclsim

// The opaque communicator of nccl.h: one rank's handle.
struct ncclComm {
  enum State { kInit = 0, kReady = 1, kFailed = 2 };
  // Set once by whoever completes the rendezvous, before `state` is
  // released (store-release; readers load-acquire).
  std::atomic<int> state{kInit};
  ncclResult_t init_error = ncclSuccess;
  std::shared_ptr<ncclsim::Clique> clique;
  int rank = -1;
  int nranks = 0;
  // Known from the start.
  int device = 0;
  bool blocking = true;
  // While state == kInit: where the rendezvous holds this comm (guarded by
  // the init mutex of nccl_comm.cc), so that destroying it can withdraw it.
  std::vector<ncclComm*>* joined_in = nullptr;
  size_t joined_at = 0;
  // ncclCommInitRank's rendezvous key (0: InitAll or Split), polled for
  // peers in other processes while state == kInit.
  uint64_t init_key = 0;
  // The profiler plugin's context for this rank (nccl_profiler.cc): init
  // once the comm is ready, finalize when it is released.
  std::atomic<bool> profiler_attached{false};
  void* profiler_context = nullptr;
  int profiler_mask = 0;
};

namespace ncclsim {

// The comm is ready for work: ncclSuccess, or the error NCCL returns when
// using it (in progress: ncclInvalidArgument; failed or aborted peers).
ncclResult_t usable(ncclComm* comm);

// Waits until a comm's initialization finished; its result.
ncclResult_t wait_init(ncclComm* comm);

// ncclCommInitRank[Config] on the calling thread's current device
// (nccl_comm.cc): registers the rank, then waits or defers as the config says.
ncclResult_t init_rank(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank, const ncclConfig_t* config);

// ncclCommSplit of a communicator across processes (nccl_split.cc), after
// the caller validated it and took the rank's split number `seq`.
ncclResult_t split_across_processes(ncclComm* comm, uint64_t seq, int color, int key, bool blocking,
                                    ncclComm_t* newcomm);

// Groups (nccl_ops.cc): inside ncclGroupStart/End, a blocking init's wait
// is deferred to the outermost ncclGroupEnd. Returns false outside a group.
bool group_defer_init(ncclComm* comm);

// ---------------------------------------------- the profiler plugin --
// nccl_profiler.cc: NCCL's profiler plugin interface, as NCCL drives it
// (README.md, "NCCL's profiler plugin").

// The plugin's init for a ready comm, once, on the first thread that sees
// it ready (loads the plugin at the process's first). Cheap after.
void profiler_attach(ncclComm* comm);
// finalize, when the comm is released.
void profiler_detach(ncclComm* comm);

// The events of one batch (a call, or what a group issued for one comm and
// stream): group, then each work's coll/p2p event, started on the host at
// launch and stopped after it; the coll events' handles are the parents of
// the kernel channel events the worker reports.
struct BatchEvents {
  void* context = nullptr;
  int mask = 0;
  int rank = 0;
  std::vector<void*> works;  // per work: its coll event, or null
};
BatchEvents profiler_launch(ncclComm* comm, const std::vector<Work>& works);
// On the worker: the kernel channels of `works[i]` ran from `start` to `end`
// (GPU globaltimer: ns on the simulated clock).
void profiler_kernel(const BatchEvents& ev, size_t i, const Work& w, Clock::time_point start,
                     Clock::time_point end);

}  // namespace ncclsim

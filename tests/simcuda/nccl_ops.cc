// libnccl.so.2 of the simulated device: collectives, point-to-point and
// groups.
//
// Each call becomes one op on the caller's stream (within a group: one op
// per communicator and stream, at the outermost ncclGroupEnd). When the
// stream's worker runs it, the op meets the other ranks' ops in the Clique:
//   - a collective waits at the slot of its sequence number; the last rank
//     to arrive computes every rank's output from every rank's input (all
//     "device" memory is host memory here), and every rank then holds its
//     worker until start + the modeled time, start being the last arrival;
//   - the ops of one group post all their sends first, then run their
//     collectives, then complete their receives, then wait until their sends
//     were consumed: send/recv pairs in one group never deadlock, while a
//     lone ncclSend holds its stream until the matching ncclRecv took the
//     data, as in NCCL.
// What is computed and the modeled time: nccl_reduce.cc.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "nccl_internal.h"

namespace ncclsim {
namespace {

// ------------------------------------------------------------ the ops ------

// Holds the worker until `end`, or until the communicator is aborted.
void hold(Clique& c, std::unique_lock<std::mutex>& l, Clock::time_point end) {
  // A condition-variable wait for the bulk (abortable), a spin for the rest
  // (wait_until is precise to a few microseconds).
  c.cv.wait_until(l, end - std::chrono::microseconds(200), [&] { return c.aborted; });
  if (c.aborted) return;
  l.unlock();
  gpusim::wait_until(end);
  l.lock();
}

// One rank's part in a collective. Clique::mu held.
// Returns when the rank's part ended (modeled).
Clock::time_point run_collective(Clique& c, std::unique_lock<std::mutex>& l, int rank, int space,
                                 const Work& w) {
  if (c.aborted) return Clock::now();
  const auto key = std::make_pair(space, w.seq);
  CollSlot& s = c.colls[key];
  if (s.args.empty()) s.args.resize(c.nranks);
  s.args[rank] = w;
  if (++s.arrived == c.nranks) {
    auto start = Clock::now();
    s.end = gpusim::after(start, modeled_us(w, c.nranks));
    if (debug())
      std::fprintf(stderr, "gpusim: nccl: collective %llu of %d ranks (%d x %d): %s/%s, %d channels, modeled %.3f ms\n",
                   static_cast<unsigned long long>(w.seq), c.nranks, c.shape.nodes, c.shape.ranks_per_node, w.algo,
                   w.proto, w.channels, modeled_us(w, c.nranks) / 1e3);
    bool match = true;
    for (const Work& o : s.args) match = match && same_call(o, w);
    if (!match) {
      if (c.error == ncclSuccess) c.error = ncclInvalidUsage;  // ranks called different collectives
    } else if (gpusim::config().nccl_moves_data) {
      s.computing = true;
      l.unlock();
      compute(s.args);
      l.lock();
      s.computing = false;
    }
    s.done = true;
    c.cv.notify_all();
  } else {
    c.cv.wait(l, [&] { return s.done || (c.aborted && !s.computing); });
  }
  Clock::time_point end = s.done ? s.end : Clock::now();
  if (++s.left == c.nranks) c.colls.erase(key);
  hold(c, l, end);
  return end;
}

// The work of one rank on one stream: a single call, or everything one
// group issued for that communicator and stream.
struct Batch {
  std::shared_ptr<Clique> clique;
  int rank = 0;
  bool graph = false;  // recorded into a CUDA graph: numbered when run
  std::vector<Work> works;
  BatchEvents events;  // the profiler plugin's (nccl_profiler.cc); none for a graph
};

// Gives each work its rendezvous number in `space`. Clique::mu held.
void number(Clique& c, int rank, int space, std::vector<Work>* works) {
  for (Work& w : *works) {
    switch (w.kind) {
      case Kind::kSend: w.seq = c.send_next[space][{rank, w.root}]++; break;
      case Kind::kRecv: w.seq = c.recv_next[space][{w.root, rank}]++; break;
      default: w.seq = c.coll_next[space][rank]++; break;
    }
  }
}

// A batch of a communicator across processes (nccl_process.h): its
// collectives in call order, each meeting its peers in the segment and
// holding the worker until its modeled end. The first failure becomes the
// communicator's asynchronous error and ends the batch.
void run_segment_batch(const Batch& b) {
  Clique& c = *b.clique;
  std::unique_lock<std::mutex> l(c.mu);
  auto stop = [&c] {
    std::lock_guard<std::mutex> g(c.mu);
    return c.aborted;
  };
  for (size_t i = 0; i < b.works.size(); ++i) {
    const Work& w = b.works[i];
    if (c.aborted || c.error != ncclSuccess) break;
    l.unlock();
    Clock::time_point end;
    const Clock::time_point began = Clock::now();
    ncclResult_t r = c.segment->collective(b.rank, w, stop, &end);
    if (r == ncclSuccess) profiler_kernel(b.events, i, w, began, end);
    l.lock();
    if (r != ncclSuccess) {
      if (c.error == ncclSuccess) c.error = r;
      c.cv.notify_all();
      break;
    }
    hold(c, l, end);
  }
  if (!b.graph && --c.pending[b.rank] == 0) c.cv.notify_all();
}

void run_batch(const Batch& b) {
  Clique& c = *b.clique;
  if (c.segment) return run_segment_batch(b);
  const int me = b.rank;
  const int space = b.graph ? kGraph : kDirect;
  std::unique_lock<std::mutex> l(c.mu);
  std::vector<Work> works = b.works;  // a graph may replay the batch
  if (b.graph) number(c, me, space, &works);
  const gpusim::Config& cfg = gpusim::config();
  Clock::time_point end = Clock::now();

  // 1. Post every send.
  for (const Work& w : works) {
    if (w.kind != Kind::kSend || c.aborted) continue;
    P2pSlot& s = c.p2p[{space, me, w.root, w.seq}];
    s.posted = true;
    s.src = w.send;
    s.bytes = w.count * type_size(w.type);
    s.posted_at = Clock::now();
    c.cv.notify_all();
  }
  // 2. The collectives, in call order; each one's kernel channels reported
  // to the profiler plugin as NCCL's proxy thread does, once it ended.
  for (size_t i = 0; i < works.size(); ++i) {
    const Work& w = works[i];
    if (w.kind == Kind::kSend || w.kind == Kind::kRecv) continue;
    const Clock::time_point began = Clock::now();
    const Clock::time_point ended = run_collective(c, l, me, space, w);
    if (b.events.context && !c.aborted) {
      l.unlock();
      profiler_kernel(b.events, i, w, began, ended);
      l.lock();
    }
  }
  // 3. Every receive: the transfer starts once both sides are there.
  for (const Work& w : works) {
    if (w.kind != Kind::kRecv) continue;
    auto arrived = Clock::now();
    P2pSlot& s = c.p2p[{space, w.root, me, w.seq}];
    c.cv.wait(l, [&] { return s.posted || c.aborted; });
    if (c.aborted) break;
    size_t bytes = w.count * type_size(w.type);
    if (bytes != s.bytes && c.error == ncclSuccess) c.error = ncclInvalidUsage;
    const void* src = s.src;
    size_t n = std::min(bytes, s.bytes);
    l.unlock();
    copy(w.recv, src, n);
    l.lock();
    s.end = gpusim::after(std::max(arrived, s.posted_at),
                          cfg.nccl_latency_us + gpusim::transfer_us(n, cfg.nccl_gbps));
    s.consumed = true;
    end = std::max(end, s.end);
    c.cv.notify_all();
  }
  // 4. Every send was consumed.
  for (const Work& w : works) {
    if (w.kind != Kind::kSend) continue;
    const auto key = std::make_tuple(space, me, w.root, w.seq);
    P2pSlot& s = c.p2p[key];
    c.cv.wait(l, [&] { return s.consumed || c.aborted; });
    if (!s.consumed) break;
    end = std::max(end, s.end);
    c.p2p.erase(key);
  }
  hold(c, l, end);
  if (!b.graph && --c.pending[me] == 0) c.cv.notify_all();
}

// ---------------------------------------------------------------- enqueue --

CUstream_st* comm_stream(const ncclComm* comm, cudaStream_t h) {
  // NULL (and cudaStreamLegacy) is the legacy stream of the comm's device.
  if (h == nullptr || h == cudaStreamLegacy) return gpusim::legacy_stream(comm->device);
  return gpusim::resolve(h, false);
}

// The kernel a batch runs as, named like NCCL's own device kernels
// (mangled, as CUPTI reports them): ncclDevKernel_AllReduce_Sum_f32_RING_LL;
// collectives without a reduction drop the op and type
// (ncclDevKernel_AllGather_RING_LL); point-to-point is
// ncclDevKernel_SendRecv. A batch is named by its first collective.
const char* kernel_name(const std::vector<Work>& works) {
  static const char* const kTypes[] = {"i8", "u8", "i32", "u32", "i64", "u64", "f16", "f32", "f64", "bf16",
                                       "f8e4m3", "f8e5m2"};
  static const char* const kOps[] = {"Sum", "Prod", "MinMax", "MinMax", "SumPostDiv"};
  const Work* first = nullptr;
  for (const Work& w : works)
    if (w.kind != Kind::kSend && w.kind != Kind::kRecv) {
      first = &w;
      break;
    }
  std::string base = "ncclDevKernel_";
  if (!first) {
    base += "SendRecv";
  } else {
    base += kind_name(first->kind);
    bool reduces = first->kind == Kind::kAllReduce || first->kind == Kind::kReduce ||
                   first->kind == Kind::kReduceScatter;
    if (reduces) {
      base += "_";
      base += first->op >= 0 && first->op < 5 ? kOps[first->op] : "Sum";
      base += "_";
      base += first->type >= 0 && first->type < 12 ? kTypes[first->type] : "u8";
    }
    base += "_RING_LL";
  }
  std::string mangled = "_Z" + std::to_string(base.size()) + base + "24ncclDevKernelArgsStorageILm4096EE";
  return gpusim::intern_name(mangled.c_str());
}

void submit(ncclComm* comm, CUstream_st* stream, std::vector<Work> works) {
  auto b = std::make_shared<Batch>();
  b->clique = comm->clique;
  b->rank = comm->rank;
  b->graph = gpusim::is_capturing(stream);
  b->works = std::move(works);
  if (!b->graph) {
    {
      std::lock_guard<std::mutex> l(b->clique->mu);
      number(*b->clique, b->rank, kDirect, &b->works);
      ++b->clique->pending[b->rank];
    }
    b->events = profiler_launch(comm, b->works);  // NCCL's host-side events, at launch
  }
  gpusim::OpInfo info;
  info.kind = gpusim::OpKind::kKernel;
  info.blocks = 1;
  if (gpusim::activity_observed()) info.name = kernel_name(b->works);
  gpusim::enqueue(stream, [b] { run_batch(*b); }, info);
}

struct Deferred {
  ncclComm* comm;
  CUstream_st* stream;
  Work work;
};

struct GroupState {
  int depth = 0;
  std::vector<Deferred> works;
  std::vector<ncclComm*> inits;  // blocking inits whose wait is deferred
  ncclResult_t error = ncclSuccess;
};
// Per thread, as in NCCL. Its destructor runs only when its own thread
// exits (stream workers never touch it), so it needs no leaking.
thread_local GroupState t_group;

// A buffer the GPU will access: device memory of the comm's device, or
// pinned host memory (mapped into the device's address space).
ncclResult_t check_buffer(const ncclComm* comm, const void* p, size_t bytes, const char* what,
                          const char* name) {
  if (bytes == 0) return ncclSuccess;
  gpusim::Region r;
  if (!p || !gpusim::Memory::get().find(p, bytes, &r))
    return fail(ncclInvalidArgument, std::string(what) + ": " + name + " is not a valid device pointer");
  if ((r.kind == gpusim::MemKind::kDevice || r.kind == gpusim::MemKind::kDeviceAsync) &&
      r.device != comm->device)
    return fail(ncclInvalidArgument, std::string(what) + ": " + name + " is on another device");
  return ncclSuccess;
}


ncclResult_t validate(ncclComm* comm, const Work& w) {
  const char* what = kind_name(w.kind);
  if (ncclResult_t r = usable(comm)) return r;
  if (comm->clique->segment && !Segment::supported(w))
    return fail(ncclInvalidUsage, std::string(what) + " across processes is not simulated "
                                                      "(AllReduce, Reduce, Broadcast, AllGather are)");
  if (w.type < 0 || w.type >= ncclNumTypes) return fail(ncclInvalidArgument, std::string(what) + ": invalid datatype");
  if (w.op < 0 || w.op >= ncclNumOps) return fail(ncclInvalidArgument, std::string(what) + ": invalid reduction op");
  const int n = comm->nranks;
  if (w.root < 0 || w.root >= n)
    return fail(ncclInvalidArgument, std::string(what) + (w.kind == Kind::kSend || w.kind == Kind::kRecv
                                                              ? ": invalid peer" : ": invalid root"));
  const size_t bytes = w.count * type_size(w.type), all = bytes * n;
  const bool root = comm->rank == w.root;
  size_t send = 0, recv = 0;
  switch (w.kind) {
    case Kind::kAllReduce: send = bytes, recv = bytes; break;
    case Kind::kBroadcast: send = root ? bytes : 0, recv = bytes; break;
    case Kind::kReduce: send = bytes, recv = root ? bytes : 0; break;
    case Kind::kAllGather: send = bytes, recv = all; break;
    case Kind::kReduceScatter: send = all, recv = bytes; break;
    case Kind::kAlltoAll: send = all, recv = all; break;
    case Kind::kGather: send = bytes, recv = root ? all : 0; break;
    case Kind::kScatter: send = root ? all : 0, recv = bytes; break;
    case Kind::kSend: send = bytes; break;
    case Kind::kRecv: recv = bytes; break;
  }
  if (ncclResult_t r = check_buffer(comm, w.send, send, what, "sendbuff")) return r;
  return check_buffer(comm, w.recv, recv, what, "recvbuff");
}

// Every API call: validate, then enqueue now or at the group's end.
ncclResult_t issue(ncclComm* comm, cudaStream_t h, Work w) {
  ncclResult_t r = validate(comm, w);
  CUstream_st* stream = r == ncclSuccess ? comm_stream(comm, h) : nullptr;
  if (r == ncclSuccess && !stream) r = fail(ncclUnhandledCudaError, "invalid stream");
  if (r == ncclSuccess && w.count == 0 && w.kind != Kind::kSend && w.kind != Kind::kRecv)
    return ncclSuccess;  // NCCL skips empty collectives
  if (r == ncclSuccess) choose(&w, comm->clique->shape);
  if (t_group.depth > 0) {
    if (r != ncclSuccess) {
      if (t_group.error == ncclSuccess) t_group.error = r;  // the group fails at its end
      return r;
    }
    t_group.works.push_back({comm, stream, w});
    return ncclSuccess;
  }
  if (r != ncclSuccess) return r;
  submit(comm, stream, {w});
  return ncclSuccess;
}

Work make(Kind kind, const void* send, void* recv, size_t count, ncclDataType_t type,
          ncclRedOp_t op, int root) {
  Work w;
  w.kind = kind;
  w.send = send;
  w.recv = recv;
  w.count = count;
  w.type = type;
  w.op = op;
  w.root = root;
  return w;
}

}  // namespace

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kAllReduce: return "AllReduce";
    case Kind::kBroadcast: return "Broadcast";
    case Kind::kReduce: return "Reduce";
    case Kind::kAllGather: return "AllGather";
    case Kind::kReduceScatter: return "ReduceScatter";
    case Kind::kAlltoAll: return "AlltoAll";
    case Kind::kGather: return "Gather";
    case Kind::kScatter: return "Scatter";
    case Kind::kSend: return "Send";
    case Kind::kRecv: return "Recv";
  }
  return "Invalid";
}

bool group_defer_init(ncclComm* comm) {
  if (t_group.depth == 0) return false;
  t_group.inits.push_back(comm);
  return true;
}

}  // namespace ncclsim

using namespace ncclsim;

// ------------------------------------------------------------ collectives --

NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, stream, make(Kind::kAllReduce, sendbuff, recvbuff, count, datatype, op, 0));
}

NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, stream, make(Kind::kBroadcast, sendbuff, recvbuff, count, datatype, ncclSum, root));
}

NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
         ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, stream, make(Kind::kBroadcast, buff, buff, count, datatype, ncclSum, root));
}

NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, stream, make(Kind::kReduce, sendbuff, recvbuff, count, datatype, op, root));
}

NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, stream, make(Kind::kAllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0));
}

NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, stream, make(Kind::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0));
}

NCCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, stream, make(Kind::kAlltoAll, sendbuff, recvbuff, count, datatype, ncclSum, 0));
}

NCCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, stream, make(Kind::kGather, sendbuff, recvbuff, count, datatype, ncclSum, root));
}

NCCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, stream, make(Kind::kScatter, sendbuff, recvbuff, count, datatype, ncclSum, root));
}

// ---------------------------------------------------------- point to point --

NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, stream, make(Kind::kSend, sendbuff, nullptr, count, datatype, ncclSum, peer));
}

NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, stream, make(Kind::kRecv, nullptr, recvbuff, count, datatype, ncclSum, peer));
}

// ----------------------------------------------------------------- groups --

NCCL_API(ncclResult_t, ncclGroupStart) {
  ++t_group.depth;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclGroupEnd) {
  GroupState& g = t_group;
  if (g.depth == 0) return fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  if (--g.depth > 0) return ncclSuccess;
  std::vector<Deferred> works = std::move(g.works);
  std::vector<ncclComm*> inits = std::move(g.inits);
  ncclResult_t result = g.error;
  g = GroupState();
  for (ncclComm* c : inits)
    if (ncclResult_t r = wait_init(c); r != ncclSuccess && result == ncclSuccess) result = r;
  if (result != ncclSuccess) return result;  // the whole group is dropped, as in NCCL
  // One op per (communicator, stream), in order of first use.
  std::vector<std::pair<ncclComm*, CUstream_st*>> order;
  std::map<std::pair<ncclComm*, CUstream_st*>, std::vector<Work>> batches;
  for (Deferred& d : works) {
    auto key = std::make_pair(d.comm, d.stream);
    auto [it, fresh] = batches.try_emplace(key);
    if (fresh) order.push_back(key);
    it->second.push_back(d.work);
  }
  for (const auto& key : order) submit(key.first, key.second, std::move(batches[key]));
  return ncclSuccess;
}

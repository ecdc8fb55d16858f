// libnccl.so.2 of the simulated device: communicators (creation, split,
// teardown, queries), errors, versions and NCCL-allocated memory.
//
// Every communicator is made at a rendezvous (Join): the ranks of an
// ncclUniqueId, or the ranks of a parent communicator calling ncclCommSplit.
// Arriving never blocks; the last rank to arrive builds the Clique of each
// new communicator and publishes it to every member. A blocking init then
// waits for that; a non-blocking one (config->blocking = 0) returns
// ncclInProgress and ncclCommGetAsyncError reports it until then.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "nccl_internal.h"

namespace ncclsim {

Clique::Clique(std::vector<int> devs)
    : nranks(static_cast<int>(devs.size())), devices(std::move(devs)) {
  shape.ranks_per_node = nranks;  // one node, until the segment says otherwise
  coll_next[kDirect].assign(nranks, 0);
  coll_next[kGraph].assign(nranks, 0);
  pending.assign(nranks, 0);
  split_next.assign(nranks, 0);
}

namespace {

// A fixed buffer, like the real library's (and trivially destructible).
thread_local char t_last_error[1024];
// The latest error of any thread: what a thread that saw none is told (an
// op's failure is recorded on its stream's worker).
std::mutex g_last_error_mu;
char g_last_error[1024];

constexpr unsigned kConfigMagic = 0xcafebeef;

// One rank's arrival at a rendezvous.
struct Member {
  int color = 0;
  int key = 0;
  int device = 0;
};

struct Join {
  int expected = 0;
  int arrived = 0;
  std::vector<bool> present;
  std::vector<Member> members;     // by index (rank or parent rank)
  std::vector<ncclComm*> comms;    // by index; null: no color, or withdrawn
  // ncclCommInitRank: where ranks of other processes register too.
  std::shared_ptr<Segment> segment;
  Clock::time_point started = Clock::now();
};

// Rendezvous are keyed by (owner, number): (nullptr, unique id) for
// ncclCommInitRank*, (parent clique, split number) for ncclCommSplit.
using JoinKey = std::pair<const void*, uint64_t>;

struct Registry {
  std::mutex mu;
  std::condition_variable cv;  // a rendezvous completed
  std::map<JoinKey, Join> joins;
  uint64_t next_id = 1;
};

Registry& registry() {
  static auto* r = new Registry();  // never destroyed
  return *r;
}

// NCCL's commHash of a new communicator: the same in every rank (and
// process) of it. An ncclCommInitRank's comes from its unique id; a split's
// from its parent's, the split's number and the color.
uint64_t comm_hash_of(const JoinKey& key, int color) {
  if (!key.first) return key.second;
  uint64_t h = static_cast<const Clique*>(key.first)->comm_hash ^ (key.second * 0x9e3779b97f4a7c15ull) ^
               (static_cast<uint64_t>(color) << 32);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 29);
}

// Builds the communicators of a complete rendezvous. Registry::mu held.
void complete(Join& j, const JoinKey& key) {
  // Every rank is in this process: nobody else will open the segment.
  if (j.segment) j.segment->unlink();
  std::map<int, std::vector<int>> colors;  // color -> member indices
  for (int i = 0; i < j.expected; ++i)
    if (j.members[i].color != NCCL_SPLIT_NOCOLOR) colors[j.members[i].color].push_back(i);
  for (auto& [color, idx] : colors) {
    std::stable_sort(idx.begin(), idx.end(),
                     [&](int a, int b) { return j.members[a].key < j.members[b].key; });
    std::vector<int> devs;
    for (int i : idx) devs.push_back(j.members[i].device);
    std::vector<int> sorted = devs;
    std::sort(sorted.begin(), sorted.end());
    bool duplicate = std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end();
    auto clique = duplicate ? nullptr : std::make_shared<Clique>(devs);
    if (clique) clique->comm_hash = comm_hash_of(key, color);
    for (size_t r = 0; r < idx.size(); ++r) {
      ncclComm* c = j.comms[idx[r]];
      if (!c) continue;  // destroyed before it was ready
      c->joined_in = nullptr;
      if (duplicate) {
        // Real NCCL: "Duplicate GPU detected": two ranks of one
        // communicator on one device.
        c->init_error = ncclInvalidUsage;
        c->state.store(ncclComm::kFailed, std::memory_order_release);
        continue;
      }
      c->clique = clique;
      c->rank = static_cast<int>(r);
      c->nranks = static_cast<int>(idx.size());
      c->state.store(ncclComm::kReady, std::memory_order_release);
    }
  }
  for (ncclComm* c : j.comms)
    if (c) c->joined_in = nullptr;
  registry().cv.notify_all();
}

// Registers `comm` (may be null: a split's NCCL_SPLIT_NOCOLOR rank) as
// member `index` of the rendezvous `key` of `expected` ranks.
ncclResult_t arrive_locked(JoinKey key, int expected, int index, Member m, ncclComm* comm) {
  Registry& reg = registry();
  Join& j = reg.joins[key];
  if (j.expected == 0) {
    j.expected = expected;
    j.present.assign(expected, false);
    j.members.resize(expected);
    j.comms.assign(expected, nullptr);
  }
  if (j.expected != expected)
    return fail(ncclInvalidArgument, "ncclCommInitRank: nranks differs between ranks of one id");
  if (j.present[index]) return fail(ncclInvalidArgument, "ncclCommInitRank: rank joined twice");
  j.present[index] = true;
  j.members[index] = m;
  j.comms[index] = comm;
  if (comm) {
    comm->joined_in = &j.comms;
    comm->joined_at = static_cast<size_t>(index);
  }
  if (++j.arrived == j.expected) {
    complete(j, key);
    reg.joins.erase(key);
  }
  return ncclSuccess;
}

ncclResult_t arrive(JoinKey key, int expected, int index, Member m, ncclComm* comm) {
  std::lock_guard<std::mutex> l(registry().mu);
  return arrive_locked(key, expected, index, m, comm);
}

// An ncclCommInitRank rendezvous with ranks in other processes: once all
// registered in the segment, this process's ranks become a communicator
// whose collectives run through it; past GPUSIM_NCCL_TIMEOUT_S, they fail.
// Registry::mu held.
void poll_segment(uint64_t key) {
  Registry& reg = registry();
  auto it = reg.joins.find({nullptr, key});
  if (it == reg.joins.end() || !it->second.segment) return;
  Join& j = it->second;
  const bool ready = j.segment->complete();
  if (!ready && Clock::now() - j.started < std::chrono::duration<double>(gpusim::config().nccl_timeout_s)) return;
  std::shared_ptr<Clique> clique;
  if (ready) {
    clique = std::make_shared<Clique>(j.segment->devices());
    clique->segment = j.segment;
    clique->shape = shape_of(j.segment->nodes());
    clique->comm_hash = key;  // the unique id's, as in every process
  } else {
    std::fprintf(stderr, "gpusim: nccl: ncclCommInitRank: not every rank of %d joined within %g s (GPUSIM_NCCL_TIMEOUT_S)\n",
                 j.expected, gpusim::config().nccl_timeout_s);
  }
  for (int i = 0; i < j.expected; ++i) {
    ncclComm* c = j.comms[i];
    if (!c) continue;
    c->joined_in = nullptr;
    if (!ready) {
      j.segment->leave(i, false);
      c->init_error = ncclRemoteError;
      c->state.store(ncclComm::kFailed, std::memory_order_release);
      continue;
    }
    c->clique = clique;
    c->rank = i;
    c->nranks = j.expected;
    c->state.store(ncclComm::kReady, std::memory_order_release);
  }
  reg.joins.erase(it);
  reg.cv.notify_all();
}

// Blocking comms wait (or defer the wait to the group's end); non-blocking
// ones report progress through ncclCommGetAsyncError.
ncclResult_t finish_init(ncclComm_t* out) {
  ncclComm* c = *out;
  if (!c->blocking) return ncclInProgress;
  if (group_defer_init(c)) return ncclSuccess;
  ncclResult_t r = wait_init(c);
  if (r != ncclSuccess) {
    delete c;
    *out = nullptr;
  }
  return r;
}

ncclResult_t read_config(const ncclConfig_t* config, bool* blocking) {
  if (!config) return ncclSuccess;
  if (config->magic != kConfigMagic)
    return fail(ncclInvalidArgument, "ncclConfig_t not initialized with NCCL_CONFIG_INITIALIZER");
  if (config->blocking != NCCL_CONFIG_UNDEF_INT) {
    if (config->blocking != 0 && config->blocking != 1)
      return fail(ncclInvalidArgument, "config->blocking must be 0 or 1");
    *blocking = config->blocking == 1;
  }
  return ncclSuccess;
}

}  // namespace

ncclResult_t init_rank(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank,
                       const ncclConfig_t* config) {
  if (!out) return fail(ncclInvalidArgument, "ncclCommInitRank: comm is NULL");
  *out = nullptr;
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return fail(ncclInvalidArgument, "ncclCommInitRank: invalid rank or nranks");
  const uint64_t key = Segment::key_of(id);
  if (key == 0) return fail(ncclInvalidArgument, "ncclCommInitRank: not an id from ncclGetUniqueId");
  bool blocking = true;
  if (ncclResult_t r = read_config(config, &blocking)) return r;
  if (!tuning_error().empty()) return fail(ncclInvalidUsage, tuning_error());
  int device = gpusim::current_device();
  if (!gpusim::valid_device(device)) return fail(ncclUnhandledCudaError, "no usable CUDA device");
  auto* c = new ncclComm();
  c->device = device;
  c->blocking = blocking;
  c->init_key = key;
  {
    // Registered in the segment and here in one step, so that the segment
    // never holds a rank of this process the local rendezvous lacks.
    std::lock_guard<std::mutex> l(registry().mu);
    auto it = registry().joins.find({nullptr, key});
    std::shared_ptr<Segment> seg = it != registry().joins.end() ? it->second.segment : nullptr;
    ncclResult_t r = ncclSuccess;
    if (seg) {
      if (seg->nranks() != nranks) r = fail(ncclInvalidArgument, "ncclCommInitRank: nranks differs between ranks of one id");
      else r = seg->claim(rank, device);
    } else {
      r = Segment::join(id, nranks, rank, device, &seg);
      if (r == ncclSystemError) {
        // No shared memory here: ranks of this process can still meet.
        static std::atomic<bool> said{false};
        if (!said.exchange(true))
          std::fprintf(stderr, "gpusim: nccl: %s: communicators stay within one process\n", t_last_error);
        r = ncclSuccess;
      }
    }
    if (r == ncclSuccess) {
      if (seg) registry().joins[{nullptr, key}].segment = seg;
      r = arrive_locked({nullptr, key}, nranks, rank, {0, rank, device}, c);
    }
    if (r != ncclSuccess) {
      delete c;
      return r;
    }
  }
  *out = c;
  return finish_init(out);
}

ncclResult_t fail(ncclResult_t r, const std::string& msg) {
  std::snprintf(t_last_error, sizeof(t_last_error), "%s", msg.c_str());
  std::lock_guard<std::mutex> l(g_last_error_mu);
  std::snprintf(g_last_error, sizeof(g_last_error), "%s", msg.c_str());
  return r;
}

ncclResult_t wait_init(ncclComm* comm) {
  Registry& reg = registry();
  std::unique_lock<std::mutex> l(reg.mu);
  auto done = [&] { return comm->state.load(std::memory_order_acquire) != ncclComm::kInit; };
  while (!reg.cv.wait_for(l, std::chrono::milliseconds(1), done))
    if (comm->init_key) poll_segment(comm->init_key);
  const bool ready = comm->state.load(std::memory_order_acquire) == ncclComm::kReady;
  l.unlock();
  if (!ready) return comm->init_error;
  profiler_attach(comm);  // NCCL initializes its profiler plugin within the comm's init
  return ncclSuccess;
}

ncclResult_t usable(ncclComm* comm) {
  if (!comm) return fail(ncclInvalidArgument, "comm is NULL");
  switch (comm->state.load(std::memory_order_acquire)) {
    case ncclComm::kInit:
      return fail(ncclInvalidArgument,
                  "Attempt to use communicator before the previous operation returned ncclSuccess");
    case ncclComm::kFailed:
      return comm->init_error;
    default:
      break;
  }
  std::lock_guard<std::mutex> l(comm->clique->mu);
  if (comm->clique->aborted) return fail(ncclRemoteError, "a rank of the communicator aborted it");
  return comm->clique->error;
}

}  // namespace ncclsim

using namespace ncclsim;

// ---------------------------------------------------------------- versions --

NCCL_API(ncclResult_t, ncclGetVersion, int* version) {
  if (!version) return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  // The release whose newest profiler interface is GPUSIM_NCCL_PROFILER_VERSION
  // (README.md, "NCCL's profiler plugin"): v6 is the headers' own; 0 is an
  // NCCL before 2.23, which has none.
  static const int kRelease[] = {22203, 22304, 22405, 22503, 22703, 22807};
  const int interface = gpusim::config().nccl_profiler_version;
  *version = interface >= 6 ? NCCL_VERSION_CODE : kRelease[interface];
  return ncclSuccess;
}

NCCL_API(const char*, ncclGetErrorString, ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

NCCL_API(const char*, ncclGetLastError, ncclComm_t comm) {
  (void)comm;  // per thread here, else the process's latest; process-wide in the real library
  if (!t_last_error[0]) {
    std::lock_guard<std::mutex> l(g_last_error_mu);
    std::memcpy(t_last_error, g_last_error, sizeof(t_last_error));
  }
  return t_last_error;
}

// -------------------------------------------------------------- creation --

NCCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* id) {
  if (!id) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  uint64_t n;
  {
    std::lock_guard<std::mutex> l(registry().mu);
    n = registry().next_id++;
  }
  Segment::make_id(id, n);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return init_rank(comm, nranks, commId, rank, nullptr);
}

NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId,
         int rank, ncclConfig_t* config) {
  return init_rank(comm, nranks, commId, rank, config);
}

NCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comms, int ndev, const int* devlist) {
  if (!comms || ndev < 1) return fail(ncclInvalidArgument, "ncclCommInitAll: invalid comms or ndev");
  if (!tuning_error().empty()) return fail(ncclInvalidUsage, tuning_error());
  for (int i = 0; i < ndev; ++i)
    if (!gpusim::valid_device(devlist ? devlist[i] : i))
      return fail(ncclInvalidArgument, "ncclCommInitAll: invalid device in devlist");
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  const uint64_t n = Segment::key_of(id);
  for (int i = 0; i < ndev; ++i) {
    auto* c = new ncclComm();
    c->device = devlist ? devlist[i] : i;
    comms[i] = c;
    arrive({nullptr, n}, ndev, i, {0, i, c->device}, c);
  }
  ncclResult_t result = ncclSuccess;
  for (int i = 0; i < ndev; ++i)
    if (ncclResult_t r = wait_init(comms[i])) result = r;
  if (result != ncclSuccess) {
    for (int i = 0; i < ndev; ++i) {
      delete comms[i];
      comms[i] = nullptr;
    }
    return fail(result, "ncclCommInitAll: duplicate device in devlist");
  }
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
         ncclConfig_t* config) {
  if (!newcomm) return fail(ncclInvalidArgument, "ncclCommSplit: newcomm is NULL");
  *newcomm = nullptr;
  if (ncclResult_t r = usable(comm)) return r;
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
    return fail(ncclInvalidArgument, "ncclCommSplit: color must be >= 0 or NCCL_SPLIT_NOCOLOR");
  bool blocking = comm->blocking;
  if (ncclResult_t r = read_config(config, &blocking)) return r;
  Clique& parent = *comm->clique;
  uint64_t seq;
  {
    std::lock_guard<std::mutex> l(parent.mu);
    seq = parent.split_next[comm->rank]++;
  }
  if (parent.segment) return split_across_processes(comm, seq, color, key, blocking, newcomm);
  ncclComm* c = nullptr;
  if (color != NCCL_SPLIT_NOCOLOR) {
    c = new ncclComm();
    c->device = comm->device;
    c->blocking = blocking;
  }
  JoinKey jk{&parent, seq};
  if (ncclResult_t r = arrive(jk, comm->nranks, comm->rank, {color, key, comm->device}, c)) {
    delete c;
    return r;
  }
  if (!c) {
    // Not part of any new communicator, but still part of the collective
    // split: a blocking call returns once every rank has arrived.
    if (blocking) {
      Registry& reg = registry();
      std::unique_lock<std::mutex> l(reg.mu);
      reg.cv.wait(l, [&] { return reg.joins.find(jk) == reg.joins.end(); });
    }
    return ncclSuccess;
  }
  *newcomm = c;
  return finish_init(newcomm);
}

// --------------------------------------------------------------- teardown --

namespace {

// Waits until every op this rank enqueued directly has finished.
void flush(ncclComm* comm) {
  if (comm->state.load(std::memory_order_acquire) != ncclComm::kReady) return;
  Clique& c = *comm->clique;
  std::unique_lock<std::mutex> l(c.mu);
  c.cv.wait(l, [&] { return c.pending[comm->rank] == 0; });
}

// Frees a comm; one still at its rendezvous is withdrawn from it. Its
// peers in other processes see it leave.
void release(ncclComm* comm, bool aborted) {
  {
    std::lock_guard<std::mutex> l(registry().mu);
    if (comm->joined_in) {
      (*comm->joined_in)[comm->joined_at] = nullptr;
      auto it = registry().joins.find({nullptr, comm->init_key});
      if (comm->init_key && it != registry().joins.end() && it->second.segment)
        it->second.segment->leave(static_cast<int>(comm->joined_at), aborted);
    }
  }
  profiler_detach(comm);
  if (comm->state.load(std::memory_order_acquire) == ncclComm::kReady && comm->clique->segment)
    comm->clique->segment->leave(comm->rank, aborted);
  delete comm;
}

}  // namespace

NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) {
  if (!comm) return fail(ncclInvalidArgument, "ncclCommFinalize: comm is NULL");
  flush(comm);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  flush(comm);
  release(comm, false);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  if (comm->state.load(std::memory_order_acquire) == ncclComm::kReady) {
    // Every op of the communicator, on any rank, stops waiting: those
    // blocked return at once (outputs unspecified), later ones do nothing,
    // and the other ranks' ncclCommGetAsyncError reports ncclRemoteError.
    Clique& c = *comm->clique;
    std::lock_guard<std::mutex> l(c.mu);
    c.aborted = true;
    c.cv.notify_all();
  }
  release(comm, true);
  return ncclSuccess;
}

// ---------------------------------------------------------------- queries --

NCCL_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError) {
  if (!comm || !asyncError) return fail(ncclInvalidArgument, "ncclCommGetAsyncError: NULL argument");
  if (comm->init_key && comm->state.load(std::memory_order_acquire) == ncclComm::kInit) {
    std::lock_guard<std::mutex> l(registry().mu);
    poll_segment(comm->init_key);
  }
  switch (comm->state.load(std::memory_order_acquire)) {
    case ncclComm::kInit: *asyncError = ncclInProgress; return ncclSuccess;
    case ncclComm::kFailed: *asyncError = comm->init_error; return ncclSuccess;
    default: break;
  }
  std::lock_guard<std::mutex> l(comm->clique->mu);
  *asyncError = comm->clique->aborted ? ncclRemoteError : comm->clique->error;
  return ncclSuccess;
}

namespace {
ncclResult_t ready_for_query(ncclComm* comm, const void* out, const char* what) {
  if (!comm || !out) return fail(ncclInvalidArgument, std::string(what) + ": NULL argument");
  if (comm->state.load(std::memory_order_acquire) != ncclComm::kReady)
    return fail(ncclInvalidUsage, std::string(what) + ": communicator not initialized");
  return ncclSuccess;
}
}  // namespace

NCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count) {
  if (ncclResult_t r = ready_for_query(comm, count, "ncclCommCount")) return r;
  *count = comm->nranks;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank) {
  if (ncclResult_t r = ready_for_query(comm, rank, "ncclCommUserRank")) return r;
  *rank = comm->rank;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device) {
  if (!comm || !device) return fail(ncclInvalidArgument, "ncclCommCuDevice: NULL argument");
  *device = comm->device;
  return ncclSuccess;
}

// ----------------------------------------------------------------- memory --

namespace {
// ncclMemAlloc maps cuMem* memory in units of the allocation granularity.
constexpr size_t kGranularity = 2u << 20;
}  // namespace

NCCL_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size) {
  if (!ptr) return fail(ncclInvalidArgument, "ncclMemAlloc: ptr is NULL");
  *ptr = nullptr;
  if (size == 0) return ncclSuccess;
  int device = gpusim::current_device();
  if (!gpusim::valid_device(device)) return fail(ncclUnhandledCudaError, "no usable CUDA device");
  size_t bytes = (size + kGranularity - 1) / kGranularity * kGranularity;
  gpusim::Memory& mem = gpusim::Memory::get();
  if (!mem.reserve(device, bytes)) return fail(ncclUnhandledCudaError, "ncclMemAlloc: out of memory");
  void* p = gpusim::Memory::map_anonymous(bytes);
  if (!p) {
    mem.unreserve(device, bytes);
    return fail(ncclSystemError, "ncclMemAlloc: mmap failed");
  }
  // cuMemCreate + cuMemAddressReserve/cuMemMap + cuMemSetAccess.
  gpusim::charge(gpusim::vmm_cost_us(gpusim::VmmCall::kCreate, bytes) +
                 gpusim::vmm_cost_us(gpusim::VmmCall::kMap, bytes) +
                 gpusim::vmm_cost_us(gpusim::VmmCall::kSetAccess, bytes));
  gpusim::Region r;
  r.base = reinterpret_cast<uintptr_t>(p);
  r.size = bytes;
  r.kind = gpusim::MemKind::kDevice;
  r.device = device;
  r.charged = bytes;
  mem.add(r);
  *ptr = p;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclMemFree, void* ptr) {
  if (!ptr) return ncclSuccess;
  gpusim::Region r;
  gpusim::Memory& mem = gpusim::Memory::get();
  if (!mem.find(ptr, 1, &r) || r.base != reinterpret_cast<uintptr_t>(ptr) ||
      r.kind != gpusim::MemKind::kDevice)
    return fail(ncclInvalidArgument, "ncclMemFree: not a pointer from ncclMemAlloc");
  // Queued work may still use it; unmapping under it would crash the
  // simulation rather than corrupt a GPU.
  gpusim::sync_device(r.device);
  if (!mem.remove(r.base, nullptr)) return fail(ncclInvalidArgument, "ncclMemFree: freed twice");
  gpusim::Memory::unmap(ptr, r.size);
  if (r.charged) mem.unreserve(r.device, r.charged);
  return ncclSuccess;
}

namespace {
struct Registration {
  ncclComm* comm;
  void* buff;
  size_t size;
};
}  // namespace

NCCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size, void** handle) {
  if (!comm || !handle) return fail(ncclInvalidArgument, "ncclCommRegister: NULL argument");
  *handle = new Registration{comm, buff, size};
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle) {
  if (!comm || !handle) return fail(ncclInvalidArgument, "ncclCommDeregister: NULL argument");
  auto* reg = static_cast<Registration*>(handle);
  if (reg->comm != comm) return fail(ncclInvalidArgument, "ncclCommDeregister: handle of another comm");
  delete reg;
  return ncclSuccess;
}

// libnccl.so.2 of the simulated device: NCCL's profiler plugin interface,
// driven as NCCL drives it (NVIDIA/nccl src/plugin/profiler.cc,
// src/plugin/plugin_open.cc; README.md, "NCCL's profiler plugin"):
//
//   - loading, once, at the first communicator's init: the library
//     NCCL_PROFILER_PLUGIN names (dlopen of the value; if that fails and the
//     value is a bare name, libnccl-profiler-<value>.so; "none" loads
//     nothing; "STATIC_PLUGIN" is the process's global scope, dlopen(NULL)),
//     else libnccl-profiler.so; then dlsym of ncclProfiler_vN, newest first,
//     from GPUSIM_NCCL_PROFILER_VERSION (6: NCCL 2.29) down to v1;
//   - init per communicator rank (v4+: with its commHash, nodes, ranks and
//     rank), which returns the plugin's context and event mask;
//   - per launch, on the host: the group event, then each collective's coll
//     event (each point-to-point's p2p event; v5+: an API event before it),
//     then, once launched, their stops and the group's;
//   - per collective, on the stream's worker (NCCL's proxy thread): one
//     kernel channel event per channel, parented by the coll event (v3+;
//     v4+ with the GPU timer at start and at KernelChStop);
//   - finalize when the rank's communicator is destroyed or aborted.
// Only the event types the mask asks for are started, with NCCL's masks.
// Collectives captured into CUDA graphs send no events here.
#include <dlfcn.h>
#include <strings.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "nccl/profiler_abi.h"
#include "nccl_internal.h"

namespace ncclsim {
namespace {

namespace abi = gpuslack::nccl::abi;

struct Plugin {
  int version = 0;  // 0: none loaded
  const void* table = nullptr;
};

Plugin load() {
  Plugin p;
  const int newest = gpusim::config().nccl_profiler_version;
  if (newest <= 0) return p;
  const char* name = std::getenv("NCCL_PROFILER_PLUGIN");
  if (name && strcasecmp(name, "none") == 0) return p;
  void* lib = nullptr;
  if (name && *name) {
    lib = dlopen(strcasecmp(name, "STATIC_PLUGIN") == 0 ? nullptr : name, RTLD_NOW | RTLD_LOCAL);
    const size_t n = std::strlen(name);
    const bool full = std::strncmp(name, "lib", 3) == 0 && n > 3 && std::strcmp(name + n - 3, ".so") == 0;
    if (!lib && !std::strchr(name, '/') && !full)
      lib = dlopen(("libnccl-profiler-" + std::string(name) + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
  } else {
    lib = dlopen("libnccl-profiler.so", RTLD_NOW | RTLD_LOCAL);
  }
  if (!lib) return p;
  for (int v = newest; v >= 1; --v) {
    if (void* sym = dlsym(lib, ("ncclProfiler_v" + std::to_string(v)).c_str())) {
      p.version = v;
      p.table = sym;
      return p;
    }
  }
  dlclose(lib);
  return p;
}

const Plugin& plugin() {
  static std::once_flag once;
  static Plugin p;
  std::call_once(once, [] { p = load(); });
  return p;
}

void logger(int, unsigned long, const char*, int, const char*, ...) {}

// NCCL's profiler spellings (ncclAlgoToString, ncclProtoToString) of the
// NCCL_ALGO names a Work carries.
const char* nccl_algo(const char* a) {
  static const char* const kPairs[][2] = {{"Ring", "RING"},     {"Tree", "TREE"},         {"CollNetDirect", "COLLNET_DIRECT"},
                                          {"CollNetChain", "COLLNET_CHAIN"}, {"NVLS", "NVLS"}, {"NVLSTree", "NVLS_TREE"},
                                          {"PAT", "PAT"}};
  for (const auto& p : kPairs)
    if (strcasecmp(a, p[0]) == 0) return p[1];
  return "Unknown";
}
const char* nccl_proto(const char* p) {
  if (strcasecmp(p, "LL") == 0) return "LL";
  if (strcasecmp(p, "LL128") == 0) return "LL128";
  if (strcasecmp(p, "Simple") == 0) return "SIMPLE";
  return "Unknown";
}
uint8_t algo_enum(const char* a) {  // NCCL_ALGO_* (v1)
  static const char* const kNames[] = {"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
  for (uint8_t i = 0; i < 7; ++i)
    if (strcasecmp(a, kNames[i]) == 0) return i;
  return 1;
}
uint8_t proto_enum(const char* p) {  // NCCL_PROTO_* (v1)
  return strcasecmp(p, "LL") == 0 ? 0 : strcasecmp(p, "LL128") == 0 ? 1 : 2;
}

uint8_t func_enum(Kind k) {
  switch (k) {
    case Kind::kBroadcast: return 0;
    case Kind::kReduce: return 1;
    case Kind::kAllGather: return 2;
    case Kind::kReduceScatter: return 3;
    case Kind::kAllReduce: return 4;
    case Kind::kSend: return 6;
    case Kind::kRecv: return 7;
    default: return 5;
  }
}
const char* datatype_name(int t) {
  static const char* const kNames[] = {"ncclInt8",    "ncclUint8",   "ncclInt32",      "ncclUint32",
                                       "ncclInt64",   "ncclUint64",  "ncclFloat16",    "ncclFloat32",
                                       "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
  return t >= 0 && t < 12 ? kNames[t] : "Unknown";
}

bool is_p2p(const Work& w) { return w.kind == Kind::kSend || w.kind == Kind::kRecv; }

uint64_t gpu_ns(Clock::time_point t) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

// The interface of one version: its table, descriptor and state args.
template <int V> struct Api;
template <> struct Api<1> { using P = abi::ProfilerV1; using D = abi::EventDescrV1; using A = abi::StateArgsV1; };
template <> struct Api<2> { using P = abi::ProfilerV2; using D = abi::EventDescrV2; using A = abi::StateArgsV2; };
template <> struct Api<3> { using P = abi::ProfilerV3; using D = abi::EventDescrV3; using A = abi::StateArgsV3; };
template <> struct Api<4> { using P = abi::ProfilerV4; using D = abi::EventDescrV4; using A = abi::StateArgsV4; };
template <> struct Api<5> { using P = abi::ProfilerV5; using D = abi::EventDescrV5; using A = abi::StateArgsV5; };
template <> struct Api<6> { using P = abi::ProfilerV6; using D = abi::EventDescrV6; using A = abi::StateArgsV6; };

template <int V>
const typename Api<V>::P& table() {
  return *static_cast<const typename Api<V>::P*>(plugin().table);
}

template <int V>
void init(ncclComm* comm) {
  const Clique& c = *comm->clique;
  void* ctx = nullptr;
  int mask = 0;
  abi::Result r;
  if constexpr (V <= 3) r = table<V>().init(&ctx, &mask);
  else if constexpr (V == 4)
    r = table<V>().init(&ctx, &mask, "", c.comm_hash, c.shape.nodes, comm->nranks, comm->rank, logger);
  else r = table<V>().init(&ctx, c.comm_hash, &mask, "", c.shape.nodes, comm->nranks, comm->rank, logger);
  if (r != abi::kSuccess) return;  // NCCL continues without the plugin
  comm->profiler_context = ctx;
  comm->profiler_mask = mask;
}

template <int V>
void* start(void* ctx, typename Api<V>::D* d) {
  void* h = nullptr;
  table<V>().startEvent(ctx, &h, d);
  return h;
}

template <int V>
void stop(void* h) {
  if (h) table<V>().stopEvent(h);
}

// One work's coll (or p2p) descriptor.
template <int V>
void describe(typename Api<V>::D* d, const ncclComm* comm, const Work& w, void* group) {
  d->rank = comm->rank;
  d->parentObj = group;
  const bool p2p = is_p2p(w);
  d->type = p2p ? abi::kProfileP2p : abi::kProfileColl;
  const uint8_t channels = static_cast<uint8_t>(w.channels < 1 ? 1 : w.channels > 255 ? 255 : w.channels);
  if (p2p) {
    if constexpr (V == 1) {
      d->p2p.name = "";
      d->p2p.commHash = comm->clique->comm_hash;
      d->p2p.func = func_enum(w.kind);
      d->p2p.datatype = static_cast<uint8_t>(w.type);
    } else {
      if constexpr (V <= 3) {
        d->p2p.name = "";
        d->p2p.commHash = comm->clique->comm_hash;
      }
      d->p2p.func = kind_name(w.kind);
      d->p2p.datatype = datatype_name(w.type);
    }
    d->p2p.buff = w.kind == Kind::kSend ? const_cast<void*>(w.send) : w.recv;
    d->p2p.count = w.count;
    d->p2p.peer = w.root;
    if constexpr (V >= 4) d->p2p.nChannels = channels;
    if constexpr (V >= 5) d->p2p.parentGroup = group;
    return;
  }
  d->coll.seqNumber = w.seq;
  d->coll.sendBuff = w.send;
  d->coll.recvBuff = w.recv;
  d->coll.count = w.count;
  d->coll.root = w.root;
  d->coll.nWarps = 16;
  if constexpr (V <= 3) {
    d->coll.name = "";
    d->coll.commHash = comm->clique->comm_hash;
    d->coll.nMaxChannels = channels;
  } else {
    d->coll.nChannels = channels;
  }
  if constexpr (V == 1) {
    d->coll.func = func_enum(w.kind);
    d->coll.datatype = static_cast<uint8_t>(w.type);
    d->coll.op = static_cast<uint32_t>(w.op);
    d->coll.algo = algo_enum(w.algo);
    d->coll.proto = proto_enum(w.proto);
  } else {
    d->coll.func = kind_name(w.kind);
    d->coll.datatype = datatype_name(w.type);
    d->coll.algo = nccl_algo(w.algo);
    d->coll.proto = nccl_proto(w.proto);
  }
  if constexpr (V <= 2) d->coll.trafficBytes = w.count * type_size(w.type);
  if constexpr (V >= 5) d->coll.parentGroup = group;
}

constexpr int kTaskMask = abi::kProfileColl | abi::kProfileP2p | abi::kProfileProxyOp | abi::kProfileProxyStep |
                          abi::kProfileKernelCh | abi::kProfileNetPlugin;

template <int V>
BatchEvents launch(ncclComm* comm, const std::vector<Work>& works) {
  using D = typename Api<V>::D;
  BatchEvents ev;
  ev.context = comm->profiler_context;
  ev.mask = comm->profiler_mask;
  ev.rank = comm->rank;
  ev.works.assign(works.size(), nullptr);
  const int mask = comm->profiler_mask;
  if (!(mask & (abi::kProfileGroup | kTaskMask))) return ev;
  D g{};
  g.type = abi::kProfileGroup;
  g.rank = comm->rank;
  void* group = start<V>(ev.context, &g);
  std::vector<void*> api(works.size(), nullptr);
  for (size_t i = 0; i < works.size(); ++i) {
    const Work& w = works[i];
    if constexpr (V >= 5) {
      // The API event NCCL starts at the call (ncclProfilerStartCollApiEvent).
      D a{};
      a.rank = comm->rank;
      if (is_p2p(w)) {
        a.type = abi::kProfileP2pApi;
        a.p2pApi.func = kind_name(w.kind);
        a.p2pApi.count = w.count;
        a.p2pApi.datatype = datatype_name(w.type);
      } else {
        a.type = abi::kProfileCollApi;
        a.collApi.func = kind_name(w.kind);
        a.collApi.count = w.count;
        a.collApi.datatype = datatype_name(w.type);
        a.collApi.root = w.root;
      }
      if (mask & (kTaskMask | abi::kProfileCollApi | abi::kProfileP2pApi)) api[i] = start<V>(ev.context, &a);
    }
    if (!(mask & kTaskMask)) continue;
    D d{};
    describe<V>(&d, comm, w, group);
    if constexpr (V >= 5) d.parentObj = api[i];
    ev.works[i] = start<V>(ev.context, &d);
  }
  // Launched: NCCL stops the task events and the group right after.
  for (size_t i = 0; i < works.size(); ++i) {
    if (is_p2p(works[i])) {
      stop<V>(ev.works[i]);
      ev.works[i] = nullptr;  // no kernel channels for point-to-point here
    } else {
      stop<V>(ev.works[i]);  // its handle stays the kernel channels' parent
    }
    stop<V>(api[i]);
  }
  stop<V>(group);
  return ev;
}

template <int V>
void kernel(const BatchEvents& ev, size_t i, const Work& w, Clock::time_point begin, Clock::time_point end) {
  using D = typename Api<V>::D;
  using A = typename Api<V>::A;
  if constexpr (V >= 3) {
    if (!(ev.mask & abi::kProfileKernelCh)) return;
    for (int ch = 0; ch < (w.channels < 1 ? 1 : w.channels); ++ch) {
      D d{};
      d.type = abi::kProfileKernelCh;
      d.rank = ev.rank;
      d.parentObj = ev.works[i];
      d.kernelCh.channelId = static_cast<uint8_t>(ch);
      if constexpr (V >= 4) d.kernelCh.pTimer = gpu_ns(begin);
      void* h = start<V>(ev.context, &d);
      if (!h) continue;
      if constexpr (V >= 4) {
        A a{};
        a.kernelCh.pTimer = gpu_ns(end);
        table<V>().recordEventState(h, abi::kKernelChStop, &a);
      }
      table<V>().stopEvent(h);
    }
  }
}

}  // namespace

void profiler_attach(ncclComm* comm) {
  if (comm->profiler_attached.load(std::memory_order_acquire)) return;
  if (comm->state.load(std::memory_order_acquire) != ncclComm::kReady) return;
  if (comm->profiler_attached.exchange(true, std::memory_order_acq_rel)) return;
  switch (plugin().version) {
    case 1: init<1>(comm); break;
    case 2: init<2>(comm); break;
    case 3: init<3>(comm); break;
    case 4: init<4>(comm); break;
    case 5: init<5>(comm); break;
    case 6: init<6>(comm); break;
    default: break;
  }
}

void profiler_detach(ncclComm* comm) {
  if (!comm->profiler_attached.load(std::memory_order_acquire) || !comm->profiler_context) return;
  const Plugin& p = plugin();
  void* ctx = comm->profiler_context;
  comm->profiler_context = nullptr;
  comm->profiler_mask = 0;
  switch (p.version) {
    case 1: table<1>().finalize(ctx); break;
    case 2: table<2>().finalize(ctx); break;
    case 3: table<3>().finalize(ctx); break;
    case 4: table<4>().finalize(ctx); break;
    case 5: table<5>().finalize(ctx); break;
    case 6: table<6>().finalize(ctx); break;
    default: break;
  }
}

BatchEvents profiler_launch(ncclComm* comm, const std::vector<Work>& works) {
  profiler_attach(comm);
  if (!comm->profiler_context) {
    BatchEvents none;
    none.works.assign(works.size(), nullptr);
    return none;
  }
  switch (plugin().version) {
    case 1: return launch<1>(comm, works);
    case 2: return launch<2>(comm, works);
    case 3: return launch<3>(comm, works);
    case 4: return launch<4>(comm, works);
    case 5: return launch<5>(comm, works);
    case 6: return launch<6>(comm, works);
    default: break;
  }
  BatchEvents none;
  none.works.assign(works.size(), nullptr);
  return none;
}

void profiler_kernel(const BatchEvents& ev, size_t i, const Work& w, Clock::time_point start,
                     Clock::time_point end) {
  if (!ev.context || i >= ev.works.size() || is_p2p(w)) return;
  switch (plugin().version) {
    case 3: kernel<3>(ev, i, w, start, end); break;
    case 4: kernel<4>(ev, i, w, start, end); break;
    case 5: kernel<5>(ev, i, w, start, end); break;
    case 6: kernel<6>(ev, i, w, start, end); break;
    default: break;
  }
}

}  // namespace ncclsim

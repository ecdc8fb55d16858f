// See profiler_records.h.
//
// Note [Profiler slots]: NCCL hands the plugin a collective's handle back
// as the parent of the collective's kernel channels, which arrive later on
// another thread (NCCL's proxy or profiler thread), possibly after the
// collective's own stopEvent. So a collective's state must outlive its stop,
// and no one knows for sure how many channels will come. Rather than count
// references, collectives take slots of a ring in turn: the n-th collective
// (a fetch_add) takes slot n % kCollSlots, which the (n + kCollSlots)-th
// takes over. Handles are not addresses but these sequence numbers, tagged
// (n << 2 | 1 for a collective, k << 2 | 2 for the k-th kernel channel):
// NCCL only passes them back, and a handle whose slot has moved on to a
// later sequence number is recognized, never followed. A kernel channel
// that starts or stops after its collective's slot was taken over is
// counted as dropped, as is one whose own slot was. Each stopped channel
// widens its collective's span (first start .. last stop, atomics) and adds
// what the span grew by to the row's GPU time, so the row holds the span of
// every channel seen, however many come and in whatever order. A collective
// counts as timed when its first channel stops. Only a slot taken over in
// the nanoseconds between a check and the update after it can still mix
// two collectives' figures: with 4096 collectives in flight between them,
// not a case NCCL's own queues allow.
#include "nccl/profiler_records.h"

#include <atomic>
#include <cctype>
#include <cstring>
#include <limits>

namespace gpuslack {
namespace nccl {
namespace profiler {

struct Context {
  std::atomic<bool> used{false};
  int version = 0;
  uint64_t comm_hash = 0;
  int nnodes = 0, nranks = 0, rank = -1;
};

namespace {

constexpr uint32_t kNoRow = std::numeric_limits<uint32_t>::max();
constexpr uint64_t kClaiming = 1ull << 63;
constexpr uint64_t kReady = 1ull << 62;
constexpr uint64_t kKeyMask = kReady - 1;

struct Row {
  std::atomic<uint64_t> packed{0};  // 0: free; the key | kClaiming, then | kReady
  std::atomic<uint64_t> comm_hash{0};
  std::atomic<uint64_t> calls{0}, channels_sum{0}, bytes{0}, timed{0}, timed_bytes{0}, gpu_ns{0};
};

// Zero-initialized (no file space, nothing at load): a slot's `seq` holds
// its sequence number + 1, published last; 0 is a slot never used.
struct CollSlot {
  std::atomic<uint64_t> seq{0};
  std::atomic<uint32_t> row{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> first_start{0}, last_stop{0}, committed_span{0};
};

struct KernelSlot {
  std::atomic<uint64_t> seq{0};     // the channel's sequence number + 1, published last
  std::atomic<uint64_t> parent{0};  // the collective's sequence number
  std::atomic<uint64_t> start{0}, stop{0};
};

constexpr uintptr_t kCollTag = 1, kKernelTag = 2, kTagMask = 3;

void* handle_of(uint64_t seq, uintptr_t tag) { return reinterpret_cast<void*>((static_cast<uintptr_t>(seq) << 2) | tag); }

// The sequence number a handle of `tag` carries; false for another kind.
bool seq_of(const void* handle, uintptr_t tag, uint64_t* seq) {
  const auto v = reinterpret_cast<uintptr_t>(handle);
  if ((v & kTagMask) != tag) return false;
  *seq = static_cast<uint64_t>(v >> 2);
  return true;
}

Context g_contexts[kMaxContexts];
Row g_rows[kRows];
CollSlot g_colls[kCollSlots];
KernelSlot g_kernels[kKernelSlots];
std::atomic<uint64_t> g_coll_next{0};
std::atomic<uint64_t> g_kernel_next{0};
std::atomic<uint64_t> g_records{0};
std::atomic<uint64_t> g_dropped{0};
std::atomic<int> g_version{0};

constexpr const char* kAlgoNames[] = {"Ring", "Tree", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT",
                                      "other"};
constexpr int kAlgoOther = 7;
constexpr const char* kProtoNames[] = {"LL", "LL128", "Simple", "other"};
constexpr int kProtoOther = 3;

// Equal ignoring case and '_' ("NVLS_TREE" is "NVLSTree").
bool same_name(const char* nccl, const char* ours) {
  if (!nccl) return false;
  while (true) {
    while (*nccl == '_') ++nccl;
    if (!*nccl || !*ours) return !*nccl && !*ours;
    if (std::tolower(static_cast<unsigned char>(*nccl)) != std::tolower(static_cast<unsigned char>(*ours))) return false;
    ++nccl;
    ++ours;
  }
}

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

int bucket_of(uint64_t v) { return v ? 63 - __builtin_clzll(v) : 0; }

// nranks 16 bits, nnodes 16, op 4, bucket 6, algo 4, proto 3; +1 so that no
// key is 0.
uint64_t pack(int nranks, int nnodes, CollectiveOp op, int bucket, int algo, int proto) {
  uint64_t k = static_cast<uint64_t>(nranks & 0xFFFF) | (static_cast<uint64_t>(nnodes & 0xFFFF) << 16) |
               (static_cast<uint64_t>(op) << 32) | (static_cast<uint64_t>(bucket & 0x3F) << 36) |
               (static_cast<uint64_t>(algo & 0xF) << 42) | (static_cast<uint64_t>(proto & 0x7) << 46);
  return k + 1;
}

// The row of (comm_hash, key), claimed if new; kNoRow when the table is full.
uint32_t find_row(uint64_t comm_hash, uint64_t key) {
  const uint32_t start = static_cast<uint32_t>(mix(comm_hash ^ (key * 0x9e3779b97f4a7c15ull)));
  for (uint32_t probe = 0; probe < static_cast<uint32_t>(kRows); ++probe) {
    const uint32_t i = (start + probe) % kRows;
    Row& r = g_rows[i];
    uint64_t v = r.packed.load(std::memory_order_acquire);
    if (v == 0) {
      if (r.packed.compare_exchange_strong(v, key | kClaiming, std::memory_order_acq_rel)) {
        r.comm_hash.store(comm_hash, std::memory_order_relaxed);
        r.packed.store(key | kReady, std::memory_order_release);
        return i;
      }
      // v now holds the winner's value.
    }
    if ((v & kKeyMask) != key) continue;
    // Another thread is claiming this key: it publishes within a few
    // instructions.
    for (int spin = 0; !(v & kReady) && spin < 100000; ++spin) v = r.packed.load(std::memory_order_acquire);
    if (!(v & kReady)) continue;
    if (r.comm_hash.load(std::memory_order_relaxed) == comm_hash) return i;
  }
  return kNoRow;
}

void atomic_min(std::atomic<uint64_t>& a, uint64_t v) {
  uint64_t cur = a.load(std::memory_order_relaxed);
  while (v < cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

void atomic_max(std::atomic<uint64_t>& a, uint64_t v) {
  uint64_t cur = a.load(std::memory_order_relaxed);
  while (v > cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

}  // namespace

int algo_index(const char* nccl_name) {
  for (int i = 0; i < kAlgoOther; ++i)
    if (same_name(nccl_name, kAlgoNames[i])) return i;
  return kAlgoOther;
}

int proto_index(const char* nccl_name) {
  for (int i = 0; i < kProtoOther; ++i)
    if (same_name(nccl_name, kProtoNames[i])) return i;
  return kProtoOther;
}

int algo_index_v1(uint8_t e) {
  // NCCL_ALGO_TREE 0, RING 1, COLLNET_DIRECT 2, COLLNET_CHAIN 3, NVLS 4, NVLS_TREE 5, PAT 6.
  static constexpr int kOf[] = {1, 0, 2, 3, 4, 5, 6};
  return e < 7 ? kOf[e] : kAlgoOther;
}

int proto_index_v1(uint8_t e) { return e < 3 ? e : kProtoOther; }

const char* algo_name(int i) { return i >= 0 && i < kAlgoOther ? kAlgoNames[i] : "other"; }
const char* proto_name(int i) { return i >= 0 && i < kProtoOther ? kProtoNames[i] : "other"; }

bool op_of(const char* f, CollectiveOp* out) {
  struct Name {
    const char* name;
    CollectiveOp op;
  };
  static constexpr Name kNames[] = {
      {"AllReduce", CollectiveOp::kAllReduce}, {"ReduceScatter", CollectiveOp::kReduceScatter},
      {"AllGather", CollectiveOp::kAllGather}, {"Broadcast", CollectiveOp::kBroadcast},
      {"Reduce", CollectiveOp::kReduce},       {"AlltoAll", CollectiveOp::kAlltoAll},
      {"Gather", CollectiveOp::kGather},       {"Scatter", CollectiveOp::kScatter},
      {"Send", CollectiveOp::kSend},           {"Recv", CollectiveOp::kRecv},
  };
  for (const Name& n : kNames)
    if (same_name(f, n.name)) {
      *out = n.op;
      return true;
    }
  return false;
}

bool op_of_v1(uint8_t f, CollectiveOp* out) {
  static constexpr CollectiveOp kOf[] = {CollectiveOp::kBroadcast, CollectiveOp::kReduce, CollectiveOp::kAllGather,
                                         CollectiveOp::kReduceScatter, CollectiveOp::kAllReduce};
  if (f < 5) {
    *out = kOf[f];
    return true;
  }
  if (f == 6 || f == 7) {
    *out = f == 6 ? CollectiveOp::kSend : CollectiveOp::kRecv;
    return true;
  }
  return false;  // SendRecv, unknown
}

size_t datatype_size_of(const char* d) {
  struct Name {
    const char* name;
    size_t size;
  };
  static constexpr Name kNames[] = {
      {"ncclInt8", 1},    {"ncclUint8", 1},   {"ncclInt32", 4},       {"ncclUint32", 4},
      {"ncclInt64", 8},   {"ncclUint64", 8},  {"ncclFloat16", 2},     {"ncclFloat32", 4},
      {"ncclFloat64", 8}, {"ncclBfloat16", 2}, {"ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", 1},
  };
  if (!d) return 0;
  for (const Name& n : kNames)
    if (std::strcmp(d, n.name) == 0) return n.size;
  return 0;
}

Context* open_context(int version, uint64_t comm_hash, int nnodes, int nranks, int rank) {
  for (Context& c : g_contexts) {
    bool expected = false;
    if (c.used.load(std::memory_order_relaxed) ||
        !c.used.compare_exchange_strong(expected, true, std::memory_order_acquire))
      continue;
    c.version = version;
    c.comm_hash = comm_hash;
    c.nnodes = nnodes > 0 ? nnodes : 0;
    c.nranks = nranks > 0 ? nranks : 0;
    c.rank = rank;
    return &c;
  }
  g_dropped.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

void close_context(Context* c) {
  if (c) c->used.store(false, std::memory_order_release);
}

void* start_coll(Context* c, const CollStart& s) {
  if (!c) return nullptr;
  const uint64_t hash = s.comm_hash ? s.comm_hash : c->comm_hash;
  const uint64_t bytes = collective_bytes(s.op, s.count, s.elem_size, c->nranks > 0 ? c->nranks : 1);
  const uint32_t row = find_row(hash, pack(c->nranks, c->nnodes, s.op, bucket_of(bytes), s.algo, s.proto));
  if (row == kNoRow) {
    g_dropped.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  Row& r = g_rows[row];
  r.calls.fetch_add(1, std::memory_order_relaxed);
  r.channels_sum.fetch_add(static_cast<uint64_t>(s.channels > 0 ? s.channels : 0), std::memory_order_relaxed);
  r.bytes.fetch_add(bytes, std::memory_order_relaxed);
  g_records.fetch_add(1, std::memory_order_relaxed);
  // Note [Profiler slots].
  const uint64_t n = g_coll_next.fetch_add(1, std::memory_order_relaxed);
  CollSlot& slot = g_colls[n % kCollSlots];
  slot.row.store(row, std::memory_order_relaxed);
  slot.bytes.store(bytes, std::memory_order_relaxed);
  slot.first_start.store(std::numeric_limits<uint64_t>::max(), std::memory_order_relaxed);
  slot.last_stop.store(0, std::memory_order_relaxed);
  slot.committed_span.store(0, std::memory_order_relaxed);
  slot.seq.store(n + 1, std::memory_order_release);
  return handle_of(n, kCollTag);
}

void* start_kernel_channel(void* parent, uint64_t start_ns) {
  uint64_t n = 0;
  if (start_ns == 0 || !seq_of(parent, kCollTag, &n)) return nullptr;
  if (g_colls[n % kCollSlots].seq.load(std::memory_order_acquire) != n + 1) {
    g_dropped.fetch_add(1, std::memory_order_relaxed);  // its collective's slot was taken over
    return nullptr;
  }
  const uint64_t k = g_kernel_next.fetch_add(1, std::memory_order_relaxed);
  KernelSlot& ks = g_kernels[k % kKernelSlots];
  ks.parent.store(n, std::memory_order_relaxed);
  ks.start.store(start_ns, std::memory_order_relaxed);
  ks.stop.store(0, std::memory_order_relaxed);
  ks.seq.store(k + 1, std::memory_order_release);
  return handle_of(k, kKernelTag);
}

void kernel_channel_stop(void* handle, uint64_t stop_ns) {
  uint64_t k = 0;
  if (!seq_of(handle, kKernelTag, &k)) return;
  KernelSlot& ks = g_kernels[k % kKernelSlots];
  if (ks.seq.load(std::memory_order_acquire) == k + 1) ks.stop.store(stop_ns, std::memory_order_relaxed);
}

void end_event(void* handle) {
  uint64_t k = 0;
  if (!seq_of(handle, kKernelTag, &k)) return;  // a collective: its slot lives on (Note [Profiler slots])
  KernelSlot& ks = g_kernels[k % kKernelSlots];
  if (ks.seq.load(std::memory_order_acquire) != k + 1) {
    g_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const uint64_t start = ks.start.load(std::memory_order_relaxed), stop = ks.stop.load(std::memory_order_relaxed);
  const uint64_t n = ks.parent.load(std::memory_order_relaxed);
  if (stop <= start) return;  // no KernelChStop, or a clock that went back: untimed
  CollSlot& c = g_colls[n % kCollSlots];
  if (c.seq.load(std::memory_order_acquire) != n + 1) {
    g_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  atomic_min(c.first_start, start);
  atomic_max(c.last_stop, stop);
  const uint64_t first = c.first_start.load(std::memory_order_relaxed),
                 last = c.last_stop.load(std::memory_order_relaxed);
  if (last <= first) return;
  const uint64_t span = last - first;
  const uint32_t row = c.row.load(std::memory_order_relaxed);
  if (row >= static_cast<uint32_t>(kRows)) return;
  Row& r = g_rows[row];
  uint64_t committed = c.committed_span.load(std::memory_order_relaxed);
  while (span > committed) {
    if (c.committed_span.compare_exchange_weak(committed, span, std::memory_order_relaxed)) {
      r.gpu_ns.fetch_add(span - committed, std::memory_order_relaxed);
      if (committed == 0) {
        r.timed.fetch_add(1, std::memory_order_relaxed);
        r.timed_bytes.fetch_add(c.bytes.load(std::memory_order_relaxed), std::memory_order_relaxed);
      }
      break;
    }
  }
}

void note_loaded(int version) {
  int cur = g_version.load(std::memory_order_relaxed);
  while (version > cur && !g_version.compare_exchange_weak(cur, version, std::memory_order_relaxed)) {
  }
}

int loaded_version() { return g_version.load(std::memory_order_relaxed); }

Snapshot snapshot() {
  Snapshot s;
  s.version = loaded_version();
  s.records = g_records.load(std::memory_order_relaxed);
  s.dropped = g_dropped.load(std::memory_order_relaxed);
  for (const Row& r : g_rows) {
    const uint64_t v = r.packed.load(std::memory_order_acquire);
    if (!(v & kReady)) continue;
    const uint64_t k = (v & kKeyMask) - 1;
    Record rec;
    rec.comm_hash = r.comm_hash.load(std::memory_order_relaxed);
    rec.nranks = static_cast<int>(k & 0xFFFF);
    rec.nnodes = static_cast<int>((k >> 16) & 0xFFFF);
    rec.op = static_cast<CollectiveOp>((k >> 32) & 0xF);
    rec.bucket = static_cast<int>((k >> 36) & 0x3F);
    rec.algo = static_cast<int>((k >> 42) & 0xF);
    rec.proto = static_cast<int>((k >> 46) & 0x7);
    rec.calls = r.calls.load(std::memory_order_relaxed);
    rec.channels_sum = r.channels_sum.load(std::memory_order_relaxed);
    rec.bytes = r.bytes.load(std::memory_order_relaxed);
    rec.timed = r.timed.load(std::memory_order_relaxed);
    rec.timed_bytes = r.timed_bytes.load(std::memory_order_relaxed);
    rec.gpu_ns = r.gpu_ns.load(std::memory_order_relaxed);
    s.rows.push_back(rec);
  }
  return s;
}

void reset() {
  for (Row& r : g_rows) {
    r.packed.store(0, std::memory_order_relaxed);
    r.comm_hash.store(0, std::memory_order_relaxed);
    r.calls.store(0, std::memory_order_relaxed);
    r.channels_sum.store(0, std::memory_order_relaxed);
    r.bytes.store(0, std::memory_order_relaxed);
    r.timed.store(0, std::memory_order_relaxed);
    r.timed_bytes.store(0, std::memory_order_relaxed);
    r.gpu_ns.store(0, std::memory_order_relaxed);
  }
  for (Context& c : g_contexts) c.used.store(false, std::memory_order_relaxed);
  for (CollSlot& c : g_colls) c.seq.store(0, std::memory_order_relaxed);
  for (KernelSlot& k : g_kernels) k.seq.store(0, std::memory_order_relaxed);
  g_coll_next.store(0, std::memory_order_relaxed);
  g_kernel_next.store(0, std::memory_order_relaxed);
  g_records.store(0, std::memory_order_relaxed);
  g_dropped.store(0, std::memory_order_relaxed);
  g_version.store(0, std::memory_order_relaxed);
}

}  // namespace profiler
}  // namespace nccl
}  // namespace gpuslack

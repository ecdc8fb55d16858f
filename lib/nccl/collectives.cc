// See collectives.h. One shard per live thread that makes a collective,
// taken on its first one and recycled when it exits (ledger/shard_pool.h,
// as ledger.cc's shards: Note [Exited threads] in ledger/ledger.h). A shard
// holds:
//   - the cell table: open-addressed by key, keys and hot counters written
//     only by the owner thread (relaxed stores), read by reports;
//   - the GPU figures of each cell and the pending ring, guarded by `mu`
//     (owner's timed calls and reports only);
//   - group state and per-op call counters, touched by the owner only.
// When its thread exits, a shard's cells are merged into the exited
// threads' rows (by key), its timed calls still in flight move to a bounded
// ring of their own (resolved by later reports; past kOrphans they count
// as dropped), and the shard goes on the free list (retire). A fork leaves
// the parent's shards behind unread (collectives_after_fork_child).
#include "nccl/collectives.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <vector>

#include "cuda/runtime_api.h"
#include "ledger/counter.h"
#include "ledger/shard_pool.h"
#include "nccl/communicators.h"
#include "sync/event_pool.h"

namespace gpuslack {
namespace nccl {
namespace {

using ledger::add;
using ledger::Counter;
using ledger::Histogram;
using ledger::PooledShard;
using ledger::read;
using ledger::ShardPool;

constexpr int kCells = 256;
constexpr int kPending = 32;
constexpr int kPerPending = 16;  // members of one group on one stream
constexpr int kMembers = 64;     // members of one group

struct Cell {
  std::atomic<uint32_t> key{0};  // key + 1; 0: empty
  Counter count{0}, bytes{0}, host_ticks{0}, captured{0};
  // Guarded by Shard::mu: as in CollectiveFigures.
  uint64_t timed = 0, timed_bytes = 0, timed_local_bytes = 0;
  double gpu_s = 0;
  Histogram gpu_ns;
  GpuNsSums gpu_ns_sums{};
  double bw_s = 0;
};

struct Pending {
  bool used = false;
  int device = -1;
  cudaEvent_t start = nullptr, end = nullptr;
  int n = 0;
  uint16_t cell[kPerPending];
  uint64_t bytes[kPerPending];
  bool local[kPerPending];
};

struct Member {
  uint16_t cell;
  uint64_t bytes;
  cudaStream_t stream;
  int device;
  bool local;
};

struct Shard : PooledShard<Shard> {
  Cell cells[kCells];
  Counter untracked{0};
  // Owner only.
  uint32_t op_calls[kCollectiveOpCount] = {};
  uint32_t groups = 0;
  int depth = 0;
  int n_members = 0;
  bool members_overflow = false;
  Member members[kMembers];
  // Guarded by mu.
  std::mutex mu;
  Pending pending[kPending];
  uint64_t dropped = 0;
};

std::atomic<int> g_every{8};

// A timed call whose thread exited before the GPU finished it.
struct Orphan {
  int device = -1;
  cudaEvent_t start = nullptr, end = nullptr;
  int n = 0;
  uint32_t key[kPerPending];
  uint64_t bytes[kPerPending];
  bool local[kPerPending];
};
constexpr int kOrphans = 64;

// What exited threads left: their cells merged by key, their timed calls in
// flight, and their counts of untracked and dropped calls.
struct Exited {
  std::map<uint32_t, CollectiveFigures> rows;  // by key
  std::vector<Orphan> orphans;                 // at most kOrphans
  uint64_t untracked = 0;
  uint64_t dropped = 0;
};

// Guarded by the pool's fold lock; made on the first exit.
Exited* g_exited = nullptr;

void retire(Shard& s);

// The fold lock is taken before a shard's mu, never after.
ShardPool<Shard> g_pool(nullptr, retire);

inline Shard* my_shard() { return g_pool.mine(); }

constexpr uint32_t pack(CollectiveOp op, int datatype, int bucket, int nranks) {
  return static_cast<uint32_t>(op) | (static_cast<uint32_t>(datatype & 0xF) << 4) |
         (static_cast<uint32_t>(bucket & 0x3F) << 8) | (static_cast<uint32_t>(std::min(nranks, 0xFFFF)) << 14);
}

// The owner's cell for `key`, made if new; -1 when the table is full.
int cell_of(Shard* s, uint32_t key) {
  uint32_t stored = key + 1;
  size_t home = (stored * 0x9E3779B1u) >> 24;  // 8 bits: kCells == 256
  for (int i = 0; i < kCells; ++i) {
    Cell& c = s->cells[(home + i) % kCells];
    uint32_t k = c.key.load(std::memory_order_relaxed);
    if (k == stored) return static_cast<int>((home + i) % kCells);
    if (k == 0) {
      c.key.store(stored, std::memory_order_release);
      return static_cast<int>((home + i) % kCells);
    }
  }
  return -1;
}

// Our CUDA calls must not leave an error where the application would read
// it: with none pending before, whatever ours left is cleared.
struct LastErrorGuard {
  cudaError_t before = cuda::peek_at_last_error();
  ~LastErrorGuard() {
    if (before == cudaSuccess && cuda::peek_at_last_error() != cudaSuccess) cuda::get_last_error();
  }
};

// Timing events, from the event pool (sync/event_pool.h): the pending rings
// keep each one's handle and device.
cudaEvent_t acquire_event(int device) { return sync::take_event(device, sync::EventKind::kTiming).event; }
void release_event(int device, cudaEvent_t event) { sync::give_event({event, device, sync::EventKind::kTiming}); }

cudaEvent_t record_on(int device, cudaStream_t stream) {
  cudaEvent_t e = acquire_event(device);
  if (e && cuda::event_record(e, stream) != cudaSuccess) {
    release_event(device, e);
    e = nullptr;
  }
  return e;
}

// Whether the pair timing a call has finished (never waits): then `*ms` is
// its GPU time, or -1 when it cannot be known (an aborted communicator).
bool pair_finished(cudaEvent_t start, cudaEvent_t end, float* ms) {
  cudaError_t q = cuda::event_query(end);
  if (q == cudaErrorNotReady) return false;
  if (q != cudaSuccess || cuda::event_elapsed_ms(ms, start, end) != cudaSuccess || *ms < 0) *ms = -1;
  return true;
}

// The seconds of member `i` of a pair that took `ms`: shared by bytes.
double member_seconds(float ms, int n, const uint64_t* bytes, int i) {
  uint64_t total = 0;
  for (int k = 0; k < n; ++k) total += bytes[k];
  double share = total > 0 ? static_cast<double>(bytes[i]) / static_cast<double>(total) : 1.0 / n;
  return ms * 1e-3 * share;
}

// Credits a finished pair of `ms` around its n members (Note [Charged
// time and bandwidth time] in collectives.h): each member its share of the
// time by bytes, and each row among them the whole time, once. `figures(i)`
// is member i's row (a live shard's Cell or an exited thread's
// CollectiveFigures) and `row[i]` names it, so that members of one row are
// seen as such.
template <class RowId, class FiguresOf>
void credit_pair(float ms, int n, const RowId* row, const uint64_t* bytes, const bool* local, FiguresOf figures) {
  for (int i = 0; i < n; ++i) {
    auto& f = figures(i);
    uint64_t ns = static_cast<uint64_t>(member_seconds(ms, n, bytes, i) * 1e9);
    ++f.timed;
    f.timed_bytes += bytes[i];
    if (local[i]) f.timed_local_bytes += bytes[i];
    f.gpu_s += static_cast<double>(ns) * 1e-9;
    f.gpu_ns.add(ns);
    f.gpu_ns_sums[Histogram::bucket_of(ns)] += static_cast<double>(ns);
    bool first_of_row = true;
    for (int k = 0; k < i; ++k) first_of_row = first_of_row && row[k] != row[i];
    if (first_of_row) f.bw_s += ms * 1e-3;
  }
}

// Adds the timed figures of `from` (a Cell or CollectiveFigures) to `to`.
template <class Figures>
void add_timed(CollectiveFigures& to, const Figures& from) {
  to.timed += from.timed;
  to.timed_bytes += from.timed_bytes;
  to.timed_local_bytes += from.timed_local_bytes;
  to.gpu_s += from.gpu_s;
  to.gpu_ns.merge(from.gpu_ns);
  for (int b = 0; b < Histogram::kBuckets; ++b) to.gpu_ns_sums[b] += from.gpu_ns_sums[b];
  to.bw_s += from.bw_s;
}

// Resolves what has finished; never waits. Caller holds s->mu.
void poll_locked(Shard* s) {
  for (Pending& p : s->pending) {
    if (!p.used) continue;
    float ms = 0;
    if (!pair_finished(p.start, p.end, &ms)) continue;
    if (ms < 0)
      ++s->dropped;
    else
      credit_pair(ms, p.n, p.cell, p.bytes, p.local, [&](int i) -> Cell& { return s->cells[p.cell[i]]; });
    release_event(p.device, p.start);
    release_event(p.device, p.end);
    p = Pending{};
  }
}

// Queues a recorded pair; false when the ring is full.
bool push_pending(Shard* s, int device, cudaEvent_t start, cudaEvent_t end, int n, const uint16_t* cells,
                  const uint64_t* bytes, const bool* local) {
  std::lock_guard<std::mutex> lock(s->mu);
  poll_locked(s);
  for (Pending& p : s->pending) {
    if (p.used) continue;
    p.used = true;
    p.device = device;
    p.start = start;
    p.end = end;
    p.n = n;
    std::copy(cells, cells + n, p.cell);
    std::copy(bytes, bytes + n, p.bytes);
    std::copy(local, local + n, p.local);
    return true;
  }
  return false;
}

bool is_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  if (stream == nullptr || stream == cudaStreamLegacy) {
    // The legacy stream answers an error while another stream captures.
    LastErrorGuard guard;
    if (cuda::stream_is_capturing(stream, &st) != cudaSuccess) return true;
    return st != cudaStreamCaptureStatusNone;
  }
  return cuda::stream_is_capturing(stream, &st) == cudaSuccess && st != cudaStreamCaptureStatusNone;
}

}  // namespace

void set_collective_timing_every(int n) { g_every.store(n < 1 ? 1 : n, std::memory_order_relaxed); }

CollectiveTrack collective_begin(const Collective& c) {
  CollectiveTrack t;
  Shard* s = my_shard();
  if (__builtin_expect(s == nullptr, 0)) return t;
  t.active = true;
  CommInfo ci = comm_info(c.comm);
  t.bytes = collective_bytes(c.op, c.count, datatype_size(c.datatype), ci.nranks);
  t.key = pack(c.op, c.datatype, Histogram::bucket_of(t.bytes), ci.nranks);
  t.stream = c.stream;
  t.device = ci.device;
  t.captured = is_capturing(c.stream);
  t.in_group = s->depth > 0;
  t.local = c.peer >= 0 && c.peer == ci.rank;
  if (t.in_group || t.captured) return t;
  uint32_t n = s->op_calls[static_cast<int>(c.op)]++;
  if (n % static_cast<uint32_t>(g_every.load(std::memory_order_relaxed)) != 0) return t;
  LastErrorGuard guard;
  t.start = record_on(t.device, c.stream);
  return t;
}

void collective_end(CollectiveTrack& t, bool issued, uint64_t ticks) {
  if (!t.active) return;
  Shard* s = g_pool.mine_if_taken();
  if (!issued) {
    release_event(t.device, t.start);
    return;
  }
  int cell = cell_of(s, t.key);
  if (cell < 0) {
    add(s->untracked, 1);
    release_event(t.device, t.start);
    return;
  }
  Cell& c = s->cells[cell];
  add(c.count, 1);
  add(c.bytes, t.bytes);
  add(c.host_ticks, ticks);
  if (t.captured) add(c.captured, 1);
  if (t.in_group) {
    if (t.captured) return;
    if (s->n_members < kMembers)
      s->members[s->n_members++] = {static_cast<uint16_t>(cell), t.bytes, t.stream, t.device, t.local};
    else
      s->members_overflow = true;
    return;
  }
  if (!t.start) return;
  LastErrorGuard guard;
  cudaEvent_t end = record_on(t.device, t.stream);
  uint16_t cells[1] = {static_cast<uint16_t>(cell)};
  uint64_t bytes[1] = {t.bytes};
  bool local[1] = {t.local};
  if (!end || !push_pending(s, t.device, t.start, end, 1, cells, bytes, local)) {
    release_event(t.device, t.start);
    release_event(t.device, end);
  }
}

void group_started(bool ok) {
  Shard* s = my_shard();
  if (s && ok) ++s->depth;
}

GroupTrack group_end_begin() {
  GroupTrack g;
  Shard* s = my_shard();
  if (!s || s->depth != 1) return g;
  g.outermost = true;
  if (s->n_members == 0 || s->members_overflow) return g;
  if (s->groups++ % static_cast<uint32_t>(g_every.load(std::memory_order_relaxed)) != 0) return g;
  for (int i = 0; i < s->n_members; ++i) {
    const Member& m = s->members[i];
    bool seen = false;
    for (int k = 0; k < g.n_streams; ++k) seen = seen || g.streams[k] == m.stream;
    if (seen) continue;
    if (g.n_streams == 8) return g;  // too many streams: untimed
    g.streams[g.n_streams] = m.stream;
    g.devices[g.n_streams++] = m.device;
  }
  LastErrorGuard guard;
  for (int k = 0; k < g.n_streams; ++k) g.starts[k] = record_on(g.devices[k], g.streams[k]);
  g.timed = true;
  return g;
}

void group_end_finish(GroupTrack& g, bool issued) {
  Shard* s = g_pool.mine_if_taken();
  if (!s) return;
  if (s->depth > 0) --s->depth;
  if (!g.outermost) return;
  if (g.timed) {
    LastErrorGuard guard;
    for (int k = 0; k < g.n_streams; ++k) {
      uint16_t cells[kPerPending];
      uint64_t bytes[kPerPending];
      bool local[kPerPending];
      int n = 0;
      bool fits = true;
      for (int i = 0; i < s->n_members; ++i) {
        if (s->members[i].stream != g.streams[k]) continue;
        if (n == kPerPending) {
          fits = false;
          break;
        }
        cells[n] = s->members[i].cell;
        local[n] = s->members[i].local;
        bytes[n++] = s->members[i].bytes;
      }
      cudaEvent_t end = issued && fits && g.starts[k] ? record_on(g.devices[k], g.streams[k]) : nullptr;
      if (!end || !push_pending(s, g.devices[k], g.starts[k], end, n, cells, bytes, local)) {
        release_event(g.devices[k], g.starts[k]);
        release_event(g.devices[k], end);
      }
    }
  }
  s->n_members = 0;
  s->members_overflow = false;
}

namespace {

CollectiveFigures& row_of(std::map<uint32_t, CollectiveFigures>& rows, uint32_t key) {
  CollectiveFigures& f = rows[key];
  f.op = static_cast<CollectiveOp>(key & 0xF);
  f.datatype = static_cast<int>((key >> 4) & 0xF);
  f.bucket = static_cast<int>((key >> 8) & 0x3F);
  f.nranks = static_cast<int>(key >> 14);
  return f;
}

// Adds a shard's cells to `rows`. Caller holds s->mu.
void merge_cells_locked(const Shard& s, std::map<uint32_t, CollectiveFigures>& rows) {
  for (const Cell& c : s.cells) {
    uint32_t k = c.key.load(std::memory_order_acquire);
    if (k == 0 || read(c.count) == 0) continue;
    CollectiveFigures& f = row_of(rows, k - 1);
    f.count += read(c.count);
    f.bytes += read(c.bytes);
    f.host_ticks += read(c.host_ticks);
    f.captured += read(c.captured);
    add_timed(f, c);
  }
}

// Resolves exited threads' timed calls that have finished. Caller holds the fold lock.
void poll_orphans_locked(Exited& e) {
  for (size_t i = 0; i < e.orphans.size();) {
    Orphan& o = e.orphans[i];
    float ms = 0;
    if (!pair_finished(o.start, o.end, &ms)) {
      ++i;
      continue;
    }
    if (ms < 0)
      ++e.dropped;
    else
      credit_pair(ms, o.n, o.key, o.bytes, o.local,
                  [&](int m) -> CollectiveFigures& { return row_of(e.rows, o.key[m]); });
    release_event(o.device, o.start);
    release_event(o.device, o.end);
    e.orphans.erase(e.orphans.begin() + static_cast<long>(i));
  }
}

// Empties a shard for its next thread. Caller holds s->mu; its owner is gone.
void zero_locked(Shard& s) {
  for (Cell& c : s.cells) {
    c.key.store(0, std::memory_order_relaxed);
    c.count.store(0, std::memory_order_relaxed);
    c.bytes.store(0, std::memory_order_relaxed);
    c.host_ticks.store(0, std::memory_order_relaxed);
    c.captured.store(0, std::memory_order_relaxed);
    c.timed = c.timed_bytes = c.timed_local_bytes = 0;
    c.gpu_s = c.bw_s = 0;
    c.gpu_ns = Histogram{};
    c.gpu_ns_sums = GpuNsSums{};
  }
  for (Pending& p : s.pending) p = Pending{};
  s.untracked.store(0, std::memory_order_relaxed);
  s.dropped = 0;
  std::fill(std::begin(s.op_calls), std::end(s.op_calls), 0u);
  s.groups = 0;
  s.depth = s.n_members = 0;
  s.members_overflow = false;
}

// A thread's exit, under the fold lock: its cells, counts and timed calls
// in flight move to g_exited, and the shard is emptied.
void retire(Shard& shard) {
  Shard* s = &shard;
  if (!g_exited) g_exited = new Exited();  // reachable through g_exited
  Exited& e = *g_exited;
  std::lock_guard<std::mutex> lock(s->mu);
  // CUDA calls at a thread's exit only when it has timed calls in flight.
  bool in_flight = std::any_of(std::begin(s->pending), std::end(s->pending), [](const Pending& p) { return p.used; });
  std::optional<LastErrorGuard> guard;
  if (in_flight) {
    guard.emplace();
    poll_locked(s);
  }
  merge_cells_locked(*s, e.rows);
  e.untracked += read(s->untracked);
  e.dropped += s->dropped;
  for (Pending& p : s->pending) {
    if (!p.used) continue;
    if (e.orphans.size() >= static_cast<size_t>(kOrphans)) poll_orphans_locked(e);
    if (e.orphans.size() >= static_cast<size_t>(kOrphans)) {
      ++e.dropped;  // its time is not waited for
      release_event(p.device, p.start);
      release_event(p.device, p.end);
      continue;
    }
    Orphan o;
    o.device = p.device;
    o.start = p.start;
    o.end = p.end;
    o.n = p.n;
    for (int i = 0; i < p.n; ++i) {
      o.key[i] = s->cells[p.cell[i]].key.load(std::memory_order_relaxed) - 1;
      o.bytes[i] = p.bytes[i];
      o.local[i] = p.local[i];
    }
    e.orphans.push_back(o);
  }
  zero_locked(*s);
}

}  // namespace

CollectiveSnapshot collectives_snapshot() {
  std::map<uint32_t, CollectiveFigures> merged;
  CollectiveSnapshot out;
  LastErrorGuard guard;
  std::lock_guard<std::mutex> fold(g_pool.fold_mutex());
  g_pool.for_each_live([&](Shard& s) {
    std::lock_guard<std::mutex> lock(s.mu);
    poll_locked(&s);
    for (const Pending& p : s.pending) out.pending += p.used ? p.n : 0;
    out.dropped += s.dropped;
    out.untracked += read(s.untracked);
    merge_cells_locked(s, merged);
  });
  if (g_exited) {
    Exited& e = *g_exited;
    poll_orphans_locked(e);
    for (const Orphan& o : e.orphans) out.pending += o.n;
    out.dropped += e.dropped;
    out.untracked += e.untracked;
    for (const auto& [k, f] : e.rows) {
      CollectiveFigures& m = row_of(merged, k);
      m.count += f.count;
      m.bytes += f.bytes;
      m.host_ticks += f.host_ticks;
      m.captured += f.captured;
      add_timed(m, f);
    }
  }
  for (auto& [k, f] : merged) out.rows.push_back(f);
  return out;
}

void reset_collectives() {
  std::lock_guard<std::mutex> fold(g_pool.fold_mutex());
  g_pool.for_each_live([](Shard& s) {
    std::lock_guard<std::mutex> lock(s.mu);
    zero_locked(s);
  });
  delete g_exited;
  g_exited = nullptr;
  reset_comms();
}

void collectives_after_fork_child() {
  // Single-threaded here; see ledger::after_fork_child. The parent's shards,
  // exited rows and events stay behind, never read again.
  g_pool.after_fork_child();
  if (g_exited) {
    // Kept reachable for leak checkers, never read.
    [[maybe_unused]] static Exited* volatile left_behind[16];  // volatile: the stores stay
    static int n_left_behind = 0;
    if (n_left_behind < 16) left_behind[n_left_behind++] = g_exited;
  }
  g_exited = nullptr;
  reset_comms();
}

size_t collective_shard_count() { return g_pool.count(); }

namespace testing {

void while_holding_collective_locks(void (*during)(void*), void* arg) {
  struct Hold {
    Shard* s;
    void (*during)(void*);
    void* arg;
  } hold{my_shard(), during, arg};
  std::lock_guard<std::mutex> fold(g_pool.fold_mutex());
  std::lock_guard<std::mutex> free_list(g_pool.free_mutex());
  sync::testing::while_holding_event_pool_lock(
      [](void* p) {
        Hold& h = *static_cast<Hold*>(p);
        if (h.s) h.s->mu.lock();
        h.during(h.arg);
        if (h.s) h.s->mu.unlock();
      },
      &hold);
}

}  // namespace testing

}  // namespace nccl
}  // namespace gpuslack

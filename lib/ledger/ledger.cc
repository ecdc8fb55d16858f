// The ledger's shards: one per live thread that makes a hooked call.
//
// A shard is taken on a thread's first call: from the free list, or made
// and pushed on a lock-free list of every shard (which a report walks while
// threads run). Every counter has one writer (its thread): it is updated
// with a relaxed load and store, which on x86-64 are plain moves, and read
// at report time with relaxed loads.
//
// A shard is live while its `generation` is the ledger's: set, after its tid
// and name, with a release store when its thread takes it; 0 once its thread
// has exited (under the fold lock, figures moved to the exited threads'
// and counters zeroed first); and a fork (Note [Fork] in session/session.cc)
// makes every shard of the parent stale at once by moving the ledger to a
// new generation. Reports hold the fold lock, so no shard leaves while
// they read, and read only live ones.
//
// Thread exit: a pthread key whose destructor gets the shard (glibc runs it
// after the thread's C++ thread_local destructors, which may still make
// hooked calls). A call made after it takes a shard again and sets the key
// again; glibc then runs the destructor again (up to
// PTHREAD_DESTRUCTOR_ITERATIONS times).
#include "ledger/ledger.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>

#include "ledger/exited_threads.h"

namespace gpuslack {
namespace ledger {
namespace {

using Counter = std::atomic<uint64_t>;

inline void add(Counter& c, uint64_t v) { c.store(c.load(std::memory_order_relaxed) + v, std::memory_order_relaxed); }
inline void raise_to(Counter& c, uint64_t v) {
  if (v > c.load(std::memory_order_relaxed)) c.store(v, std::memory_order_relaxed);
}
inline uint64_t read(const Counter& c) { return c.load(std::memory_order_relaxed); }

struct CallCell {
  Counter count{0}, ticks{0}, max_ticks{0}, bytes{0};
  Counter histogram[Histogram::kBuckets] = {};
};

struct CopyCell {
  Counter count{0}, bytes{0}, ticks{0};
};

struct SiteKey {
  uint16_t call;
  uint8_t n;
  void* frames[kMaxFrames];

  bool operator==(const SiteKey& o) const {
    return call == o.call && n == o.n && std::equal(frames, frames + n, o.frames);
  }
};

struct SiteKeyHash {
  size_t operator()(const SiteKey& k) const {
    uint64_t h = k.call * 0x9E3779B97F4A7C15ull ^ k.n;
    for (int i = 0; i < k.n; ++i) h = (h ^ reinterpret_cast<uintptr_t>(k.frames[i])) * 0x100000001B3ull;
    return static_cast<size_t>(h);
  }
};

struct SiteFigures {
  uint64_t count = 0;
  uint64_t ticks = 0;
  uint64_t max_ticks = 0;
};

struct PageableFigures {
  uint64_t samples = 0;
  uint64_t copies = 0;
  uint64_t bytes = 0;
};

struct Shard {
  Shard* next = nullptr;       // every shard made: g_shards
  Shard* next_free = nullptr;  // guarded by g_free_mu
  // The ledger's generation while a thread owns the shard; 0 when free.
  std::atomic<uint32_t> generation{0};
  // Written by the taking thread before `generation` (release); constant
  // while the shard is live.
  int tid = 0;
  char name[16] = {};
  Counter category_ticks[kCategoryCount] = {};
  CallCell calls[kMaxCalls];
  CopyCell copies[kCopyKindCount][kHostMemoryCount];
  // The slow path only: calls that blocked past the call-site threshold.
  // (std::unordered_map, not absl::flat_hash_map: abseil's hash pulls in
  // <iostream> through absl::Cord, whose static initializer would run at
  // load time: see Note [Lazy and silent] in session/session.h.)
  // A plain pthread mutex: taken only on that slow path and by reports.
  std::mutex sites_mu;
  std::unordered_map<SiteKey, SiteFigures, SiteKeyHash> sites;  // guarded by sites_mu
  std::unordered_map<SiteKey, PageableFigures, SiteKeyHash> pageable_sites;  // guarded by sites_mu
};

std::atomic<Shard*> g_shards{nullptr};
std::atomic<size_t> g_shard_count{0};
std::atomic<const ApiCall*> g_calls[kMaxCalls];
std::atomic<uint32_t> g_generation{1};

// The free list; also taken by a thread's first call and at its exit.
std::mutex g_free_mu;
Shard* g_free = nullptr;  // guarded by g_free_mu

// Guards g_exited and the moment a shard leaves (its figures move to
// g_exited); reports hold it while they read. Taken before a shard's
// sites_mu, never after.
std::mutex g_fold_mu;
ExitedThreads* g_exited = nullptr;  // guarded by g_fold_mu; made on first exit

pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
pthread_key_t g_key;
std::atomic<bool> g_key_made{false};  // set once, under g_key_once

thread_local Shard* t_shard = nullptr;

void on_thread_exit(void* shard);

void make_key() { g_key_made.store(pthread_key_create(&g_key, on_thread_exit) == 0, std::memory_order_release); }

// Out of line: a thread's first call.
__attribute__((noinline, cold)) Shard* take_shard() {
  pthread_once(&g_key_once, make_key);
  Shard* s = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_free_mu);
    if (g_free) {
      s = g_free;
      g_free = s->next_free;
      s->next_free = nullptr;
    }
  }
  if (!s) {
    // Reachable from g_shards for as long as the process lives (leak
    // checkers agree): a report may read it at any time.
    s = new (std::nothrow) Shard();
    if (!s) return nullptr;
    Shard* head = g_shards.load(std::memory_order_relaxed);
    do {
      s->next = head;
    } while (!g_shards.compare_exchange_weak(head, s, std::memory_order_release, std::memory_order_relaxed));
    g_shard_count.fetch_add(1, std::memory_order_relaxed);
  }
  s->tid = static_cast<int>(syscall(SYS_gettid));
  std::memset(s->name, 0, sizeof(s->name));
  pthread_getname_np(pthread_self(), s->name, sizeof(s->name));
  s->generation.store(g_generation.load(std::memory_order_relaxed), std::memory_order_release);
  if (g_key_made.load(std::memory_order_acquire)) pthread_setspecific(g_key, s);
  return s;
}

inline Shard* my_shard() {
  Shard* s = t_shard;
  if (__builtin_expect(s == nullptr, 0)) s = t_shard = take_shard();
  return s;
}

}  // namespace

void register_call(const ApiCall* call) {
  if (call && call->id < kMaxCalls) g_calls[call->id].store(call, std::memory_order_release);
}

void record(const ApiCall& call, uint64_t ticks, const CallInfo& info) {
  Shard* s = my_shard();
  if (__builtin_expect(s == nullptr || call.id >= kMaxCalls, 0)) return;
  CallCell& c = s->calls[call.id];
  add(c.count, 1);
  add(c.ticks, ticks);
  raise_to(c.max_ticks, ticks);
  add(c.bytes, info.bytes);
  add(c.histogram[Histogram::bucket_of(ticks)], 1);
  add(s->category_ticks[static_cast<int>(call.category)], ticks);
  if (info.copy != CopyKind::kNone) {
    CopyCell& cc = s->copies[static_cast<int>(info.copy)][static_cast<int>(info.host)];
    add(cc.count, 1);
    add(cc.bytes, info.bytes);
    add(cc.ticks, ticks);
  }
}

namespace {

// A call site's key: the call and up to kMaxFrames of its stack.
SiteKey site_key(const ApiCall& call, void* const* frames, int n_frames) {
  SiteKey key{};
  key.call = call.id;
  key.n = static_cast<uint8_t>(std::min(n_frames, kMaxFrames));
  std::copy(frames, frames + key.n, key.frames);
  return key;
}

}  // namespace

void record_call_site(const ApiCall& call, uint64_t ticks, void* const* frames, int n_frames) {
  Shard* s = my_shard();
  if (s == nullptr || call.id >= kMaxCalls || n_frames <= 0) return;
  SiteKey key = site_key(call, frames, n_frames);
  std::lock_guard<std::mutex> lock(s->sites_mu);
  SiteFigures& f = s->sites[key];
  ++f.count;
  f.ticks += ticks;
  f.max_ticks = std::max(f.max_ticks, ticks);
}

void record_pageable_site(const ApiCall& call, uint64_t bytes, uint64_t copies, void* const* frames, int n_frames) {
  Shard* s = my_shard();
  if (s == nullptr || call.id >= kMaxCalls || n_frames <= 0) return;
  SiteKey key = site_key(call, frames, n_frames);
  std::lock_guard<std::mutex> lock(s->sites_mu);
  PageableFigures& f = s->pageable_sites[key];
  ++f.samples;
  f.copies += copies;
  f.bytes += bytes;
}

namespace {

bool live(const Shard& s, uint32_t generation) {
  return s.generation.load(std::memory_order_acquire) == generation;
}

// One shard's figures as of now. Takes its sites_mu.
ThreadFigures figures_of(Shard& s) {
  ThreadFigures t;
  t.tid = s.tid;
  t.name = s.name;
  for (int i = 0; i < kCategoryCount; ++i) t.ticks[i] = read(s.category_ticks[i]);
  for (int id = 0; id < kMaxCalls; ++id) {
    const CallCell& c = s.calls[id];
    uint64_t count = read(c.count);
    const ApiCall* call = g_calls[id].load(std::memory_order_acquire);
    if (count == 0 || call == nullptr) continue;
    CallFigures f;
    f.call = call;
    f.count = count;
    f.ticks = read(c.ticks);
    f.max_ticks = read(c.max_ticks);
    f.bytes = read(c.bytes);
    for (int b = 0; b < Histogram::kBuckets; ++b) f.histogram.counts[b] = read(c.histogram[b]);
    t.calls.push_back(f);
  }
  for (int k = 0; k < kCopyKindCount; ++k)
    for (int h = 0; h < kHostMemoryCount; ++h) {
      const CopyCell& c = s.copies[k][h];
      uint64_t count = read(c.count);
      if (count == 0) continue;
      t.copies.push_back({static_cast<CopyKind>(k), static_cast<HostMemory>(h), count, read(c.bytes), read(c.ticks)});
    }
  std::lock_guard<std::mutex> lock(s.sites_mu);
  for (const auto& [key, f] : s.sites) {
    const ApiCall* call = g_calls[key.call].load(std::memory_order_acquire);
    if (call == nullptr) continue;
    t.call_sites.push_back({call, std::vector<void*>(key.frames, key.frames + key.n), f.count, f.ticks, f.max_ticks});
  }
  for (const auto& [key, f] : s.pageable_sites) {
    const ApiCall* call = g_calls[key.call].load(std::memory_order_acquire);
    if (call == nullptr) continue;
    t.pageable_sites.push_back({call, std::vector<void*>(key.frames, key.frames + key.n), f.samples, f.copies, f.bytes});
  }
  return t;
}

// Zeroes every figure of `s`. Its owner alone writes it meanwhile (or none).
void zero(Shard& s) {
  for (Counter& c : s.category_ticks) c.store(0, std::memory_order_relaxed);
  for (CallCell& c : s.calls) {
    c.count.store(0, std::memory_order_relaxed);
    c.ticks.store(0, std::memory_order_relaxed);
    c.max_ticks.store(0, std::memory_order_relaxed);
    c.bytes.store(0, std::memory_order_relaxed);
    for (Counter& h : c.histogram) h.store(0, std::memory_order_relaxed);
  }
  for (auto& row : s.copies)
    for (CopyCell& c : row) {
      c.count.store(0, std::memory_order_relaxed);
      c.bytes.store(0, std::memory_order_relaxed);
      c.ticks.store(0, std::memory_order_relaxed);
    }
  std::lock_guard<std::mutex> lock(s.sites_mu);
  s.sites.clear();
  s.pageable_sites.clear();
}

// The key's destructor, on the exiting thread: Note [Exited threads].
void on_thread_exit(void* shard) {
  auto* s = static_cast<Shard*>(shard);
  if (t_shard == s) t_shard = nullptr;
  {
    std::lock_guard<std::mutex> fold(g_fold_mu);
    // A shard of the parent of a fork: left behind (after_fork_child).
    if (!live(*s, g_generation.load(std::memory_order_relaxed))) return;
    if (!g_exited) g_exited = new ExitedThreads();  // reachable through g_exited
    g_exited->add(figures_of(*s));
    zero(*s);
    s->generation.store(0, std::memory_order_relaxed);
  }
  std::lock_guard<std::mutex> lock(g_free_mu);
  s->next_free = g_free;
  g_free = s;
}

}  // namespace

void reset() {
  std::lock_guard<std::mutex> fold(g_fold_mu);
  const uint32_t generation = g_generation.load(std::memory_order_relaxed);
  for (Shard* s = g_shards.load(std::memory_order_acquire); s; s = s->next)
    if (live(*s, generation)) zero(*s);
  delete g_exited;
  g_exited = nullptr;
}

void after_fork_child() {
  // Single-threaded here. Nothing below reads what another thread of the
  // parent may have been changing: the parent's shards (live or free) and
  // exited threads' figures stay where they are, reachable, never read again.
  g_generation.fetch_add(1, std::memory_order_relaxed);
  new (&g_free_mu) std::mutex();
  g_free = nullptr;
  new (&g_fold_mu) std::mutex();
  if (g_exited) {
    // Keep it reachable for leak checkers, without touching it.
    [[maybe_unused]] static ExitedThreads* volatile left_behind[16];  // volatile: the stores stay
    static int n_left_behind = 0;
    if (n_left_behind < 16) left_behind[n_left_behind++] = g_exited;
  }
  g_exited = nullptr;
  t_shard = nullptr;
  // This thread's key still names its shard of the parent (pthread_setspecific
  // with NULL allocates nothing).
  if (g_key_made.load(std::memory_order_acquire)) pthread_setspecific(g_key, nullptr);
}

size_t shard_count() { return g_shard_count.load(std::memory_order_relaxed); }

std::vector<ThreadFigures> snapshot() {
  std::vector<ThreadFigures> out;
  std::lock_guard<std::mutex> fold(g_fold_mu);
  const uint32_t generation = g_generation.load(std::memory_order_relaxed);
  for (Shard* s = g_shards.load(std::memory_order_acquire); s; s = s->next) {
    if (!live(*s, generation)) continue;
    ThreadFigures t = figures_of(*s);
    if (!t.calls.empty()) out.push_back(std::move(t));
  }
  if (g_exited) g_exited->append_to(&out);
  return out;
}

namespace testing {

void while_holding_locks(void (*during)(void*), void* arg) {
  Shard* s = my_shard();
  std::lock_guard<std::mutex> fold(g_fold_mu);
  std::lock_guard<std::mutex> free_list(g_free_mu);
  if (s) s->sites_mu.lock();
  during(arg);
  if (s) s->sites_mu.unlock();
}

}  // namespace testing

}  // namespace ledger
}  // namespace gpuslack

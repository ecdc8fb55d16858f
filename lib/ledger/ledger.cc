// The ledger's shards: one per live thread that makes a hooked call, taken
// on its first call and recycled when it exits (ledger/shard_pool.h: the
// free list, generations, the pthread key and the fold lock). Every counter
// has one writer, its thread (ledger/counter.h), and is read at report time
// with relaxed loads. A shard's tid and name are written by its thread
// before it goes live (prepare), constant while it is; when its thread
// exits, its figures move to the exited threads' and it is emptied
// (retire).
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

#include "base/clock.h"
#include "ledger/counter.h"
#include "ledger/exited_threads.h"
#include "ledger/host_activity.h"
#include "ledger/python_frames.h"
#include "ledger/shard_pool.h"

namespace gpuslack {
namespace ledger {
namespace {

struct CallCell {
  Counter count{0}, ticks{0}, max_ticks{0}, bytes{0};
  Counter histogram[Histogram::kBuckets] = {};
};

struct CopyCell {
  Counter count{0}, bytes{0}, ticks{0};
};

// Up to kMaxPythonFrames Python frames (python_frames.h) lead the native
// ones.
inline constexpr int kMaxSiteFrames = kMaxFrames + kMaxPythonFrames;

struct SiteKey {
  uint16_t call;
  uint8_t n;
  void* frames[kMaxSiteFrames];

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

struct Shard : PooledShard<Shard> {
  // Written by the taking thread before the shard goes live (prepare);
  // constant while it is.
  int tid = 0;
  char name[16] = {};
  Counter category_ticks[kCategoryCount] = {};
  CallCell calls[kMaxCalls];
  CopyCell copies[kCopyKindCount][kHostMemoryCount][2];  // [..][..][async_api]
  // The slow path only: calls that blocked past the call-site threshold.
  // (std::unordered_map, not absl::flat_hash_map: abseil's hash pulls in
  // <iostream> through absl::Cord, whose static initializer would run at
  // load time: see Note [Lazy and silent] in session/session.h.)
  // A plain pthread mutex: taken only on that slow path and by reports.
  std::mutex sites_mu;
  std::unordered_map<SiteKey, SiteFigures, SiteKeyHash> sites;  // guarded by sites_mu
  std::unordered_map<SiteKey, PageableFigures, SiteKeyHash> pageable_sites;  // guarded by sites_mu
  // By call id: when the slow calls blocked (CallFigures::slow_time).
  std::unordered_map<uint16_t, TimeBuckets> slow_time;  // guarded by sites_mu
};

std::atomic<const ApiCall*> g_calls[kMaxCalls];

// Guarded by the pool's fold lock; made on the first exit.
ExitedThreads* g_exited = nullptr;

void prepare(Shard& s);
void retire(Shard& s);

// The fold lock is taken before a shard's sites_mu, never after.
ShardPool<Shard> g_pool(prepare, retire);

inline Shard* my_shard() { return g_pool.mine(); }

}  // namespace

void register_call(const ApiCall* call) {
  if (call && call->id < kMaxCalls) g_calls[call->id].store(call, std::memory_order_release);
}

namespace {
void sample_pageable_copy(Shard& s, const ApiCall& call, uint64_t bytes);
// Whether `info` is a pageable copy between host and device, as the copy
// table files it.
inline bool pageable_copy(const CallInfo& info) {
  return info.host == HostMemory::kPageable &&
         (info.copy == CopyKind::kHostToDevice || info.copy == CopyKind::kDeviceToHost);
}
}  // namespace

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
    CopyCell& cc = s->copies[static_cast<int>(info.copy)][static_cast<int>(info.host)][call.async_api ? 1 : 0];
    add(cc.count, 1);
    add(cc.bytes, info.bytes);
    add(cc.ticks, ticks);
    if (__builtin_expect(call.samples_pageable_sites && pageable_copy(info), 0))
      sample_pageable_copy(*s, call, info.bytes);
  }
}

namespace {

// A call site's key: the call, its leading Python frames and up to
// kMaxFrames native ones.
SiteKey site_key(const ApiCall& call, void* const* frames, int n_frames) {
  SiteKey key{};
  key.call = call.id;
  int python = std::min(leading_python_frames(frames, n_frames), kMaxPythonFrames);
  key.n = static_cast<uint8_t>(python + std::min(n_frames - python, kMaxFrames));
  std::copy(frames, frames + key.n, key.frames);
  return key;
}

}  // namespace

namespace {

// Note [Call site keys]: host intervals (host_activity.h) carry a call site
// as a 64-bit key, which the timeline turns back into frames at report
// time. The keys are the process's, not a thread's: one map, bounded, under
// its own lock (taken only on the call-site slow path and by readers, never
// together with another lock of the ledger). Made on first use; in a forked
// child left behind, like the exited threads' figures.
struct KnownSite {
  uint8_t n = 0;
  void* frames[kMaxSiteFrames] = {};
};
std::mutex g_site_keys_mu;
std::unordered_map<uint64_t, KnownSite>* g_site_keys = nullptr;  // guarded by g_site_keys_mu

uint64_t key_of(const SiteKey& k) {
  uint64_t h = (k.call + 1) * 0x9E3779B97F4A7C15ull ^ k.n;
  for (int i = 0; i < k.n; ++i) {
    h ^= reinterpret_cast<uintptr_t>(k.frames[i]);
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
  }
  return h ? h : 1;
}

uint64_t remember_site(const SiteKey& k) {
  const uint64_t key = key_of(k);
  std::lock_guard<std::mutex> lock(g_site_keys_mu);
  if (!g_site_keys) {
    g_site_keys = new (std::nothrow) std::unordered_map<uint64_t, KnownSite>();  // reachable from g_site_keys
    if (!g_site_keys) return 0;
  }
  auto it = g_site_keys->find(key);
  if (it != g_site_keys->end())
    return it->second.n == k.n && std::equal(k.frames, k.frames + k.n, it->second.frames) ? key : 0;
  if (g_site_keys->size() >= kMaxSiteKeys) return 0;
  KnownSite site;
  site.n = k.n;
  std::copy(k.frames, k.frames + k.n, site.frames);
  g_site_keys->emplace(key, site);
  return key;
}

}  // namespace

uint64_t record_call_site(const ApiCall& call, uint64_t ticks, void* const* frames, int n_frames) {
  Shard* s = my_shard();
  if (s == nullptr || call.id >= kMaxCalls || n_frames <= 0) return 0;
  SiteKey key = site_key(call, frames, n_frames);
  // The call ended about now: when it began, in seconds from the series'
  // origin, and how long it blocked.
  const uint64_t end = clock::ticks(), origin = series_origin_ticks();
  const double tick_s = clock::tick_seconds();
  const double blocked_s = static_cast<double>(ticks) * tick_s;
  const double begin_s = (end > origin ? static_cast<double>(end - origin) * tick_s : 0) - blocked_s;
  {
    std::lock_guard<std::mutex> lock(s->sites_mu);
    SiteFigures& f = s->sites[key];
    ++f.count;
    f.ticks += ticks;
    f.max_ticks = std::max(f.max_ticks, ticks);
    auto slow = s->slow_time.try_emplace(call.id, TimeBuckets::Reduce::kSum, kSlowTimeInterval).first;
    slow->second.add(begin_s, blocked_s);
  }
  return remember_site(key);
}

bool call_site_frames(uint64_t key, std::vector<void*>* frames) {
  std::lock_guard<std::mutex> lock(g_site_keys_mu);
  if (!g_site_keys || key == 0) return false;
  auto it = g_site_keys->find(key);
  if (it == g_site_keys->end()) return false;
  frames->assign(it->second.frames, it->second.frames + it->second.n);
  return true;
}

namespace {

// Note [Pageable call sites]: the summary's "pin these buffers" list, taken
// from the one record of each call (record): for the calls the staged
// copies serve (ApiCall::samples_pageable_sites: the runtime's cudaMemcpy
// family, whose pageable copies the summary's "pageable copies" line
// counts), the copy table's pageable host<->device cells and these samples
// count the same copies, staged or not, and a call that failed moved
// nothing and is in neither. A backtrace costs
// microseconds, so pageable copies are sampled: a thread records the call
// site of each of its first kExactSamples pageable copies, and after that
// of the copy that brings its pageable bytes since the last sample to
// kSampleBytes; a sample stands for every pageable copy and byte since the
// previous one. Sites that move the most bytes are the most likely to be
// sampled, and their totals converge on the truth. A sample takes the
// shard's own lock (as record_call_site does).
constexpr uint64_t kSampleBytes = 1u << 20;
constexpr uint64_t kExactSamples = 64;
thread_local uint64_t t_bytes_since_sample = 0;
thread_local uint64_t t_copies_since_sample = 0;
thread_local uint64_t t_samples = 0;

__attribute__((noinline)) void sample_pageable_copy(Shard& s, const ApiCall& call, uint64_t bytes) {
  t_bytes_since_sample += bytes;
  ++t_copies_since_sample;
  if (t_samples >= kExactSamples && t_bytes_since_sample < kSampleBytes) return;
  ++t_samples;
  constexpr int kCapture = kMaxPythonFrames + kMaxFrames + 6;
  void* frames[kCapture];
  int n = capture_call_site(frames, kCapture);
  if (n > 0) {
    SiteKey key = site_key(call, frames, n);
    std::lock_guard<std::mutex> lock(s.sites_mu);
    PageableFigures& f = s.pageable_sites[key];
    ++f.samples;
    f.copies += t_copies_since_sample;
    f.bytes += t_bytes_since_sample;
  }
  t_bytes_since_sample = 0;
  t_copies_since_sample = 0;
}

}  // namespace

namespace {

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
    for (int h = 0; h < kHostMemoryCount; ++h)
      for (int a = 0; a < 2; ++a) {
        const CopyCell& c = s.copies[k][h][a];
        uint64_t count = read(c.count);
        if (count == 0) continue;
        t.copies.push_back(
            {static_cast<CopyKind>(k), static_cast<HostMemory>(h), a == 1, count, read(c.bytes), read(c.ticks)});
      }
  std::lock_guard<std::mutex> lock(s.sites_mu);
  for (CallFigures& f : t.calls) {
    auto slow = s.slow_time.find(f.call->id);
    if (slow != s.slow_time.end()) f.slow_time = std::make_shared<const TimeBuckets>(slow->second);
  }
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
    for (auto& cells : row)
      for (CopyCell& c : cells) {
        c.count.store(0, std::memory_order_relaxed);
        c.bytes.store(0, std::memory_order_relaxed);
        c.ticks.store(0, std::memory_order_relaxed);
      }
  std::lock_guard<std::mutex> lock(s.sites_mu);
  s.sites.clear();
  s.pageable_sites.clear();
  s.slow_time.clear();
}

// A thread's first call: its tid and name, for the rows of its figures.
void prepare(Shard& s) {
  s.tid = static_cast<int>(syscall(SYS_gettid));
  std::memset(s.name, 0, sizeof(s.name));
  pthread_getname_np(pthread_self(), s.name, sizeof(s.name));
}

// A thread's exit, under the fold lock: Note [Exited threads].
void retire(Shard& s) {
  if (!g_exited) g_exited = new ExitedThreads();  // reachable through g_exited
  g_exited->add(figures_of(s));
  zero(s);
}

}  // namespace

void reset() {
  std::lock_guard<std::mutex> fold(g_pool.fold_mutex());
  g_pool.for_each_live([](Shard& s) { zero(s); });
  delete g_exited;
  g_exited = nullptr;
  std::lock_guard<std::mutex> keys(g_site_keys_mu);
  delete g_site_keys;
  g_site_keys = nullptr;
}

void after_fork_child() {
  // Single-threaded here. Nothing below reads what another thread of the
  // parent may have been changing: the parent's shards (live or free) and
  // exited threads' figures stay where they are, reachable, never read again.
  g_pool.after_fork_child();
  if (g_exited) {
    // Keep it reachable for leak checkers, without touching it.
    [[maybe_unused]] static ExitedThreads* volatile left_behind[16];  // volatile: the stores stay
    static int n_left_behind = 0;
    if (n_left_behind < 16) left_behind[n_left_behind++] = g_exited;
  }
  g_exited = nullptr;
  new (&g_site_keys_mu) std::mutex();
  if (g_site_keys) {
    [[maybe_unused]] static std::unordered_map<uint64_t, KnownSite>* volatile keys_left_behind[16];
    static int n_keys_left_behind = 0;
    if (n_keys_left_behind < 16) keys_left_behind[n_keys_left_behind++] = g_site_keys;
  }
  g_site_keys = nullptr;
}

size_t shard_count() { return g_pool.count(); }

std::vector<ThreadFigures> snapshot() {
  std::vector<ThreadFigures> out;
  std::lock_guard<std::mutex> fold(g_pool.fold_mutex());
  g_pool.for_each_live([&](Shard& s) {
    ThreadFigures t = figures_of(s);
    if (!t.calls.empty()) out.push_back(std::move(t));
  });
  if (g_exited) g_exited->append_to(&out);
  return out;
}

namespace testing {

void while_holding_locks(void (*during)(void*), void* arg) {
  Shard* s = my_shard();
  std::lock_guard<std::mutex> fold(g_pool.fold_mutex());
  std::lock_guard<std::mutex> free_list(g_pool.free_mutex());
  std::lock_guard<std::mutex> keys(g_site_keys_mu);
  if (s) s->sites_mu.lock();
  during(arg);
  if (s) s->sites_mu.unlock();
}

}  // namespace testing

}  // namespace ledger
}  // namespace gpuslack

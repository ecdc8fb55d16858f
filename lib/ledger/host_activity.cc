// Host activity (host_activity.h): per-thread rings of blocked calls, the
// launch counters and the step marks.
//
// Note [Interval rings]: each thread that writes an interval takes a ring
// (ledger/shard_pool.h, as the ledger takes a shard: made once, recycled
// when the thread exits). A ring has one writer, its thread, and one reader,
// the consumer, which holds the pool's fold lock while it reads; nobody
// waits for anybody:
//   - `head` counts the intervals the ring's writers ever wrote. It never
//     goes back, not even when the ring passes to a new thread, so an index
//     names one interval for the process's life.
//   - Interval i lives in slot i % kRingSlots. The writer marks the slot
//     busy (seq = 0), writes the fields (release stores), marks it done
//     (seq = i + 1, release) and publishes head = i + 1 (release).
//   - The consumer reads [tail, head): indices more than kRingSlots behind
//     head are gone (overwritten: counted as dropped). For each index it
//     loads seq (acquire), the fields (acquire), then seq again: an
//     interval is taken only when both seqs are i + 1, so a slot the writer
//     was overwriting meanwhile is never taken half-written (counted as
//     dropped too). The fields are atomics, stored with release and loaded
//     with acquire: a reader that sees any new field also sees the busy
//     mark on its second look, with no stand-alone fence (TSan checks it as
//     written). On x86-64 each of these is a plain move.
//   - A thread's exit (retire, under the fold lock, on the exiting thread):
//     its ring is drained once more into the exited threads' intervals (a
//     bounded buffer the next drain empties; beyond it, dropped and
//     counted), then goes back to the pool with tail = head.
//
// The launch counters are a second pool of tiny shards, so that a thread
// that only launches never makes a ring. Steps are rare: a mutex and a
// bounded ring of ticks.
//
// Fork (Note [Fork] in session/session.cc): both pools move to a new
// generation, every lock here is made anew, the buffers are emptied, and the
// threshold goes back to "never" (the child's timeline, if it starts one,
// sets it again). No lock taken, nothing allocated.
#include "ledger/host_activity.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <new>

#include "base/clock.h"
#include "ledger/counter.h"
#include "ledger/shard_pool.h"

namespace gpuslack {
namespace ledger {

namespace detail {
std::atomic<uint64_t> g_interval_threshold_ticks{UINT64_MAX};
}

namespace {

constexpr uint64_t kRingSlots = 4096;  // per thread: 4096 * 40 bytes
constexpr size_t kExitedIntervals = 8192;
constexpr uint64_t kStepSlots = 4096;

struct Slot {
  std::atomic<uint64_t> seq{0};  // index + 1 of the interval held; 0: being written (or never)
  std::atomic<uint64_t> start{0};
  std::atomic<uint64_t> end{0};
  std::atomic<uint64_t> site{0};
  std::atomic<const ApiCall*> call{nullptr};
};

struct Ring : PooledShard<Ring> {
  int tid = 0;  // written by prepare, constant while live
  std::atomic<uint64_t> head{0};  // intervals ever written; stored by the owner
  uint64_t tail = 0;              // the consumer's; under the fold lock
  Slot slots[kRingSlots];
};

void prepare_ring(Ring& r) { r.tid = static_cast<int>(syscall(SYS_gettid)); }
void retire_ring(Ring& r);

ShardPool<Ring> g_rings(prepare_ring, retire_ring);

// The exited threads' last intervals, until the next drain. Guarded by
// g_rings' fold lock.
HostInterval g_exited[kExitedIntervals];
size_t g_exited_count = 0;
uint64_t g_exited_dropped = 0;

struct LaunchShard : PooledShard<LaunchShard> {
  Counter launches{0};
};

void retire_launches(LaunchShard& s);

ShardPool<LaunchShard> g_launches(nullptr, retire_launches);
uint64_t g_exited_launches = 0;  // guarded by g_launches' fold lock

std::mutex g_steps_mu;
uint64_t g_steps[kStepSlots];  // guarded by g_steps_mu, as are the three below
uint64_t g_steps_head = 0;     // steps ever marked
uint64_t g_steps_tail = 0;     // drained up to here

// Moves the intervals of `r` in [tail, head) to `out` (appending with
// `append`); returns how many were lost. Under the fold lock.
template <typename Append>
uint64_t drain_ring(Ring& r, Append&& append) {
  uint64_t lost = 0;
  const uint64_t head = r.head.load(std::memory_order_acquire);
  uint64_t i = r.tail;
  if (head - i > kRingSlots) {
    lost += head - kRingSlots - i;
    i = head - kRingSlots;
  }
  for (; i < head; ++i) {
    const Slot& s = r.slots[i % kRingSlots];
    if (s.seq.load(std::memory_order_acquire) != i + 1) {
      ++lost;
      continue;
    }
    HostInterval v;
    v.start_ticks = s.start.load(std::memory_order_acquire);
    v.end_ticks = s.end.load(std::memory_order_acquire);
    v.call = s.call.load(std::memory_order_acquire);
    v.site_key = s.site.load(std::memory_order_acquire);
    v.tid = r.tid;
    if (s.seq.load(std::memory_order_relaxed) != i + 1) {  // overwritten while read
      ++lost;
      continue;
    }
    append(v);
  }
  r.tail = head;
  return lost;
}

// A thread's exit, under the fold lock: Note [Interval rings].
void retire_ring(Ring& r) {
  g_exited_dropped += drain_ring(r, [](const HostInterval& v) {
    if (g_exited_count < kExitedIntervals)
      g_exited[g_exited_count++] = v;
    else
      ++g_exited_dropped;
  });
}

void retire_launches(LaunchShard& s) {
  g_exited_launches += read(s.launches);
  s.launches.store(0, std::memory_order_relaxed);
}

}  // namespace

void set_interval_threshold(uint64_t ticks) {
  detail::g_interval_threshold_ticks.store(ticks, std::memory_order_relaxed);
}

namespace detail {

void write_interval(const ApiCall& call, uint64_t start_ticks, uint64_t end_ticks, uint64_t site_key) {
  Ring* r = g_rings.mine();
  if (__builtin_expect(r == nullptr, 0)) return;
  const uint64_t i = r->head.load(std::memory_order_relaxed);  // its one writer
  Slot& s = r->slots[i % kRingSlots];
  s.seq.store(0, std::memory_order_relaxed);
  s.start.store(start_ticks, std::memory_order_release);
  s.end.store(end_ticks, std::memory_order_release);
  s.call.store(&call, std::memory_order_release);
  s.site.store(site_key, std::memory_order_release);
  s.seq.store(i + 1, std::memory_order_release);
  r->head.store(i + 1, std::memory_order_release);
}

}  // namespace detail

void count_launch() {
  LaunchShard* s = g_launches.mine();
  if (__builtin_expect(s != nullptr, 1)) add(s->launches, 1);
}

void mark_step() {
  const uint64_t now = clock::ticks();
  std::lock_guard<std::mutex> lock(g_steps_mu);
  g_steps[g_steps_head % kStepSlots] = now;
  ++g_steps_head;
}

uint64_t drain_intervals(std::vector<HostInterval>* out) {
  std::lock_guard<std::mutex> fold(g_rings.fold_mutex());
  uint64_t lost = g_exited_dropped;
  out->insert(out->end(), g_exited, g_exited + g_exited_count);
  g_exited_count = 0;
  g_exited_dropped = 0;
  g_rings.for_each_live([&](Ring& r) { lost += drain_ring(r, [&](const HostInterval& v) { out->push_back(v); }); });
  return lost;
}

uint64_t drain_steps(std::vector<uint64_t>* out) {
  std::lock_guard<std::mutex> lock(g_steps_mu);
  uint64_t lost = 0;
  if (g_steps_head - g_steps_tail > kStepSlots) {
    lost = g_steps_head - kStepSlots - g_steps_tail;
    g_steps_tail = g_steps_head - kStepSlots;
  }
  for (; g_steps_tail < g_steps_head; ++g_steps_tail) out->push_back(g_steps[g_steps_tail % kStepSlots]);
  return lost;
}

uint64_t launches() {
  std::lock_guard<std::mutex> fold(g_launches.fold_mutex());
  uint64_t n = g_exited_launches;
  g_launches.for_each_live([&](LaunchShard& s) { n += read(s.launches); });
  return n;
}

void after_fork_child_host_activity() {
  detail::g_interval_threshold_ticks.store(UINT64_MAX, std::memory_order_relaxed);
  g_rings.after_fork_child();
  g_exited_count = 0;
  g_exited_dropped = 0;
  g_launches.after_fork_child();
  g_exited_launches = 0;
  new (&g_steps_mu) std::mutex();
  g_steps_head = 0;
  g_steps_tail = 0;
}

size_t interval_ring_count() { return g_rings.count(); }

namespace testing {

void while_holding_host_activity_locks(void (*during)(void*), void* arg) {
  std::lock_guard<std::mutex> rings(g_rings.fold_mutex());
  std::lock_guard<std::mutex> rings_free(g_rings.free_mutex());
  std::lock_guard<std::mutex> launches(g_launches.fold_mutex());
  std::lock_guard<std::mutex> launches_free(g_launches.free_mutex());
  std::lock_guard<std::mutex> steps(g_steps_mu);
  during(arg);
}

}  // namespace testing

}  // namespace ledger
}  // namespace gpuslack

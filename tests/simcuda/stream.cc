// Streams, events and stream capture of the simulated device.
//
// Each stream is an in-order queue served by its own worker thread. An op
// runs once its dependencies (other streams reaching a given seq) are met,
// and holds its worker for its modeled GPU time, so a host thread that waits
// on it loses real wall time. The implicit synchronization rules follow the
// CUDA Runtime API's "Stream synchronization behavior":
//   - work on the legacy default stream waits for all work enqueued before
//     it on blocking streams of its device, and work enqueued on a blocking
//     stream after it waits for it;
//   - streams created with cudaStreamNonBlocking take part in neither;
//   - the per-thread default stream is a blocking stream.
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "sim.h"

namespace gpusim {

Core& core() {
  // Never destroyed: workers outlive main(). A fork waits until no thread
  // holds the core's lock (taken in the prepare handler, let go in parent
  // and child), so a forked child finds the bookkeeping whole and the lock
  // free, as a process that forks while other threads make CUDA calls needs
  // (tests/interpose/fork_test.py). The child has none of the parent's
  // stream workers: work it enqueues on an inherited stream never runs.
  static Core* c = [] {
    Core* made = new Core();
    pthread_atfork([] { core().mu.lock(); }, [] { core().mu.unlock(); }, [] { core().mu.unlock(); });
    return made;
  }();
  return *c;
}

namespace {

bool deps_met(const std::vector<Dep>& deps) {
  for (const Dep& d : deps)
    if (d.stream->completed < d.seq) return false;
  return true;
}

void worker_loop(CUstream_st* s) {
  Core& c = core();
  std::unique_lock<std::mutex> l(c.mu);
  for (;;) {
    c.cv.wait(l, [&] {
      return (s->destroyed && s->queue.empty()) ||
             (!s->queue.empty() && deps_met(s->queue.front().deps));
    });
    if (s->queue.empty()) return;  // destroyed and drained
    s->running = true;
    std::function<void()> run = std::move(s->queue.front().run);
    uint64_t seq = s->queue.front().seq;
    const OpInfo info = s->queue.front().info;
    l.unlock();
    // Observed ops are stamped around their run (activity.cc); the record
    // is given before the op's completion is published below.
    const bool observed = info.kind != OpKind::kOther && activity_observed();
    const int64_t start = observed ? now_ns() : 0;
    if (run) {
      std::shared_lock<std::shared_timed_mutex> access(device_access_lock());
      run();
    }
    if (observed) {
      int64_t end = now_ns();
      if (info.modeled_ns > 0) end = std::min(end, start + static_cast<int64_t>(info.modeled_ns));
      emit_activity(info, s->device, s->id, start, end);
    }
    l.lock();
    s->queue.pop_front();
    s->running = false;
    s->completed = seq;
    c.cv.notify_all();
  }
}

CUstream_st* make_stream(int device, unsigned flags, int priority, bool legacy, bool per_thread) {
  static std::atomic<uint32_t> next_id{1};
  auto* s = new CUstream_st();
  s->id = next_id.fetch_add(1, std::memory_order_relaxed);
  s->device = device;
  s->flags = flags;
  s->priority = priority;
  s->legacy = legacy;
  s->per_thread = per_thread;
  {
    std::lock_guard<std::mutex> l(core().mu);
    core().streams.push_back(s);
  }
  s->worker = std::thread(worker_loop, s);
  s->worker.detach();
  return s;
}

bool blocking(const CUstream_st* s) {
  return !s->legacy && !(s->flags & cudaStreamNonBlocking);
}

// Implicit dependencies of an op about to be enqueued on `s`. Core::mu held.
void implicit_deps(CUstream_st* s, std::vector<Dep>* deps) {
  Core& c = core();
  if (s->legacy) {
    for (CUstream_st* o : c.streams)
      if (o != s && o->device == s->device && blocking(o) && !o->destroyed &&
          o->completed < o->enqueued)
        deps->push_back({o, o->enqueued});
  } else if (blocking(s)) {
    CUstream_st* leg = c.legacy.size() > static_cast<size_t>(s->device) ? c.legacy[s->device] : nullptr;
    if (leg && leg->completed < leg->enqueued) deps->push_back({leg, leg->enqueued});
  }
  // Drop barrier entries already met, then wait for the rest.
  c.barrier.erase(std::remove_if(c.barrier.begin(), c.barrier.end(),
                                 [](const Dep& d) { return d.stream->completed >= d.seq; }),
                  c.barrier.end());
  for (const Dep& d : c.barrier)
    if (d.stream != s && d.stream->device == s->device) deps->push_back(d);
}

thread_local CUstream_st* t_per_thread = nullptr;

// The calling thread's kernel id, once per thread (OpInfo::launcher).
uint32_t launching_thread() {
  thread_local const uint32_t tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return tid;
}

}  // namespace

CUstream_st* legacy_stream(int device) {
  {
    std::lock_guard<std::mutex> l(core().mu);
    if (core().legacy.size() > static_cast<size_t>(device) && core().legacy[device])
      return core().legacy[device];
  }
  static std::mutex create_mu;
  std::lock_guard<std::mutex> g(create_mu);
  {
    std::lock_guard<std::mutex> l(core().mu);
    if (core().legacy.size() > static_cast<size_t>(device) && core().legacy[device])
      return core().legacy[device];
  }
  CUstream_st* s = make_stream(device, 0, 0, /*legacy=*/true, false);
  std::lock_guard<std::mutex> l(core().mu);
  if (core().legacy.size() <= static_cast<size_t>(device)) core().legacy.resize(device + 1, nullptr);
  core().legacy[device] = s;
  return s;
}

CUstream_st* per_thread_stream() {
  // One per host thread (and per device in real CUDA; the simulated one
  // keeps the device current when the thread first used it).
  if (!t_per_thread || t_per_thread->device != current_device())
    t_per_thread = make_stream(current_device(), 0, 0, false, /*per_thread=*/true);
  return t_per_thread;
}

CUstream_st* new_stream(int device, unsigned flags, int priority) {
  return make_stream(device, flags, priority, false, false);
}

void destroy_stream(CUstream_st* s) {
  // As in CUDA: returns at once; queued work still completes, then the
  // worker exits. The object itself stays, so events recorded on the stream
  // can still be queried.
  std::lock_guard<std::mutex> l(core().mu);
  s->destroyed = true;
  core().cv.notify_all();
}

CUstream_st* resolve(cudaStream_t h, bool per_thread_default) {
  if (h == nullptr) return per_thread_default ? per_thread_stream() : legacy_stream(current_device());
  if (h == cudaStreamLegacy) return legacy_stream(current_device());
  if (h == cudaStreamPerThread) return per_thread_stream();
  std::lock_guard<std::mutex> l(core().mu);
  for (CUstream_st* s : core().streams)
    if (s == h) return s->destroyed ? nullptr : s;
  return nullptr;
}

uint64_t enqueue(CUstream_st* s, std::function<void()> run, std::vector<Dep> extra_deps) {
  return enqueue(s, std::move(run), OpInfo{}, std::move(extra_deps));
}

uint64_t enqueue(CUstream_st* s, std::function<void()> run, OpInfo info, std::vector<Dep> extra_deps) {
  Core& c = core();
  std::lock_guard<std::mutex> l(c.mu);
  if (s->capture_graph) {
    // A graph's ops take the correlation id of each launch (launch_graph).
    s->capture_graph->nodes.push_back({std::move(run), info});
    return 0;
  }
  if (info.kind != OpKind::kOther && info.correlation == 0) info.correlation = next_correlation_id();
  if (info.kind != OpKind::kOther && info.launcher == 0) info.launcher = launching_thread();
  Op op;
  op.info = info;
  op.run = std::move(run);
  op.deps = std::move(extra_deps);
  implicit_deps(s, &op.deps);
  op.seq = ++s->enqueued;
  s->queue.push_back(std::move(op));
  c.cv.notify_all();
  return s->enqueued;
}

bool is_capturing(CUstream_st* s) {
  std::lock_guard<std::mutex> l(core().mu);
  return s->capture_graph != nullptr;
}

bool any_global_capture() {
  std::lock_guard<std::mutex> l(core().mu);
  for (CUstream_st* s : core().streams)
    if (s->capture_graph && s->capture_mode == cudaStreamCaptureModeGlobal) return true;
  return false;
}

void invalidate_capture(CUstream_st* s) {
  std::lock_guard<std::mutex> l(core().mu);
  if (s->capture_graph) s->capture_invalidated = true;
}

bool legacy_use_conflicts(int device) {
  std::lock_guard<std::mutex> l(core().mu);
  bool conflict = false;
  for (CUstream_st* s : core().streams)
    if (s->device == device && s->capture_graph && blocking(s)) {
      s->capture_invalidated = true;
      conflict = true;
    }
  return conflict;
}

void wait_op(CUstream_st* s, uint64_t seq) {
  Core& c = core();
  std::unique_lock<std::mutex> l(c.mu);
  c.cv.wait(l, [&] { return s->completed >= seq; });
}

void sync_stream(CUstream_st* s) {
  Core& c = core();
  std::unique_lock<std::mutex> l(c.mu);
  uint64_t target = s->enqueued;
  c.cv.wait(l, [&] { return s->completed >= target; });
}

bool stream_idle(CUstream_st* s) {
  std::lock_guard<std::mutex> l(core().mu);
  return s->completed >= s->enqueued;
}

void drain_stream(CUstream_st* s) {
  uint64_t seq = enqueue(s, nullptr);
  Core& c = core();
  std::unique_lock<std::mutex> l(c.mu);
  c.cv.wait(l, [&] { return s->completed >= seq; });
}

std::shared_timed_mutex& device_access_lock() {
  static std::shared_timed_mutex* m = new std::shared_timed_mutex();  // never destroyed: workers outlive main()
  return *m;
}

void sync_device(int device) {
  Core& c = core();
  std::unique_lock<std::mutex> l(c.mu);
  std::vector<Dep> targets;
  for (CUstream_st* s : c.streams)
    if (s->device == device) targets.push_back({s, s->enqueued});
  c.cv.wait(l, [&] { return deps_met(targets); });
}

void device_barrier(int device) {
  Core& c = core();
  std::lock_guard<std::mutex> l(c.mu);
  for (CUstream_st* s : c.streams)
    if (s->device == device && s->completed < s->enqueued && !s->capture_graph)
      c.barrier.push_back({s, s->enqueued});
}

// ---- events ----

void record_event(CUevent_st* e, CUstream_st* s) {
  auto stamp = std::make_shared<std::atomic<int64_t>>(-1);
  bool timing = !(e->flags & cudaEventDisableTiming);
  {
    // An idle stream whose implicit dependencies are met: a GPU completes
    // the event within microseconds, whatever the host's load, so the event
    // is complete at once rather than whenever this stream's worker thread
    // gets a core (milliseconds on a loaded machine; an allocator polling
    // its fences would see a busy GPU where there is none).
    Core& c = core();
    std::lock_guard<std::mutex> l(c.mu);
    if (!s->capture_graph && !s->destroyed && s->queue.empty() && !s->running) {
      std::vector<Dep> deps;
      implicit_deps(s, &deps);
      if (deps_met(deps)) {
        if (timing)
          stamp->store(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
        s->completed = ++s->enqueued;
        e->stream = s;
        e->seq = s->enqueued;
        e->stamp_ns = std::move(stamp);
        return;  // nothing can be waiting for a sequence number just made
      }
    }
  }
  uint64_t seq = enqueue(s, [stamp, timing] {
    if (timing)
      stamp->store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                       Clock::now().time_since_epoch()).count());
  });
  std::lock_guard<std::mutex> l(core().mu);
  if (seq == 0) return;  // captured: the event becomes a graph node
  e->stream = s;
  e->seq = seq;
  e->stamp_ns = std::move(stamp);
}

bool event_done(CUevent_st* e) {
  std::lock_guard<std::mutex> l(core().mu);
  return e->stream == nullptr || e->stream->completed >= e->seq;
}

void sync_event(CUevent_st* e) {
  Core& c = core();
  std::unique_lock<std::mutex> l(c.mu);
  CUstream_st* s = e->stream;
  uint64_t seq = e->seq;
  if (!s) return;
  c.cv.wait(l, [&] { return s->completed >= seq; });
}

void wait_event(CUstream_st* s, CUevent_st* e) {
  Dep dep{nullptr, 0};
  {
    std::lock_guard<std::mutex> l(core().mu);
    if (e->stream) dep = {e->stream, e->seq};
  }
  if (dep.stream) enqueue(s, nullptr, {dep});
}

// ---- capture ----

cudaError_t begin_capture(CUstream_st* s, cudaStreamCaptureMode mode, CUgraph_st* into) {
  if (s->legacy) return cudaErrorStreamCaptureUnsupported;
  std::lock_guard<std::mutex> l(core().mu);
  if (s->capture_graph) return cudaErrorIllegalState;
  s->capture_graph = into ? into : new CUgraph_st();
  s->capture_into_own = into != nullptr;
  s->capture_mode = mode;
  s->capture_invalidated = false;
  return cudaSuccess;
}

cudaError_t end_capture(CUstream_st* s, CUgraph_st** graph) {
  std::lock_guard<std::mutex> l(core().mu);
  if (!s->capture_graph) return cudaErrorIllegalState;
  CUgraph_st* g = s->capture_graph;
  bool invalid = s->capture_invalidated;
  s->capture_graph = nullptr;
  s->capture_invalidated = false;
  if (invalid) {
    if (!s->capture_into_own) delete g;  // the application's graph stays the application's
    *graph = nullptr;
    return cudaErrorStreamCaptureInvalidated;
  }
  *graph = g;
  return cudaSuccess;
}

void launch_graph(CUgraphExec_st* exec, CUstream_st* s) {
  // As CUPTI reports graph launches: every op of one launch carries the
  // correlation id of the cudaGraphLaunch call.
  const uint32_t correlation = next_correlation_id();
  for (const GraphNode& node : exec->nodes) {
    OpInfo info = node.info;
    if (info.kind != OpKind::kOther) info.correlation = correlation;
    enqueue(s, node.run, info);
  }
}

}  // namespace gpusim

// libcupti.so.13 of the simulated device: the Activity API's channels,
// buffers and flushing (README.md, "CUPTI"), after docs.nvidia.com/cupti
// "CUPTI Activity API" and the comments of cupti_activity.h 13.2. The
// records themselves and the timebase: cupti_records.cc.
//
//   - Buffers come from the client's buffer-requested callback when a record
//     needs one; "the callback function can decline the request by setting
//     *buffer to NULL. In this case CUPTI may drop activity records": the
//     record is dropped and counted (cuptiActivityGetNumDroppedRecords).
//   - A full buffer (or one at maxNumRecords) is completed on CUPTI's own
//     worker thread, as real CUPTI completes buffers from its worker;
//     cuptiActivityFlushAll completes every buffer that holds records on the
//     calling thread, after any delivery the worker has in progress.
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cupti_internal.h"

namespace cuptisim {
namespace {

// -------------------------------------------------------------- channels --

constexpr int kMaxChannels = 256;
std::atomic<Channel*> g_channels[kMaxChannels];
std::atomic<int> g_channel_count{0};
std::mutex g_channels_mu;

// The worker that completes full buffers.
struct Worker {
  std::mutex mu;
  std::condition_variable cv;
  bool pending = false;
  bool started = false;
};
Worker& worker() {
  static auto* w = new Worker();  // never freed: its thread outlives main()
  return *w;
}

thread_local bool t_in_completion = false;

uint64_t thread_id() { return static_cast<uint64_t>(syscall(SYS_gettid)); }

// Hands `b` to `c`'s completed callback; no lock held.
void complete(Channel& c, CUpti_BuffersCallbackCompleteFunc cb, CUpti_BuffersCallbackCompleteFunc_v2 cb2,
              const Buffer& b) {
  t_in_completion = true;
  if (cb2) {
    CUpti_BufferCallbackCompleteInfo info{};
    info.structSize = sizeof(info);
    info.threadId = thread_id();
    cb2(b.base, b.size, b.used, &info);
  } else if (cb) {
    cb(nullptr, 0, b.base, b.size, b.used);
  }
  t_in_completion = false;
  (void)c;
}

// Delivers every buffer queued in `c`. With the lock of `c` held in `l`.
void deliver_queued(Channel& c, std::unique_lock<std::mutex>& l) {
  while (!c.full.empty()) {
    Buffer b = c.full.front();
    c.full.pop_front();
    auto cb = c.complete;
    auto cb2 = c.complete_v2;
    ++c.delivering;
    l.unlock();
    complete(c, cb, cb2, b);
    l.lock();
    if (--c.delivering == 0) c.delivered.notify_all();
  }
}

void worker_loop() {
  Worker& w = worker();
  for (;;) {
    {
      std::unique_lock<std::mutex> l(w.mu);
      w.cv.wait(l, [&] { return w.pending; });
      w.pending = false;
    }
    int n = g_channel_count.load(std::memory_order_acquire);
    for (int i = 0; i < n; ++i) {
      Channel& c = *g_channels[i].load(std::memory_order_acquire);
      std::unique_lock<std::mutex> l(c.mu);
      deliver_queued(c, l);
    }
  }
}

}  // namespace

void wake_worker() {
  Worker& w = worker();
  std::lock_guard<std::mutex> l(w.mu);
  if (!w.started) {
    w.started = true;
    std::thread(worker_loop).detach();
  }
  w.pending = true;
  w.cv.notify_one();
}

namespace {

thread_local uint32_t t_record_thread = 0;
std::atomic<bool> g_per_thread{true};  // CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER

// The buffer being filled for `thread` (an entry made when none).
Buffer& filling_for(Channel& c, uint32_t thread) { return c.filling[thread]; }

// Asks the client for a buffer. Channel lock held. False: none given.
bool request_buffer(Channel& c, Buffer& current) {
  if (gpusim::should_fail("cuptiBufferRequest")) return false;  // as if the client had declined
  uint8_t* buf = nullptr;
  size_t size = 0, max_records = 0;
  if (c.request_v2) {
    CUpti_BufferCallbackRequestInfo info{};
    info.structSize = sizeof(info);
    c.request_v2(&buf, &size, &max_records, &info);
  } else if (c.request) {
    c.request(&buf, &size, &max_records);
  }
  if ((!buf || size == 0) && knobs().crashes_on_declined_buffer()) {
    std::fprintf(stderr, "gpusim: CUPTI %u crashed: a buffer request was declined (CUPTI before 12.9 crashes so)\n",
                 knobs().cupti_version);
    std::abort();
  }
  if (!buf || size == 0) return false;
  current = Buffer{buf, size, 0, max_records, 0};
  return true;
}

}  // namespace

// Appends one record to `c`, or drops and counts it. Returns true when a
// buffer became full (the worker is to be woken).
void set_record_thread(uint32_t launcher) { t_record_thread = launcher; }

bool per_thread_buffers() { return g_per_thread.load(std::memory_order_relaxed); }

bool append(Channel& c, const void* record, size_t size) {
  std::lock_guard<std::mutex> l(c.mu);
  if (!c.registered() || gpusim::should_fail("cuptiRecord")) {
    ++c.dropped;
    return false;
  }
  Buffer& current = filling_for(c, per_thread_buffers() ? t_record_thread : 0);
  bool woke = false;
  if (current.base && current.used + size > current.size) {
    c.full.push_back(current);
    current = Buffer{};
    woke = true;
  }
  if (!current.base && !request_buffer(c, current)) {
    ++c.dropped;
    return woke;
  }
  if (current.used + size > current.size) {
    // Too small for even one record: given back empty, the record dropped.
    c.full.push_back(current);
    current = Buffer{};
    ++c.dropped;
    return true;
  }
  std::memcpy(current.base + current.used, record, size);
  current.used += size;
  if (++current.records == current.max_records) {
    c.full.push_back(current);
    current = Buffer{};
    woke = true;
  }
  return woke;
}

namespace {

// The sink is registered while any channel has a kind enabled, so that a
// process that never enables one pays nothing (sim.h, "activity").
void update_sink() {
  bool any = false;
  int n = g_channel_count.load(std::memory_order_acquire);
  for (int i = 0; i < n && !any; ++i) {
    Channel& c = *g_channels[i].load(std::memory_order_acquire);
    std::lock_guard<std::mutex> l(c.mu);
    any = c.kinds.any();
  }
  gpusim::set_activity_sink(any ? &on_op : nullptr);
}

// Sets `kind` in `c`. Kinds the model never produces are accepted (their
// records simply never come): what a tool enabling many kinds (Kineto)
// needs to carry on.
CUptiResult set_kind(Channel& c, CUpti_ActivityKind kind, bool on) {
  if (kind <= CUPTI_ACTIVITY_KIND_INVALID || kind >= CUPTI_ACTIVITY_KIND_COUNT) return CUPTI_ERROR_INVALID_KIND;
  {
    std::lock_guard<std::mutex> l(c.mu);
    switch (kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL: c.kinds.kernel = on; break;
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: c.kinds.concurrent_kernel = on; break;
      case CUPTI_ACTIVITY_KIND_MEMCPY: c.kinds.memcpy = on; break;
      case CUPTI_ACTIVITY_KIND_MEMSET: c.kinds.memset = on; break;
      default: break;
    }
  }
  update_sink();
  return CUPTI_SUCCESS;
}

}  // namespace

int channel_count() { return g_channel_count.load(std::memory_order_acquire); }

Channel& channel_at(int i) { return *g_channels[i].load(std::memory_order_acquire); }

Channel& legacy_channel() {
  static Channel* c = [] {
    auto* n = new Channel();  // never freed: the sink may be reading it
    add_channel(n);
    return n;
  }();
  return *c;
}

void add_channel(Channel* c) {
  std::lock_guard<std::mutex> l(g_channels_mu);
  int n = g_channel_count.load(std::memory_order_relaxed);
  if (n >= kMaxChannels) {
    unmodeled("more than 256 subscribers over the process's life");
    return;  // this channel gets no records
  }
  g_channels[n].store(c, std::memory_order_release);
  g_channel_count.store(n + 1, std::memory_order_release);
}

std::vector<Channel*> channels() {
  legacy_channel();
  std::vector<Channel*> out;
  int n = g_channel_count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) out.push_back(g_channels[i].load(std::memory_order_acquire));
  return out;
}

void flush_channel(Channel& c, bool all_buffers) {
  std::unique_lock<std::mutex> l(c.mu);
  for (auto it = c.filling.begin(); it != c.filling.end();) {
    Buffer& b = it->second;
    if (b.base && b.records == 0 && !all_buffers) {
      ++it;  // an empty buffer stays with its thread
      continue;
    }
    if (b.base) c.full.push_back(b);
    it = c.filling.erase(it);
  }
  deliver_queued(c, l);
  // What the worker is handing over right now counts as not yet delivered.
  if (!t_in_completion) c.delivered.wait(l, [&] { return c.delivering == 0; });
}

void disable_all(Channel& c) {
  {
    std::lock_guard<std::mutex> l(c.mu);
    c.kinds = Kinds{};
  }
  update_sink();
}

}  // namespace cuptisim

using namespace cuptisim;

// ---- enabling kinds ----

CUPTISIM_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  return set_kind(legacy_channel(), kind, true);
}
CUPTISIM_EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  return set_kind(legacy_channel(), kind, false);
}
CUPTISIM_EXPORT CUptiResult cuptiActivityEnable_v2(CUpti_SubscriberHandle subscriber, CUpti_ActivityKind kind,
                                                   CUpti_ActivityConfig* config) {
  (void)config;
  Channel* c = subscriber_channel(subscriber);
  return c ? set_kind(*c, kind, true) : CUPTI_ERROR_INVALID_PARAMETER;
}
CUPTISIM_EXPORT CUptiResult cuptiActivityDisable_v2(CUpti_SubscriberHandle subscriber, CUpti_ActivityKind kind,
                                                    CUpti_ActivityConfig* config) {
  (void)config;
  Channel* c = subscriber_channel(subscriber);
  return c ? set_kind(*c, kind, false) : CUPTI_ERROR_INVALID_PARAMETER;
}

// ---- buffers ----

namespace {

// Installs new callbacks in `c`. The buffers it holds came from the old
// buffer-requested callback: they go back to the old completed callback
// first (the one still being filled too), so a tool whose registration is
// replaced by another's (two tools using the process-wide calls) gets its
// own buffers back rather than the other tool getting buffers it never gave.
void replace_callbacks(Channel& c, CUpti_BuffersCallbackRequestFunc rq, CUpti_BuffersCallbackCompleteFunc cp,
                       CUpti_BuffersCallbackRequestFunc_v2 rq2, CUpti_BuffersCallbackCompleteFunc_v2 cp2) {
  std::unique_lock<std::mutex> l(c.mu);
  std::deque<Buffer> theirs;
  theirs.swap(c.full);
  for (auto& [thread, b] : c.filling)
    if (b.base) theirs.push_back(b);
  c.filling.clear();
  auto old_cp = c.complete;
  auto old_cp2 = c.complete_v2;
  c.request = rq;
  c.complete = cp;
  c.request_v2 = rq2;
  c.complete_v2 = cp2;
  c.delivering += static_cast<int>(theirs.size());
  l.unlock();
  for (const Buffer& b : theirs) complete(c, old_cp, old_cp2, b);
  l.lock();
  c.delivering -= static_cast<int>(theirs.size());
  if (c.delivering == 0) c.delivered.notify_all();
}

}  // namespace

CUPTISIM_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                           CUpti_BuffersCallbackCompleteFunc completed) {
  if (!requested || !completed) return CUPTI_ERROR_INVALID_PARAMETER;
  replace_callbacks(legacy_channel(), requested, completed, nullptr, nullptr);
  return CUPTI_SUCCESS;
}

CUPTISIM_EXPORT CUptiResult cuptiActivityRegisterCallbacks_v2(CUpti_SubscriberHandle subscriber,
                                                              CUpti_BuffersCallbackRequestFunc_v2 requested,
                                                              CUpti_BuffersCallbackCompleteFunc_v2 completed) {
  if (!requested || !completed) return CUPTI_ERROR_INVALID_PARAMETER;
  Channel* c = subscriber_channel(subscriber);
  if (!c) return CUPTI_ERROR_INVALID_PARAMETER;
  replace_callbacks(*c, nullptr, nullptr, requested, completed);
  return CUPTI_SUCCESS;
}

// Every channel, not only the caller's: CUPTI has no per-subscriber flush,
// so a tool's flush also completes the other subscribers' buffers (on this
// thread, through their own callbacks).
CUPTISIM_EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  (void)flag;  // every record is complete when written: forced or not, the same
  bool any_registered = false;
  for (Channel* c : channels()) {
    {
      std::lock_guard<std::mutex> l(c->mu);
      if (!c->registered()) continue;
    }
    any_registered = true;
    flush_channel(*c, false);
  }
  return any_registered ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_OPERATION;
}

CUPTISIM_EXPORT CUptiResult cuptiActivityFlush(CUcontext context, uint32_t stream_id, uint32_t flag) {
  (void)context, (void)stream_id;
  return cuptiActivityFlushAll(flag);
}

// Full buffers are completed at once by the worker; a period changes
// nothing the model can show (README.md, "CUPTI").
CUPTISIM_EXPORT CUptiResult cuptiActivityFlushPeriod(uint32_t time_ms) {
  (void)time_ms;
  return CUPTI_SUCCESS;
}

// Process-wide: CUPTI has no per-subscriber call, so the count is every
// channel's, and reading it resets it for every subscriber.
CUPTISIM_EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream_id,
                                                              size_t* dropped) {
  (void)context, (void)stream_id;
  if (!dropped) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t total = 0;
  for (Channel* c : channels()) {
    std::lock_guard<std::mutex> l(c->mu);
    total += c->dropped;
    c->dropped = 0;
  }
  *dropped = total;
  return CUPTI_SUCCESS;
}

// ---- attributes ----

namespace {

CUptiResult get_attribute(CUpti_ActivityAttribute attr, size_t* size, void* value) {
  if (!size || !value) return CUPTI_ERROR_INVALID_PARAMETER;
  auto put = [&](const void* v, size_t n) {
    if (*size < n) return CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT;
    std::memcpy(value, v, n);
    *size = n;
    return CUPTI_SUCCESS;
  };
  switch (attr) {
    case CUPTI_ACTIVITY_ATTR_MULTIPLE_SUBSCRIBER_STATE: {
      uint8_t state = multiple_subscriber_state();
      return put(&state, sizeof(state));
    }
    case CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE:
    case CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE_CDP: {
      size_t v = 8u << 20;
      return put(&v, sizeof(v));
    }
    case CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT: {
      size_t v = 250;
      return put(&v, sizeof(v));
    }
    case CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER: {
      uint8_t v = per_thread_buffers() ? 1 : 0;
      return put(&v, sizeof(v));
    }
    default:
      return CUPTI_ERROR_NOT_SUPPORTED;
  }
}

}  // namespace

// Per-thread buffers (a uint8_t) are kept: process-wide, and meant to be set
// before the buffer callbacks are registered ("changing this attribute in
// the middle of the profiling session will result in undefined behavior":
// here, buffers already being filled stay as they are). The rest is
// accepted and kept by no one: the simulated device has no device-side
// buffers to size. The multiple-subscriber state cannot be set (as
// documented).
CUPTISIM_EXPORT CUptiResult cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t* size, void* value) {
  if (!size || !value) return CUPTI_ERROR_INVALID_PARAMETER;
  if (attr == CUPTI_ACTIVITY_ATTR_MULTIPLE_SUBSCRIBER_STATE) return CUPTI_ERROR_INVALID_PARAMETER;
  if (attr == CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER) {
    if (*size < sizeof(uint8_t)) return CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT;
    g_per_thread.store(*static_cast<uint8_t*>(value) != 0, std::memory_order_relaxed);
  }
  return CUPTI_SUCCESS;
}
CUPTISIM_EXPORT CUptiResult cuptiActivityGetAttribute(CUpti_ActivityAttribute attr, size_t* size, void* value) {
  return get_attribute(attr, size, value);
}
CUPTISIM_EXPORT CUptiResult cuptiActivitySetAttribute_v2(CUpti_SubscriberHandle subscriber,
                                                         CUpti_ActivityAttribute attr, size_t* size, void* value) {
  if (!is_subscriber(subscriber)) return CUPTI_ERROR_INVALID_PARAMETER;
  // "CUPTI_ERROR_NOT_SUPPORTED if multiple subscribers are not allowed."
  if (multiple_subscriber_state() != 1) return CUPTI_ERROR_NOT_SUPPORTED;
  return cuptiActivitySetAttribute(attr, size, value);
}
CUPTISIM_EXPORT CUptiResult cuptiActivityGetAttribute_v2(CUpti_SubscriberHandle subscriber,
                                                         CUpti_ActivityAttribute attr, size_t* size, void* value) {
  if (!is_subscriber(subscriber)) return CUPTI_ERROR_INVALID_PARAMETER;
  return get_attribute(attr, size, value);
}

// ---- ids ----

CUPTISIM_EXPORT CUptiResult cuptiGetStreamIdEx(CUcontext context, CUstream stream, uint8_t per_thread,
                                               uint32_t* stream_id) {
  (void)context;
  if (!stream_id) return CUPTI_ERROR_INVALID_PARAMETER;
  CUstream_st* s = gpusim::resolve(stream, per_thread != 0);
  if (!s) return CUPTI_ERROR_INVALID_STREAM;
  *stream_id = s->id;
  return CUPTI_SUCCESS;
}
CUPTISIM_EXPORT CUptiResult cuptiGetStreamId(CUcontext context, CUstream stream, uint32_t* stream_id) {
  return cuptiGetStreamIdEx(context, stream, 0, stream_id);
}

// libcupti.so.13 of the simulated device: the Activity API (README.md,
// "CUPTI"), after docs.nvidia.com/cupti "CUPTI Activity API" and the
// comments of cupti_activity.h 13.2.
//
//   - Records: CUpti_ActivityKernel11 (kind CONCURRENT_KERNEL when enabled,
//     else KERNEL), CUpti_ActivityMemcpy6, CUpti_ActivityMemset4, made from
//     the simulated device's own start and end of each op (libgpusim's
//     activity sink, sim.h), packed one after another in the client's
//     buffers, which cuptiActivityGetNextRecord walks.
//   - Buffers come from the client's buffer-requested callback when a record
//     needs one; "the callback function can decline the request by setting
//     *buffer to NULL. In this case CUPTI may drop activity records": the
//     record is dropped and counted (cuptiActivityGetNumDroppedRecords).
//   - A full buffer (or one at maxNumRecords) is completed on CUPTI's own
//     worker thread, as real CUPTI completes buffers from its worker;
//     cuptiActivityFlushAll completes every buffer that holds records on the
//     calling thread, after any delivery the worker has in progress.
//   - Timestamps: CUPTI's Linux timebase is CLOCK_REALTIME ("By default CUPTI
//     uses ... clock_gettime(CLOCK_REALTIME)", cuptiActivityRegisterTimestampCallback),
//     so records and cuptiGetTimestamp are the device's CLOCK_MONOTONIC stamps
//     moved by a fixed offset sampled once; a registered timestamp callback
//     replaces the timebase, GPU times being converted at post-processing.
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <ctime>

#include "cupti_internal.h"

namespace cuptisim {
namespace {

// ------------------------------------------------------------- timebase --

std::atomic<CUpti_TimestampCallbackFunc> g_timestamp_cb{nullptr};

int64_t realtime_minus_monotonic() {
  static const int64_t offset = [] {
    timespec rt{};
    clock_gettime(CLOCK_REALTIME, &rt);
    int64_t mono = gpusim::now_ns();
    return static_cast<int64_t>(rt.tv_sec) * 1000000000 + rt.tv_nsec - mono;
  }();
  return offset;
}

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
std::atomic<int64_t> g_grid_id{0};

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

// Asks the client for a buffer. Channel lock held. False: none given.
bool request_buffer(Channel& c) {
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
  if (!buf || size == 0) return false;
  c.current = Buffer{buf, size, 0, max_records, 0};
  return true;
}

// Appends one record to `c`, or drops and counts it. Returns true when a
// buffer became full (the worker is to be woken).
bool append(Channel& c, const void* record, size_t size) {
  std::lock_guard<std::mutex> l(c.mu);
  if (!c.registered() || gpusim::should_fail("cuptiRecord")) {
    ++c.dropped;
    return false;
  }
  bool woke = false;
  if (c.current.base && c.current.used + size > c.current.size) {
    c.full.push_back(c.current);
    c.current = Buffer{};
    woke = true;
  }
  if (!c.current.base && !request_buffer(c)) {
    ++c.dropped;
    return woke;
  }
  if (c.current.used + size > c.current.size) {
    // Too small for even one record: given back empty, the record dropped.
    c.full.push_back(c.current);
    c.current = Buffer{};
    ++c.dropped;
    return true;
  }
  std::memcpy(c.current.base + c.current.used, record, size);
  c.current.used += size;
  if (++c.current.records == c.current.max_records) {
    c.full.push_back(c.current);
    c.current = Buffer{};
    woke = true;
  }
  return woke;
}

uint8_t memory_kind(gpusim::Where w) {
  switch (w) {
    case gpusim::Where::kDevice: return CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    case gpusim::Where::kPinned: return CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    case gpusim::Where::kPageable: return CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  }
  return CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN;
}

uint8_t copy_kind(const gpusim::OpInfo& i) {
  using gpusim::Where;
  if (i.src == Where::kDevice && i.dst == Where::kDevice)
    return i.peer ? CUPTI_ACTIVITY_MEMCPY_KIND_PTOP : CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
  if (i.src == Where::kDevice) return CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  if (i.dst == Where::kDevice) return CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  return CUPTI_ACTIVITY_MEMCPY_KIND_HTOH;
}

// libgpusim's sink: one finished op, on its stream's worker thread.
void on_op(const gpusim::OpRecord& op) {
  const uint64_t start = to_cupti_time(op.start_ns);
  const uint64_t end = start + static_cast<uint64_t>(op.end_ns - op.start_ns);
  const uint32_t device = static_cast<uint32_t>(op.device);
  const uint32_t context = device + 1;  // the primary context's id
  CUpti_ActivityKernel11 k;
  CUpti_ActivityMemcpy6 cp;
  CUpti_ActivityMemset4 ms;
  bool made = false;
  bool woke = false;
  int n = g_channel_count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    Channel& c = *g_channels[i].load(std::memory_order_acquire);
    Kinds kinds;
    {
      std::lock_guard<std::mutex> l(c.mu);
      kinds = c.kinds;
    }
    switch (op.info.kind) {
      case gpusim::OpKind::kKernel: {
        if (!kinds.kernel && !kinds.concurrent_kernel) continue;
        if (!made) {
          std::memset(&k, 0, sizeof(k));
          k.start = start;
          k.end = end;
          k.completed = end;
          k.deviceId = device;
          k.contextId = context;
          k.streamId = op.stream_id;
          k.gridX = static_cast<int32_t>(op.info.blocks);
          k.gridY = k.gridZ = 1;
          k.blockX = k.blockY = k.blockZ = 1;
          k.correlationId = op.info.correlation;
          k.gridId = g_grid_id.fetch_add(1, std::memory_order_relaxed) + 1;
          k.name = op.info.name ? op.info.name : "gpusim_kernel";
          k.queued = k.submitted = CUPTI_TIMESTAMP_UNKNOWN;
          k.launchType = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
          made = true;
        }
        k.kind = kinds.concurrent_kernel ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL : CUPTI_ACTIVITY_KIND_KERNEL;
        woke |= append(c, &k, sizeof(k));
        break;
      }
      case gpusim::OpKind::kMemcpy: {
        if (!kinds.memcpy) continue;
        if (!made) {
          std::memset(&cp, 0, sizeof(cp));
          cp.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
          cp.copyKind = copy_kind(op.info);
          cp.srcKind = memory_kind(op.info.src);
          cp.dstKind = memory_kind(op.info.dst);
          cp.bytes = op.info.bytes;
          cp.start = start;
          cp.end = end;
          cp.deviceId = device;
          cp.contextId = context;
          cp.streamId = op.stream_id;
          cp.correlationId = op.info.correlation;
          cp.copyCount = 1;
          made = true;
        }
        woke |= append(c, &cp, sizeof(cp));
        break;
      }
      case gpusim::OpKind::kMemset: {
        if (!kinds.memset) continue;
        if (!made) {
          std::memset(&ms, 0, sizeof(ms));
          ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
          ms.value = op.info.memset_value;
          ms.bytes = op.info.bytes;
          ms.start = start;
          ms.end = end;
          ms.deviceId = device;
          ms.contextId = context;
          ms.streamId = op.stream_id;
          ms.correlationId = op.info.correlation;
          ms.memoryKind = memory_kind(op.info.dst);
          made = true;
        }
        woke |= append(c, &ms, sizeof(ms));
        break;
      }
      case gpusim::OpKind::kOther:
        return;
    }
  }
  if (woke) wake_worker();
}

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

size_t record_size(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel11);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    default: return 0;
  }
}

}  // namespace

uint64_t cupti_now() {
  if (CUpti_TimestampCallbackFunc cb = g_timestamp_cb.load(std::memory_order_acquire)) return cb();
  return static_cast<uint64_t>(gpusim::now_ns() + realtime_minus_monotonic());
}

uint64_t to_cupti_time(int64_t steady_ns) {
  if (CUpti_TimestampCallbackFunc cb = g_timestamp_cb.load(std::memory_order_acquire))
    return cb() - static_cast<uint64_t>(gpusim::now_ns() - steady_ns);
  return static_cast<uint64_t>(steady_ns + realtime_minus_monotonic());
}

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
  if (c.current.base && (c.current.records > 0 || all_buffers)) {
    c.full.push_back(c.current);
    c.current = Buffer{};
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

CUPTISIM_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                           CUpti_BuffersCallbackCompleteFunc completed) {
  if (!requested || !completed) return CUPTI_ERROR_INVALID_PARAMETER;
  Channel& c = legacy_channel();
  std::lock_guard<std::mutex> l(c.mu);
  c.request = requested;
  c.complete = completed;
  c.request_v2 = nullptr;
  c.complete_v2 = nullptr;
  return CUPTI_SUCCESS;
}

CUPTISIM_EXPORT CUptiResult cuptiActivityRegisterCallbacks_v2(CUpti_SubscriberHandle subscriber,
                                                              CUpti_BuffersCallbackRequestFunc_v2 requested,
                                                              CUpti_BuffersCallbackCompleteFunc_v2 completed) {
  if (!requested || !completed) return CUPTI_ERROR_INVALID_PARAMETER;
  Channel* c = subscriber_channel(subscriber);
  if (!c) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> l(c->mu);
  c->request_v2 = requested;
  c->complete_v2 = completed;
  c->request = nullptr;
  c->complete = nullptr;
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

CUPTISIM_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid_bytes, CUpti_Activity** record) {
  if (!buffer || !record) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t offset = 0;
  if (*record) {
    auto* at = reinterpret_cast<uint8_t*>(*record);
    if (at < buffer || at >= buffer + valid_bytes) return CUPTI_ERROR_INVALID_PARAMETER;
    size_t size = record_size((*record)->kind);
    if (size == 0) return CUPTI_ERROR_INVALID_KIND;
    offset = static_cast<size_t>(at - buffer) + size;
  }
  if (offset >= valid_bytes) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  if (valid_bytes - offset < sizeof(CUpti_ActivityKind)) return CUPTI_ERROR_INVALID_KIND;
  auto* next = reinterpret_cast<CUpti_Activity*>(buffer + offset);
  size_t size = record_size(next->kind);
  if (size == 0 || offset + size > valid_bytes) return CUPTI_ERROR_INVALID_KIND;
  *record = next;
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

// ---- timestamps ----

CUPTISIM_EXPORT CUptiResult cuptiGetTimestamp(uint64_t* timestamp) {
  if (!timestamp) return CUPTI_ERROR_INVALID_PARAMETER;
  *timestamp = cupti_now();
  return CUPTI_SUCCESS;
}

CUPTISIM_EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn) {
  if (!fn) return CUPTI_ERROR_INVALID_PARAMETER;
  g_timestamp_cb.store(fn, std::memory_order_release);
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
    default:
      return CUPTI_ERROR_NOT_SUPPORTED;
  }
}

}  // namespace

// Accepted and kept by no one: the simulated device has no device-side
// buffers to size. The multiple-subscriber state cannot be set (as
// documented).
CUPTISIM_EXPORT CUptiResult cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t* size, void* value) {
  if (!size || !value) return CUPTI_ERROR_INVALID_PARAMETER;
  if (attr == CUPTI_ACTIVITY_ATTR_MULTIPLE_SUBSCRIBER_STATE) return CUPTI_ERROR_INVALID_PARAMETER;
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

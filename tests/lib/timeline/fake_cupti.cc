#include "fake_cupti.h"

#include <cstring>
#include <ctime>

namespace gpuslack {
namespace fake_cupti {
namespace {

State* g_state = new State();

size_t record_size(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel11);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(CUpti_ActivityMemcpyPtoP4);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    default: return sizeof(CUpti_ActivityAPI);
  }
}

size_t aligned(size_t n) { return (n + 7) & ~size_t{7}; }

void write_holder(CUpti_SubscriberParams* p, const std::string& name) {
  if (!p || !p->oldSubscriberName || p->oldSubscriberSize == 0) return;
  std::string full = name.empty() ? std::string() : "CUPTI for " + name;
  std::strncpy(p->oldSubscriberName, full.c_str(), p->oldSubscriberSize - 1);
  p->oldSubscriberName[p->oldSubscriberSize - 1] = '\0';
}

CUptiResult subscribe_v2(CUpti_SubscriberHandle* h, CUpti_CallbackFunc, void*, CUpti_SubscriberParams* p) {
  State& s = state();
  ++s.subscribe_calls;
  s.last_allow = p ? p->allowMultipleSubscribers : 0;
  if (!s.holder.empty()) {
    write_holder(p, s.holder);
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  if (s.last_allow == 1 && !s.multi_supported) {
    write_holder(p, "");
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  s.subscribed = true;
  *h = reinterpret_cast<CUpti_SubscriberHandle>(g_state);
  return CUPTI_SUCCESS;
}

CUptiResult subscribe(CUpti_SubscriberHandle* h, CUpti_CallbackFunc cb, void* user) {
  State& s = state();
  if (!s.holder.empty()) {
    ++s.subscribe_calls;
    s.last_allow = -1;
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  CUptiResult r = subscribe_v2(h, cb, user, nullptr);
  s.last_allow = -1;
  return r;
}

CUptiResult unsubscribe(CUpti_SubscriberHandle) {
  state().subscribed = false;
  return CUPTI_SUCCESS;
}

CUptiResult enable(CUpti_ActivityKind kind) {
  state().enabled.push_back(kind);
  return CUPTI_SUCCESS;
}

CUptiResult disable(CUpti_ActivityKind kind) {
  auto& e = state().enabled;
  for (size_t i = 0; i < e.size(); ++i)
    if (e[i] == kind) {
      e.erase(e.begin() + static_cast<long>(i));
      break;
    }
  return CUPTI_SUCCESS;
}

CUptiResult enable_v2(CUpti_SubscriberHandle, CUpti_ActivityKind kind, CUpti_ActivityConfig*) { return enable(kind); }
CUptiResult disable_v2(CUpti_SubscriberHandle, CUpti_ActivityKind kind, CUpti_ActivityConfig*) {
  return disable(kind);
}

CUptiResult register_callbacks(CUpti_BuffersCallbackRequestFunc rq, CUpti_BuffersCallbackCompleteFunc cp) {
  state().request = rq;
  state().complete = cp;
  state().used_legacy_callbacks = true;
  return CUPTI_SUCCESS;
}

CUptiResult register_callbacks_v2(CUpti_SubscriberHandle, CUpti_BuffersCallbackRequestFunc_v2 rq,
                                  CUpti_BuffersCallbackCompleteFunc_v2 cp) {
  state().request_v2 = rq;
  state().complete_v2 = cp;
  state().used_v2_callbacks = true;
  return CUPTI_SUCCESS;
}

CUptiResult flush_all(uint32_t) {
  ++state().flushes;
  complete_pending();
  return CUPTI_SUCCESS;
}

CUptiResult get_next_record(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  size_t offset = 0;
  if (*record) {
    offset = static_cast<size_t>(reinterpret_cast<uint8_t*>(*record) - buffer);
    offset += aligned(record_size((*record)->kind));
  }
  if (offset + sizeof(CUpti_Activity) > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(buffer + offset);
  return CUPTI_SUCCESS;
}

CUptiResult dropped_records(CUcontext, uint32_t, size_t* dropped) {
  *dropped = state().dropped.exchange(0);
  return CUPTI_SUCCESS;
}

CUptiResult get_timestamp(uint64_t* ns) {
  *ns = now_ns();
  return CUPTI_SUCCESS;
}

CUptiResult result_string(CUptiResult r, const char** text) {
  *text = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
                                                               : "fake CUPTI error";
  return CUPTI_SUCCESS;
}

CUptiResult get_version(uint32_t* v) {
  *v = g_state->version;
  return CUPTI_SUCCESS;
}

cuda::CuptiApi g_api;

}  // namespace

State& state() { return *g_state; }

void reset() {
  // The old state is kept, never freed: its held buffers are the
  // (destroyed) session's. Kept reachable, so that the leak checker does not
  // count it. Call only while no session's worker runs.
  static std::vector<State*>* retired = new std::vector<State*>();
  retired->push_back(g_state);
  g_state = new State();
}

const cuda::CuptiApi* api() {
  g_api = cuda::CuptiApi{};
  g_api.subscribe = subscribe;
  g_api.unsubscribe = unsubscribe;
  g_api.activity_enable = enable;
  g_api.activity_disable = disable;
  g_api.activity_register_callbacks = register_callbacks;
  g_api.activity_flush_all = flush_all;
  g_api.activity_get_next_record = get_next_record;
  g_api.activity_get_num_dropped_records = dropped_records;
  g_api.get_timestamp = get_timestamp;
  g_api.get_result_string = result_string;
  if (state().version) g_api.get_version = get_version;
  if (state().has_v2) {
    g_api.subscribe_v2 = subscribe_v2;
    g_api.activity_enable_v2 = enable_v2;
    g_api.activity_disable_v2 = disable_v2;
    g_api.activity_register_callbacks_v2 = register_callbacks_v2;
  }
  return &g_api;
}

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec) +
         static_cast<uint64_t>(state().ns_offset);
}

CUpti_ActivityKernel11 kernel(const char* name, uint64_t start, uint64_t end, uint32_t device) {
  CUpti_ActivityKernel11 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = end;
  k.deviceId = device;
  k.name = name;
  return k;
}

CUpti_ActivityMemcpy6 memcpy_record(uint64_t start, uint64_t end, uint32_t device) {
  CUpti_ActivityMemcpy6 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.start = start;
  m.end = end;
  m.deviceId = device;
  return m;
}

CUpti_ActivityMemcpyPtoP4 peer_copy(uint64_t start, uint64_t end, uint32_t device) {
  CUpti_ActivityMemcpyPtoP4 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  m.start = start;
  m.end = end;
  m.deviceId = device;
  return m;
}

CUpti_ActivityMemset4 memset_record(uint64_t start, uint64_t end, uint32_t device) {
  CUpti_ActivityMemset4 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m.start = start;
  m.end = end;
  m.deviceId = device;
  return m;
}

bool fill_buffer(const std::vector<AnyRecord>& records) {
  State& s = state();
  uint8_t* buffer = nullptr;
  size_t size = 0, max_records = 0;
  if (s.request_v2) {
    CUpti_BufferCallbackRequestInfo info{sizeof(info)};
    s.request_v2(&buffer, &size, &max_records, &info);
  } else if (s.request) {
    s.request(&buffer, &size, &max_records);
  }
  if (!buffer) {
    s.dropped += records.size();
    return false;
  }
  size_t offset = 0;
  for (const AnyRecord& r : records) {
    if (offset + aligned(r.bytes.size()) > size) break;
    std::memcpy(buffer + offset, r.bytes.data(), r.bytes.size());
    offset += aligned(r.bytes.size());
  }
  s.pending.push_back({buffer, size, offset});
  return true;
}

void complete_pending() {
  State& s = state();
  std::vector<State::Pending> pending;
  pending.swap(s.pending);
  for (const State::Pending& p : pending) {
    if (s.complete_v2) {
      CUpti_BufferCallbackCompleteInfo info{};
      info.structSize = sizeof(info);
      s.complete_v2(p.buffer, p.size, p.valid, &info);
    } else if (s.complete) {
      s.complete(nullptr, 0, p.buffer, p.size, p.valid);
    }
  }
}

}  // namespace fake_cupti
}  // namespace gpuslack

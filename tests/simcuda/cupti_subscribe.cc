// libcupti.so.13 of the simulated device: subscribers, the Callback API,
// versions, result strings and cuptiFinalize (README.md, "CUPTI").
//
// Subscribers follow cupti_callbacks.h 13.2 (cuptiSubscribe,
// cuptiSubscribe_v2, CUpti_SubscriberParams; docs.nvidia.com/cupti, "CUPTI
// Callback API" and the CUpti_SubscriberParams reference):
//   - several subscribers exist only where CUPTI allows it: a CUPTI after
//     13.2 on an r610 or newer driver (Knobs::multi_supported), and only
//     subscribers that all asked for it (cuptiSubscribe_v2 with
//     allowMultipleSubscribers = 1);
//   - otherwise a subscribe while anyone holds CUPTI fails with
//     CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, and cuptiSubscribe_v2
//     writes the holder's name ("CUPTI for <subscriberName>", or the tool's
//     name) into oldSubscriberName; a request for several subscribers that
//     cannot be fulfilled fails the same way even with no holder (the name
//     is then empty);
//   - GPUSIM_CUPTI_HELD_BY stands for a tool attached from outside the
//     process (Nsight Systems): every subscribe fails with its name.
// Callbacks of the Callback API are recorded and never called: the
// simulated runtime and driver issue no API callbacks.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "cupti_internal.h"

namespace cuptisim {

const Knobs& knobs() {
  static const Knobs* k = [] {
    auto* n = new Knobs();  // never freed: read at exit
    if (const char* v = std::getenv("GPUSIM_CUPTI_VERSION"); v && *v)
      n->cupti_version = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
    if (const char* v = std::getenv("GPUSIM_DRIVER_VERSION"); v && *v)
      n->driver_branch = static_cast<int>(std::strtol(v, nullptr, 10));
    const char* version = std::getenv("GPUSIM_CUPTI_VERSION");
    if ((!version || !*version) && n->driver_branch >= 610) n->cupti_version = 130300;
    if (const char* v = std::getenv("GPUSIM_CUPTI_HELD_BY"); v && *v) n->held_by = v;
    return n;
  }();
  return *k;
}

namespace {

// What a legacy subscriber (cuptiSubscribe, which takes no name) is called
// in oldSubscriberName.
constexpr const char* kUnnamed = "CUPTI (unnamed subscriber)";

struct Registry {
  std::mutex mu;
  std::vector<std::unique_ptr<Subscriber>> live;
  std::vector<Channel*> idle_channels;  // of subscribers gone, for reuse
};
Registry& registry() {
  static auto* r = new Registry();  // never freed: used at exit
  return *r;
}

void write_name(const CUpti_SubscriberParams* p, const std::string& name) {
  if (!p || !p->oldSubscriberName || p->oldSubscriberSize == 0) return;
  std::snprintf(p->oldSubscriberName, p->oldSubscriberSize, "%s", name.c_str());
}

CUptiResult subscribe(CUpti_SubscriberHandle* out, CUpti_CallbackFunc cb, void* userdata,
                      const CUpti_SubscriberParams* p, bool v2) {
  if (!out) return CUPTI_ERROR_INVALID_PARAMETER;
  if (p && p->structSize == 0) return CUPTI_ERROR_INVALID_PARAMETER;
  const bool wants_multiple = v2 && p && p->allowMultipleSubscribers;
  const Knobs& k = knobs();
  if (!k.held_by.empty()) {
    write_name(p, k.held_by);
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> l(r.mu);
  if (!r.live.empty()) {
    const Subscriber& first = *r.live.front();
    bool together = wants_multiple && k.multi_supported() && first.allows_multiple;
    if (!together) {
      write_name(p, first.name);
      return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    }
    // "If multiple subscribers are allowed, this will be the name of the
    // first subscriber" (CUpti_SubscriberParams).
    write_name(p, first.name);
  } else if (wants_multiple && !k.multi_supported()) {
    write_name(p, "");
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  auto s = std::make_unique<Subscriber>();
  if (v2 && p && p->subscriberName)
    s->name = std::string("CUPTI for ") + std::string(p->subscriberName).substr(0, CUPTI_SUBSCRIBER_NAME_MAX_LEN);
  else
    s->name = kUnnamed;
  s->allows_multiple = wants_multiple;
  s->callback = cb;
  s->userdata = userdata;
  if (!r.idle_channels.empty()) {
    s->channel = r.idle_channels.back();
    r.idle_channels.pop_back();
  } else {
    s->channel = new Channel();  // never freed: the sink may be reading it
    add_channel(s->channel);
  }
  *out = reinterpret_cast<CUpti_SubscriberHandle>(s.get());
  r.live.push_back(std::move(s));
  return CUPTI_SUCCESS;
}

// Retires a subscriber's channel: no more records; its buffers go back to
// the client; then it waits, idle, for the next subscriber.
void retire(Channel* c) {
  disable_all(*c);
  flush_channel(*c, /*all_buffers=*/true);
  std::lock_guard<std::mutex> l(c->mu);
  c->request = nullptr;
  c->complete = nullptr;
  c->request_v2 = nullptr;
  c->complete_v2 = nullptr;
  c->dropped = 0;
}

}  // namespace

Channel* subscriber_channel(CUpti_SubscriberHandle h) {
  Registry& r = registry();
  std::lock_guard<std::mutex> l(r.mu);
  for (auto& s : r.live)
    if (reinterpret_cast<CUpti_SubscriberHandle>(s.get()) == h) return s->channel;
  return nullptr;
}

bool is_subscriber(CUpti_SubscriberHandle h) { return subscriber_channel(h) != nullptr; }

uint8_t multiple_subscriber_state() {
  Registry& r = registry();
  std::lock_guard<std::mutex> l(r.mu);
  if (r.live.empty()) return 2;
  return r.live.front()->allows_multiple ? 1 : 0;
}

void drop_all_subscribers() {
  std::vector<std::unique_ptr<Subscriber>> gone;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> l(r.mu);
    gone.swap(r.live);
  }
  for (auto& s : gone) {
    retire(s->channel);
    Registry& r = registry();
    std::lock_guard<std::mutex> l(r.mu);
    r.idle_channels.push_back(s->channel);
  }
}

}  // namespace cuptisim

using namespace cuptisim;

CUPTISIM_EXPORT CUptiResult cuptiGetVersion(uint32_t* version) {
  if (!version) return CUPTI_ERROR_INVALID_PARAMETER;
  *version = knobs().cupti_version;
  return CUPTI_SUCCESS;
}

CUPTISIM_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                           void* userdata) {
  return subscribe(subscriber, callback, userdata, nullptr, false);
}

CUPTISIM_EXPORT CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                              void* userdata, CUpti_SubscriberParams* params) {
  return subscribe(subscriber, callback, userdata, params, true);
}

CUPTISIM_EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  std::unique_ptr<Subscriber> gone;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> l(r.mu);
    for (auto it = r.live.begin(); it != r.live.end(); ++it)
      if (reinterpret_cast<CUpti_SubscriberHandle>(it->get()) == subscriber) {
        gone = std::move(*it);
        r.live.erase(it);
        break;
      }
  }
  if (!gone) return CUPTI_ERROR_INVALID_PARAMETER;
  retire(gone->channel);
  Registry& r = registry();
  std::lock_guard<std::mutex> l(r.mu);
  r.idle_channels.push_back(gone->channel);
  return CUPTI_SUCCESS;
}

// ---- the Callback API: recorded, never called ----

CUPTISIM_EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                                CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  (void)enable, (void)cbid;
  if (!is_subscriber(subscriber)) return CUPTI_ERROR_INVALID_PARAMETER;
  if (domain <= CUPTI_CB_DOMAIN_INVALID || domain >= CUPTI_CB_DOMAIN_SIZE) return CUPTI_ERROR_INVALID_PARAMETER;
  return CUPTI_SUCCESS;
}

CUPTISIM_EXPORT CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                              CUpti_CallbackDomain domain) {
  return cuptiEnableCallback(enable, subscriber, domain, 0);
}

CUPTISIM_EXPORT CUptiResult cuptiEnableAllDomains(uint32_t enable, CUpti_SubscriberHandle subscriber) {
  (void)enable;
  return is_subscriber(subscriber) ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

CUPTISIM_EXPORT CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
  if (!name || domain <= CUPTI_CB_DOMAIN_INVALID || domain >= CUPTI_CB_DOMAIN_SIZE)
    return CUPTI_ERROR_INVALID_PARAMETER;
  // No table of the real names: a stable one per (domain, id).
  std::string n = "gpusim_callback_" + std::to_string(static_cast<int>(domain)) + "_" + std::to_string(cbid);
  *name = gpusim::intern_name(n.c_str());
  return CUPTI_SUCCESS;
}

// ---- results ----

CUPTISIM_EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char** str) {
  if (!str) return CUPTI_ERROR_INVALID_PARAMETER;
  switch (result) {
#define CUPTISIM_RESULT(r) \
  case r: *str = #r; return CUPTI_SUCCESS;
    CUPTISIM_RESULT(CUPTI_SUCCESS)
    CUPTISIM_RESULT(CUPTI_ERROR_INVALID_PARAMETER)
    CUPTISIM_RESULT(CUPTI_ERROR_INVALID_DEVICE)
    CUPTISIM_RESULT(CUPTI_ERROR_INVALID_CONTEXT)
    CUPTISIM_RESULT(CUPTI_ERROR_INVALID_OPERATION)
    CUPTISIM_RESULT(CUPTI_ERROR_OUT_OF_MEMORY)
    CUPTISIM_RESULT(CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT)
    CUPTISIM_RESULT(CUPTI_ERROR_API_NOT_IMPLEMENTED)
    CUPTISIM_RESULT(CUPTI_ERROR_MAX_LIMIT_REACHED)
    CUPTISIM_RESULT(CUPTI_ERROR_NOT_READY)
    CUPTISIM_RESULT(CUPTI_ERROR_NOT_COMPATIBLE)
    CUPTISIM_RESULT(CUPTI_ERROR_NOT_INITIALIZED)
    CUPTISIM_RESULT(CUPTI_ERROR_QUEUE_EMPTY)
    CUPTISIM_RESULT(CUPTI_ERROR_INVALID_HANDLE)
    CUPTISIM_RESULT(CUPTI_ERROR_INVALID_STREAM)
    CUPTISIM_RESULT(CUPTI_ERROR_INVALID_KIND)
    CUPTISIM_RESULT(CUPTI_ERROR_DISABLED)
    CUPTISIM_RESULT(CUPTI_ERROR_NOT_SUPPORTED)
    CUPTISIM_RESULT(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
    CUPTISIM_RESULT(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    CUPTISIM_RESULT(CUPTI_ERROR_UNKNOWN)
#undef CUPTISIM_RESULT
    default:
      *str = "CUPTI_ERROR_UNKNOWN";
      return CUPTI_ERROR_INVALID_PARAMETER;
  }
}

CUPTISIM_EXPORT CUptiResult cuptiGetErrorMessage(CUptiResult result, const char** str) {
  return cuptiGetResultString(result, str);
}

// ---- detaching ----

// "Explicitly destroys and cleans up all resources associated with CUPTI"
// (cuptiFinalize). Modeled per mode: with several subscribers allowed it
// ends only the process-wide (legacy) activity, leaving the other
// subscribers' channels alone — a tool's finalize must not end another's
// trace; in single-subscriber mode it ends everything, the subscriber
// included. Buffers held go back through their completed callbacks first.
CUPTISIM_EXPORT CUptiResult cuptiFinalize(void) {
  Channel& legacy = legacy_channel();
  disable_all(legacy);
  flush_channel(legacy, /*all_buffers=*/true);
  {
    std::lock_guard<std::mutex> l(legacy.mu);
    legacy.request = nullptr;
    legacy.complete = nullptr;
  }
  if (multiple_subscriber_state() != 1) drop_all_subscribers();
  return CUPTI_SUCCESS;
}

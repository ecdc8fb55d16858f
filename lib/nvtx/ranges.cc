// NVTX ranges: the fast path (push, pop) at the top, the slow path
// (register_slow: domain creation, string registration) below it.
//
// Note [NVTX re-entry]: the first NVTX call of our copy initialises NVTX,
// which may dlopen the tool named by NVTX_INJECTION64_PATH and run its
// InitializeInjectionNvtx2. If that tool calls a hooked CUDA function, the
// hook comes back here on the same thread while we are inside NVTX's
// initialisation: calling NVTX again would spin forever on NVTX's init
// state, and our own lock would deadlock. So while a thread is in the slow
// path, push/pop/mark on that thread are no-ops. A nested push and its pop
// both run inside the slow path, so they stay paired. To keep the thread
// local off the fast path, the fast path first reads g_registering (threads
// now in the slow path: almost always 0) and only then the thread local.
#include "nvtx/ranges.h"

#include <atomic>
#include <mutex>

#include <nvtx3/nvToolsExt.h>

#include "ledger/ledger.h"

namespace gpuslack {
namespace nvtx {
namespace {

constexpr char kDomainName[] = "gpuslack";
constexpr int kMaxCalls = ledger::kMaxCalls;

// What push() needs of one registered call; written once, under g_mutex,
// before its pointer is published in g_table.
struct Entry {
  nvtxDomainHandle_t domain;
  int32_t message_type;  // NVTX_MESSAGE_TYPE_REGISTERED, or ASCII if the tool
                         // gave no handle
  nvtxMessageValue_t message;
  uint32_t category;
  uint32_t color;
};

struct Domain {
  nvtxDomainHandle_t handle;  // null with no tool attached: that is fine
};

// All constant-initialised: usable from a hook that runs before any
// constructor, and after every destructor.
std::atomic<bool> g_enabled{true};
std::atomic<const Domain*> g_domain{nullptr};
std::atomic<const Entry*> g_table[kMaxCalls] = {};
std::atomic<int> g_registering{0};  // Note [NVTX re-entry]
thread_local bool t_registering = false;

std::mutex g_mutex;  // guards the storage below, written on the slow path
Domain g_domain_storage;
Entry g_entries[kMaxCalls];

// Okabe-Ito colours, one per Category, in enum order.
constexpr uint32_t kColors[kCategoryCount] = {
    0xFFE69F00,  // allocation: orange
    0xFF0072B2,  // copies: blue
    0xFFCC79A7,  // collectives: reddish purple
    0xFF999999,  // waiting for the GPU: grey
    0xFF009E73,  // other: bluish green
};

inline bool reentered() {  // Note [NVTX re-entry]
  return g_registering.load(std::memory_order_relaxed) != 0 && t_registering;
}

inline nvtxEventAttributes_t attributes(uint32_t category, uint32_t color, uint64_t bytes) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.category = category;
  a.colorType = NVTX_COLOR_ARGB;
  a.color = color;
  a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
  a.payload.ullValue = bytes;
  return a;
}

// Marks the calling thread as inside the slow path for its lifetime.
class SlowPathScope {
 public:
  SlowPathScope() {
    g_registering.fetch_add(1, std::memory_order_relaxed);
    t_registering = true;
  }
  ~SlowPathScope() {
    t_registering = false;
    g_registering.fetch_sub(1, std::memory_order_relaxed);
  }
  SlowPathScope(const SlowPathScope&) = delete;
  SlowPathScope& operator=(const SlowPathScope&) = delete;
};

// Creates the domain and names its categories, once. Caller holds g_mutex
// and a SlowPathScope.
const Domain* domain_locked() {
  if (const Domain* d = g_domain.load(std::memory_order_acquire)) return d;
  g_domain_storage.handle = nvtxDomainCreateA(kDomainName);
  for (int i = 0; i < kCategoryCount; ++i) {
    const auto c = static_cast<Category>(i);
    nvtxDomainNameCategoryA(g_domain_storage.handle, category_id(c), category_name(c));
  }
  g_domain.store(&g_domain_storage, std::memory_order_release);
  return &g_domain_storage;
}

// The slow path of push() and the body of register_call(): makes `call`'s
// entry (and the domain) if missing. Returns null for an id out of range.
// Caller holds a SlowPathScope.
[[gnu::noinline]] const Entry* register_slow(const ApiCall& call) {
  std::lock_guard<std::mutex> lock(g_mutex);
  domain_locked();
  if (call.id >= kMaxCalls) return nullptr;
  if (const Entry* e = g_table[call.id].load(std::memory_order_acquire)) return e;
  Entry& e = g_entries[call.id];
  e.domain = g_domain_storage.handle;
  e.category = category_id(call.category);
  e.color = category_color(call.category);
  e.message.registered = nvtxDomainRegisterStringA(e.domain, call.name);
  e.message_type = NVTX_MESSAGE_TYPE_REGISTERED;
  if (e.message.registered == nullptr) {
    e.message.ascii = call.name;
    e.message_type = NVTX_MESSAGE_TYPE_ASCII;
  }
  g_table[call.id].store(&e, std::memory_order_release);
  return &e;
}

// push() of a call whose entry is not published yet (first call of that
// id, or an id out of range). Fast path: push() below.
[[gnu::cold, gnu::noinline]] void push_slow(const ApiCall& call, uint64_t bytes) {
  const Entry* e;
  nvtxDomainHandle_t domain;
  {
    SlowPathScope scope;
    e = register_slow(call);
    domain = g_domain.load(std::memory_order_acquire)->handle;
  }
  nvtxEventAttributes_t a = attributes(category_id(call.category), category_color(call.category), bytes);
  if (e != nullptr) {
    a.messageType = e->message_type;
    a.message = e->message;
  } else {
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = call.name;
  }
  nvtxDomainRangePushEx(domain, &a);
}

}  // namespace

void set_enabled(bool enabled) { g_enabled.store(enabled, std::memory_order_relaxed); }

bool enabled() { return g_enabled.load(std::memory_order_relaxed); }

uint32_t category_color(Category c) {
  const auto i = static_cast<unsigned>(c);
  return i < static_cast<unsigned>(kCategoryCount) ? kColors[i] : kColors[kCategoryCount - 1];
}

// Fast path. Slow path: push_slow / register_slow above.
void push(const ApiCall& call, uint64_t bytes) {
  if (!g_enabled.load(std::memory_order_relaxed) || reentered()) return;
  const Entry* e = call.id < kMaxCalls ? g_table[call.id].load(std::memory_order_acquire) : nullptr;
  if (e == nullptr) {
    push_slow(call, bytes);
    return;
  }
  nvtxEventAttributes_t a = attributes(e->category, e->color, bytes);
  a.messageType = e->message_type;
  a.message = e->message;
  nvtxDomainRangePushEx(e->domain, &a);
}

void pop() {
  if (!g_enabled.load(std::memory_order_relaxed) || reentered()) return;
  // Null only if no push() ever ran: then there is nothing to pop.
  const Domain* d = g_domain.load(std::memory_order_acquire);
  if (d != nullptr) nvtxDomainRangePop(d->handle);
}

// Disabled: nothing, not even the domain, so a tool shows no empty
// "gpuslack" domain.
void register_call(const ApiCall* call) {
  if (call == nullptr || !g_enabled.load(std::memory_order_relaxed) || reentered()) return;
  // Registered already (a forked child's new session): no lock, which a
  // thread of the parent may have held at the fork.
  if (call->id < kMaxCalls && g_table[call->id].load(std::memory_order_acquire) != nullptr) return;
  SlowPathScope scope;
  register_slow(*call);
}

void mark(const char* message) {
  if (!g_enabled.load(std::memory_order_relaxed) || reentered()) return;
  const Domain* d = g_domain.load(std::memory_order_acquire);
  if (d == nullptr) {
    SlowPathScope scope;
    std::lock_guard<std::mutex> lock(g_mutex);
    d = domain_locked();
  }
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message != nullptr ? message : "";
  nvtxDomainMarkEx(d->handle, &a);
}

}  // namespace nvtx
}  // namespace gpuslack

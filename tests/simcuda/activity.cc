// What an observer learns of the simulated device's ops (sim.h, "activity"):
// the one sink, correlation ids, and kernel names.
//
// The sink is an atomic function pointer: a stream worker loads it once per
// op (relaxed; a sink registered a moment late misses the ops that finished
// meanwhile, as a CUPTI enabled mid-run misses what ran before). Names are
// interned in a set never freed, so a record's name pointer stays valid for
// the whole process, like the strings CUPTI hands out.
#include <dlfcn.h>

#include <string>
#include <unordered_map>
#include <unordered_set>

#include "sim.h"

namespace gpusim {
namespace {

std::atomic<ActivitySink> g_sink{nullptr};
std::atomic<uint32_t> g_correlation{0};

struct Names {
  std::mutex mu;
  std::unordered_set<std::string> interned;
  std::unordered_map<const void*, const char*> by_handle;   // interned: registered or resolved
  std::unordered_map<const void*, const char*> registered;  // static text, interned on first use
};
Names& names() {
  static auto* n = new Names();  // never freed: records point into it
  return *n;
}

const char* intern_locked(Names& n, const char* name) {
  return n.interned.emplace(name).first->c_str();
}

}  // namespace

void set_activity_sink(ActivitySink sink) { g_sink.store(sink, std::memory_order_release); }

bool activity_observed() { return g_sink.load(std::memory_order_relaxed) != nullptr; }

uint32_t next_correlation_id() { return g_correlation.fetch_add(1, std::memory_order_relaxed) + 1; }

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

void emit_activity(const OpInfo& info, int device, uint32_t stream_id, int64_t start_ns, int64_t end_ns) {
  ActivitySink sink = g_sink.load(std::memory_order_acquire);
  if (!sink) return;
  OpRecord r;
  r.info = info;
  r.device = device;
  r.stream_id = stream_id;
  r.start_ns = start_ns;
  r.end_ns = end_ns;
  sink(r);
}

const char* intern_name(const char* name) {
  if (!name) return nullptr;
  Names& n = names();
  std::lock_guard<std::mutex> l(n.mu);
  return intern_locked(n, name);
}

void register_kernel_name(const void* handle, const char* name) {
  if (!handle || !name) return;
  Names& n = names();
  std::lock_guard<std::mutex> l(n.mu);
  n.by_handle[handle] = intern_locked(n, name);
}

void register_static_kernel_name(const void* handle, const char* name) {
  if (!handle || !name) return;
  Names& n = names();
  std::lock_guard<std::mutex> l(n.mu);
  n.registered[handle] = name;
}

const char* kernel_name(const void* handle) {
  static const char* const kFixed = "gpusim_kernel";
  if (!handle) return kFixed;
  Names& n = names();
  {
    std::lock_guard<std::mutex> l(n.mu);
    auto it = n.by_handle.find(handle);
    if (it != n.by_handle.end()) return it->second;
    auto reg = n.registered.find(handle);
    if (reg != n.registered.end()) {
      const char* name = intern_locked(n, reg->second);
      n.by_handle.emplace(handle, name);
      return name;
    }
  }
  // An nvcc host stub carries the kernel's mangled name: what CUPTI reports.
  Dl_info dl{};
  const char* found = kFixed;
  if (dladdr(handle, &dl) && dl.dli_sname && dl.dli_saddr == handle) found = dl.dli_sname;
  std::lock_guard<std::mutex> l(n.mu);
  const char* name = intern_locked(n, found);
  n.by_handle.emplace(handle, name);
  return name;
}

}  // namespace gpusim

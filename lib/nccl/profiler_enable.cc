// See profiler_enable.h, Note [Joining NCCL as its profiler].
#include "nccl/profiler_enable.h"

#include <dlfcn.h>
#include <link.h>
#include <strings.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "config/environment.h"
#include "cuda/loader_section.h"
#include "log/escape.h"
#include "log/log.h"
#include "nccl/profiler_records.h"

namespace gpuslack {
namespace nccl {
namespace profiler {
namespace {

constexpr const char* kVariable = "NCCL_PROFILER_PLUGIN";
constexpr const char* kDefaultLibrary = "libnccl-profiler.so";

std::atomic<bool> g_knob{true};
std::atomic<bool> g_decided{false};
std::mutex g_mu;
// The decision, guarded by g_mu, set once g_decided. Plain data: nothing
// may run at load (docs/design.md, principle 4).
Decision g_decision = Decision::kOff;
char g_why[1024];

std::string base_name(const std::string& p) {
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// The user's plugin name is gpuslack: its path, any path to a library of
// that name, or NCCL's global-scope lookup (which finds the preloaded
// library's symbols).
bool names_us(const std::string& value, const std::string& own_path) {
  if (value.empty()) return false;
  if (strcasecmp(value.c_str(), "STATIC_PLUGIN") == 0) return true;
  if (!own_path.empty() && (value == own_path || base_name(value) == base_name(own_path))) return true;
  return base_name(value) == "libgpuslack.so";
}

std::string read_file(const std::string& path) {
  std::string text;
  FILE* f = std::fopen(path.c_str(), "re");
  if (!f) return text;
  char buf[4096];
  size_t n = 0;
  while (text.size() < (1u << 20) && (n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  std::fclose(f);
  return text;
}

std::string own_library_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&prepare), &info) == 0 || !info.dli_fname) return "";
  return info.dli_fname;
}

// Where libnccl-profiler.so would load from, or "" when the loader finds
// none. NCCL dlopens it a moment later anyway.
std::string find_default_library() {
  void* h = nullptr;
  {
    cuda::LoaderSection section;  // Note [gpuslack's loader calls and fork]
    h = dlopen(kDefaultLibrary, RTLD_LAZY | RTLD_LOCAL);
  }
  if (!h) return "";
  std::string path = kDefaultLibrary;
  struct link_map* lm = nullptr;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && *lm->l_name) path = lm->l_name;
  dlclose(h);
  return path;
}

Inputs gather() {
  Inputs in;
  in.knob = g_knob.load(std::memory_order_relaxed);
  in.secure = secure_execution();
  if (in.secure || !in.knob) return in;
  in.env = environment_variable(kVariable);
  in.own_path = own_library_path();
  if (!in.env) {
    // NCCL's order (src/misc/param.cc, initEnv): NCCL_CONF_FILE or
    // ~/.nccl.conf, then /etc/nccl.conf; the first to set a variable wins.
    std::string files[2];
    const char* conf = environment_variable("NCCL_CONF_FILE");
    const char* home = environment_variable("HOME");
    if (conf && *conf) files[0] = conf;
    else if (home && *home) files[0] = std::string(home) + "/.nccl.conf";
    files[1] = "/etc/nccl.conf";
    for (const std::string& f : files) {
      if (f.empty()) continue;
      std::string v = conf_value(read_file(f));
      if (!v.empty()) {
        in.conf_value = v;
        in.conf_file = f;
        break;
      }
    }
  }
  if (!in.env && in.conf_value.empty()) {
    in.default_path = find_default_library();
    in.default_found = !in.default_path.empty();
  }
  return in;
}

}  // namespace

void configure(bool knob_on) { g_knob.store(knob_on, std::memory_order_relaxed); }

bool listening() { return g_knob.load(std::memory_order_relaxed); }

std::string conf_value(const std::string& text) {
  std::string value;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    at = end + 1;
    size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line[b] == '#') continue;
    line = line.substr(b);
    const size_t n = std::strlen(kVariable);
    if (line.compare(0, n, kVariable) != 0 || line.size() <= n || line[n] != '=') continue;
    std::string v = line.substr(n + 1);
    while (!v.empty() && (v.back() == '\r' || v.back() == ' ' || v.back() == '\t')) v.pop_back();
    if (!v.empty()) return v;  // NCCL keeps the first value it sets
  }
  return value;
}

Outcome decide(const Inputs& in) {
  if (!in.knob) return {Decision::kOff, "nccl_profiler=false"};
  if (in.secure) return {Decision::kOff, "secure execution (the environment is not gpuslack's to change)"};
  std::string value = in.env ? in.env : in.conf_value;
  std::string where = in.env ? std::string(kVariable) : std::string(kVariable) + " in " + in.conf_file;
  if (in.env || !in.conf_value.empty()) {
    if (strcasecmp(value.c_str(), "none") == 0) return {Decision::kOff, where + "=none"};
    if (value.empty()) {
      // NCCL takes an empty name as unset: libnccl-profiler.so, if any.
      if (in.default_found) return {Decision::kSteppedAside, in.default_path};
      return {Decision::kOff, std::string(kVariable) + " is set but empty"};
    }
    if (names_us(value, in.own_path)) return {Decision::kNamedUs, where + "=" + value};
    return {Decision::kSteppedAside, where + "=" + value};
  }
  if (in.default_found) return {Decision::kSteppedAside, in.default_path};
  if (in.own_path.empty()) return {Decision::kOff, "libgpuslack.so's own path is unknown"};
  return {Decision::kJoin, in.own_path};
}

void prepare() {
  if (g_decided.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> l(g_mu);
  if (g_decided.load(std::memory_order_relaxed)) return;
  Outcome o = decide(gather());
  switch (o.decision) {
    case Decision::kJoin:
      // Never overwrite: if someone set it meanwhile, theirs stands.
      if (setenv(kVariable, o.why.c_str(), 0) != 0) o = {Decision::kOff, "setenv failed"};
      log::debug("NCCL profiler plugin: {}={}", kVariable, log::escape_bytes(o.why));
      break;
    case Decision::kSteppedAside:
      log::warn("NCCL profiler plugin: stepped aside for the user's ({}); no algorithm or protocol per collective",
                log::escape_bytes(o.why));
      break;
    case Decision::kNamedUs:
    case Decision::kOff:
      break;
  }
  g_decision = o.decision;
  std::snprintf(g_why, sizeof(g_why), "%s", o.why.c_str());
  g_decided.store(true, std::memory_order_release);
}

std::string status() {
  if (int v = loaded_version(); v > 0) return "on (v" + std::to_string(v) + ")";
  if (!listening()) return "off: nccl_profiler=false";
  std::lock_guard<std::mutex> l(g_mu);
  if (!g_decided.load(std::memory_order_relaxed)) return "off: no communicator init was hooked";
  switch (g_decision) {
    case Decision::kJoin:
    case Decision::kNamedUs:
      return "off: NCCL did not load it (NCCL before 2.23, or no communicator finished its init)";
    case Decision::kOff:
      return std::string("off: ") + g_why;
    case Decision::kSteppedAside:
      return std::string("stepped aside: ") + g_why;
  }
  return "off";
}

void reset_decision() {
  std::lock_guard<std::mutex> l(g_mu);
  g_decision = Decision::kOff;
  g_why[0] = '\0';
  g_decided.store(false, std::memory_order_release);
}

}  // namespace profiler
}  // namespace nccl
}  // namespace gpuslack

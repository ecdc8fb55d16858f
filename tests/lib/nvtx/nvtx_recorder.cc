// nvtx_recorder: an NVTX tool for tests, not part of the product. It records
// what a process tells NVTX, so tests can check gpuslack's ranges without
// Nsight Systems.
//
// Use: run the process under test with
//   NVTX_INJECTION64_PATH=<path of libnvtx_recorder.so>   (before its first
//                                                         NVTX call)
//   NVTX_RECORDER_OUT=<file>                              (optional)
// Every NVTX instance of the process (one per shared object that includes
// NVTX) loads this library and calls InitializeInjectionNvtx2, which points
// that instance's CORE and CORE2 callbacks here.
//
// Output: one JSON object per line, in the order the events happened:
//   {"event":"push","domain":"gpuslack","message":"cudaMalloc",
//    "message_type":"registered","category":1,"category_name":"allocation",
//    "color":4293304064,"payload":4096,"depth":1,"tid":123}
// event: "push", "pop" or "mark". domain: the name given to DomainCreateA,
// "" for the global domain. message: ASCII, wide (narrowed) or registered
// string, resolved; message_type: how it came, "ascii", "unicode",
// "registered" or "" (none). category: the attribute's category id (0: none);
// category_name: as named by (Domain)NameCategoryA in that domain, "" if
// unnamed. color: ARGB, null if none. payload: a number (integers and
// floating point), null if none. depth: nesting level of the range in its
// domain on that thread, 1 for an outermost range (a pop carries the depth
// and fields of the range it closes; a pop with nothing open has depth 0 and
// empty fields; a mark has the depth of the ranges open around it).
// tid: the OS thread id.
//
// Lines are written as events happen, to a buffered stream that is flushed
// by a destructor function and again by exit(), so events recorded while
// other libraries run their exit handlers are kept too. A process that ends
// by _exit() or a signal may lose the unflushed tail.
//
// Thread safety: every callback may run on any thread; one lock guards the
// state and the stream. Handles (domains, registered strings) are never
// freed, so they stay valid through exit.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace {

struct Domain {
  std::string name;
  std::map<uint32_t, std::string> categories;
};

struct RegisteredString {
  std::string text;
};

// One range as pushed: what its pop reports.
struct Range {
  std::string message;
  const char* message_type = "";
  uint32_t category = 0;
  std::string category_name;
  std::string color = "null";
  std::string payload = "null";
};

struct State {
  std::mutex mu;
  FILE* out = nullptr;
  Domain global;  // the null domain handle
  std::map<std::string, Domain*> domains;
  std::map<std::pair<const Domain*, std::string>, RegisteredString*> strings;
  // Open ranges per OS thread, per domain.
  std::map<long, std::map<const Domain*, std::vector<Range>>> stacks;
};

// Never freed: callbacks may run during and after static destruction.
State& state() {
  static State* s = new State;
  return *s;
}

long os_tid() { return static_cast<long>(syscall(SYS_gettid)); }

Domain* domain_of(State& s, nvtxDomainHandle_t h) {
  return h != nullptr ? reinterpret_cast<Domain*>(h) : &s.global;
}

std::string json_string(const std::string& v) {
  std::string out = "\"";
  for (const char c : v) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string narrow(const wchar_t* w) {
  std::string out;
  for (; w != nullptr && *w != 0; ++w) out += (*w > 0 && *w < 0x80) ? static_cast<char>(*w) : '?';
  return out;
}

std::string message_of(int32_t type, const nvtxMessageValue_t& m) {
  switch (type) {
    case NVTX_MESSAGE_TYPE_ASCII: return m.ascii != nullptr ? m.ascii : "";
    case NVTX_MESSAGE_TYPE_UNICODE: return narrow(m.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return m.registered != nullptr ? reinterpret_cast<const RegisteredString*>(m.registered)->text : "";
    default: return "";
  }
}

const char* message_type_of(int32_t type) {
  switch (type) {
    case NVTX_MESSAGE_TYPE_ASCII: return "ascii";
    case NVTX_MESSAGE_TYPE_UNICODE: return "unicode";
    case NVTX_MESSAGE_TYPE_REGISTERED: return "registered";
    default: return "";
  }
}

std::string payload_of(const nvtxEventAttributes_t& a) {
  char buf[64];
  switch (a.payloadType) {
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64: std::snprintf(buf, sizeof buf, "%" PRIu64, a.payload.ullValue); break;
    case NVTX_PAYLOAD_TYPE_INT64: std::snprintf(buf, sizeof buf, "%" PRId64, a.payload.llValue); break;
    case NVTX_PAYLOAD_TYPE_DOUBLE: std::snprintf(buf, sizeof buf, "%.17g", a.payload.dValue); break;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: std::snprintf(buf, sizeof buf, "%" PRIu32, a.payload.uiValue); break;
    case NVTX_PAYLOAD_TYPE_INT32: std::snprintf(buf, sizeof buf, "%" PRId32, a.payload.iValue); break;
    case NVTX_PAYLOAD_TYPE_FLOAT: std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(a.payload.fValue)); break;
    default: return "null";
  }
  return buf;
}

// Caller holds s.mu.
Range range_of(const Domain& d, const nvtxEventAttributes_t* a) {
  Range r;
  if (a == nullptr) return r;
  r.message = message_of(a->messageType, a->message);
  r.message_type = message_type_of(a->messageType);
  r.category = a->category;
  if (auto it = d.categories.find(a->category); it != d.categories.end()) r.category_name = it->second;
  if (a->colorType == NVTX_COLOR_ARGB) r.color = std::to_string(a->color);
  r.payload = payload_of(*a);
  return r;
}

// Caller holds s.mu.
void write(State& s, const char* event, const Domain& d, const Range& r, size_t depth, long tid) {
  if (s.out == nullptr) return;
  std::string line = "{\"event\":\"";
  line += event;
  line += "\",\"domain\":" + json_string(d.name);
  line += ",\"message\":" + json_string(r.message);
  line += ",\"message_type\":\"";
  line += r.message_type;
  line += "\"";
  line += ",\"category\":" + std::to_string(r.category);
  line += ",\"category_name\":" + json_string(r.category_name);
  line += ",\"color\":" + r.color;
  line += ",\"payload\":" + r.payload;
  line += ",\"depth\":" + std::to_string(depth);
  line += ",\"tid\":" + std::to_string(tid) + "}\n";
  std::fputs(line.c_str(), s.out);
}

int push(nvtxDomainHandle_t h, const nvtxEventAttributes_t* a) {
  State& s = state();
  const long tid = os_tid();
  std::lock_guard<std::mutex> lock(s.mu);
  const Domain* d = domain_of(s, h);
  std::vector<Range>& stack = s.stacks[tid][d];
  stack.push_back(range_of(*d, a));
  write(s, "push", *d, stack.back(), stack.size(), tid);
  return static_cast<int>(stack.size()) - 1;
}

int pop(nvtxDomainHandle_t h) {
  State& s = state();
  const long tid = os_tid();
  std::lock_guard<std::mutex> lock(s.mu);
  const Domain* d = domain_of(s, h);
  std::vector<Range>& stack = s.stacks[tid][d];
  if (stack.empty()) {
    write(s, "pop", *d, Range{}, 0, tid);
    return -1;
  }
  const size_t depth = stack.size();
  write(s, "pop", *d, stack.back(), depth, tid);
  stack.pop_back();
  return static_cast<int>(depth) - 1;
}

void mark(nvtxDomainHandle_t h, const nvtxEventAttributes_t* a) {
  State& s = state();
  const long tid = os_tid();
  std::lock_guard<std::mutex> lock(s.mu);
  const Domain* d = domain_of(s, h);
  write(s, "mark", *d, range_of(*d, a), s.stacks[tid][d].size(), tid);
}

nvtxEventAttributes_t ascii_attributes(const char* message) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message;
  return a;
}

// ---- CORE callbacks (the global domain) ----

void NVTX_API MarkEx(const nvtxEventAttributes_t* a) { mark(nullptr, a); }
void NVTX_API MarkA(const char* message) {
  const nvtxEventAttributes_t a = ascii_attributes(message);
  mark(nullptr, &a);
}
int NVTX_API RangePushEx(const nvtxEventAttributes_t* a) { return push(nullptr, a); }
int NVTX_API RangePushA(const char* message) {
  const nvtxEventAttributes_t a = ascii_attributes(message);
  return push(nullptr, &a);
}
int NVTX_API RangePop() { return pop(nullptr); }
void NVTX_API NameCategoryA(uint32_t category, const char* name) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.global.categories[category] = name != nullptr ? name : "";
}

// ---- CORE2 callbacks (domains) ----

void NVTX_API DomainMarkEx(nvtxDomainHandle_t h, const nvtxEventAttributes_t* a) { mark(h, a); }
int NVTX_API DomainRangePushEx(nvtxDomainHandle_t h, const nvtxEventAttributes_t* a) { return push(h, a); }
int NVTX_API DomainRangePop(nvtxDomainHandle_t h) { return pop(h); }

void NVTX_API DomainNameCategoryA(nvtxDomainHandle_t h, uint32_t category, const char* name) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  domain_of(s, h)->categories[category] = name != nullptr ? name : "";
}

nvtxStringHandle_t NVTX_API DomainRegisterStringA(nvtxDomainHandle_t h, const char* text) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  const Domain* d = domain_of(s, h);
  RegisteredString*& r = s.strings[{d, text != nullptr ? text : ""}];
  if (r == nullptr) r = new RegisteredString{text != nullptr ? text : ""};
  return reinterpret_cast<nvtxStringHandle_t>(r);
}

// Same name, same handle, as real tools do.
nvtxDomainHandle_t NVTX_API DomainCreateA(const char* name) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  Domain*& d = s.domains[name != nullptr ? name : ""];
  if (d == nullptr) d = new Domain{name != nullptr ? name : "", {}};
  return reinterpret_cast<nvtxDomainHandle_t>(d);
}

// Domains outlive their handles here: events may still name them.
void NVTX_API DomainDestroy(nvtxDomainHandle_t) {}

// ---- attaching ----

template <typename F>
NvtxFunctionPointer fn(F* f) {
  return reinterpret_cast<NvtxFunctionPointer>(f);
}

struct Slot {
  unsigned id;
  NvtxFunctionPointer fn;
};

bool attach(const NvtxExportTableCallbacks& cb, NvtxCallbackModule module, const std::vector<Slot>& slots) {
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;  // the highest valid slot id
  if (cb.GetModuleFunctionTable(module, &table, &size) == 0 || table == nullptr) return false;
  for (const Slot& slot : slots) {
    if (slot.id > size || table[slot.id] == nullptr) return false;
  }
  for (const Slot& slot : slots) *table[slot.id] = slot.fn;
  return true;
}

void open_output() {
  const char* path = std::getenv("NVTX_RECORDER_OUT");
  if (path == nullptr || *path == 0) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.out = std::fopen(path, "w");
  if (s.out == nullptr) std::fprintf(stderr, "nvtx_recorder: cannot open %s\n", path);
}

// Not fclose: callbacks after this (other libraries' exit handlers) still
// write, and exit() flushes them.
__attribute__((destructor)) void flush_output() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.out != nullptr) std::fflush(s.out);
}

}  // namespace

// Called by each NVTX instance of the process on its first NVTX call.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  static std::once_flag opened;
  std::call_once(opened, open_output);
  const auto* cb = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  if (cb == nullptr || cb->struct_size < sizeof(NvtxExportTableCallbacks)) return 0;
  const bool core = attach(*cb, NVTX_CB_MODULE_CORE,
                           {{NVTX_CBID_CORE_MarkEx, fn(&MarkEx)},
                            {NVTX_CBID_CORE_MarkA, fn(&MarkA)},
                            {NVTX_CBID_CORE_RangePushEx, fn(&RangePushEx)},
                            {NVTX_CBID_CORE_RangePushA, fn(&RangePushA)},
                            {NVTX_CBID_CORE_RangePop, fn(&RangePop)},
                            {NVTX_CBID_CORE_NameCategoryA, fn(&NameCategoryA)}});
  const bool core2 = attach(*cb, NVTX_CB_MODULE_CORE2,
                            {{NVTX_CBID_CORE2_DomainMarkEx, fn(&DomainMarkEx)},
                             {NVTX_CBID_CORE2_DomainRangePushEx, fn(&DomainRangePushEx)},
                             {NVTX_CBID_CORE2_DomainRangePop, fn(&DomainRangePop)},
                             {NVTX_CBID_CORE2_DomainNameCategoryA, fn(&DomainNameCategoryA)},
                             {NVTX_CBID_CORE2_DomainRegisterStringA, fn(&DomainRegisterStringA)},
                             {NVTX_CBID_CORE2_DomainCreateA, fn(&DomainCreateA)},
                             {NVTX_CBID_CORE2_DomainDestroy, fn(&DomainDestroy)}});
  return core && core2 ? 1 : 0;
}

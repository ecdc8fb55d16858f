// See python_frames.h, Note [Python frames]. Python's C API is called only
// through the pointers found here, and only while this thread holds the
// GIL; no lock of gpuslack's is held meanwhile.
#include "ledger/python_frames.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cuda/real_dl.h"
#include "ledger/backtrace.h"

namespace gpuslack {
namespace ledger {
namespace {

// Opaque stand-ins for Python's types: only pointers to them are passed.
struct PyObject;
struct PyThreadState;

// The C API that a capture calls (stable ABI since 3.9-3.11, except the
// unchecked state getter, exported under one of two names).
struct PythonApi {
  int (*is_initialized)();
  int (*gil_check)();
  PyThreadState* (*this_thread_state)();
  PyThreadState* (*attached_state)();
  PyObject* (*thread_frame)(PyThreadState*);
  PyObject* (*frame_back)(PyObject*);
  PyObject* (*frame_code)(PyObject*);
  int (*frame_line)(PyObject*);
  PyObject* (*get_attr)(PyObject*, const char*);
  const char* (*as_utf8)(PyObject*);
  void (*incref)(PyObject*);
  void (*decref)(PyObject*);
  void (*err_fetch)(PyObject**, PyObject**, PyObject**);
  void (*err_restore)(PyObject*, PyObject*, PyObject*);
  int (*gc_disable)();
  int (*gc_enable)();
};

template <typename F>
bool find(F* fn, const char* name) {
  *fn = reinterpret_cast<F>(cuda::real_dlsym(RTLD_DEFAULT, name));
  return *fn != nullptr;
}

// Python 3.11 or newer, from Py_GetVersion ("3.11.7 (main, ...").
bool recent_enough() {
  const char* (*version)() = nullptr;
  if (!find(&version, "Py_GetVersion")) return false;
  int major = 0, minor = 0;
  if (std::sscanf(version(), "%d.%d", &major, &minor) != 2) return false;
  return major > 3 || (major == 3 && minor >= 11);
}

bool resolve(PythonApi* a) {
  if (!find(&a->is_initialized, "Py_IsInitialized") || !recent_enough()) return false;
  if (!find(&a->attached_state, "PyThreadState_GetUnchecked") &&
      !find(&a->attached_state, "_PyThreadState_UncheckedGet"))
    return false;
  return find(&a->gil_check, "PyGILState_Check") && find(&a->this_thread_state, "PyGILState_GetThisThreadState") &&
         find(&a->thread_frame, "PyThreadState_GetFrame") && find(&a->frame_back, "PyFrame_GetBack") &&
         find(&a->frame_code, "PyFrame_GetCode") && find(&a->frame_line, "PyFrame_GetLineNumber") &&
         find(&a->get_attr, "PyObject_GetAttrString") && find(&a->as_utf8, "PyUnicode_AsUTF8") &&
         find(&a->incref, "Py_IncRef") && find(&a->decref, "Py_DecRef") && find(&a->err_fetch, "PyErr_Fetch") &&
         find(&a->err_restore, "PyErr_Restore") && find(&a->gc_disable, "PyGC_Disable") &&
         find(&a->gc_enable, "PyGC_Enable");
}

// The process's Python, or nullptr: looked up on the first capture only.
const PythonApi* python_api() {
  static const PythonApi* api = [] {
    static PythonApi found{};
    return resolve(&found) ? &found : nullptr;
  }();
  return api;
}

// ---- Interned texts: (code object, line) -> "file:line in function" ----

struct Text {
  const void* code;  // one reference held (nullptr: a test's)
  int line;
  char text[1];  // NUL-terminated, allocated past the struct
};

constexpr int kMaxProbes = 32;
std::atomic<Text*> g_texts[kMaxPythonTexts];  // published once, never removed
std::atomic<int> g_test_line{0};

constexpr uintptr_t kTag = uintptr_t{0x7079} << 48;

int slot_of(const void* code, int line) {
  uint64_t h = (reinterpret_cast<uintptr_t>(code) ^ (static_cast<uint64_t>(line) << 40)) * 0x9E3779B97F4A7C15ull;
  return static_cast<int>((h >> 32) % kMaxPythonTexts);
}

// The slot that holds (code, line), or -1.
int find_text(const void* code, int line) {
  int slot = slot_of(code, line);
  for (int i = 0; i < kMaxProbes; ++i, slot = (slot + 1) % kMaxPythonTexts) {
    Text* t = g_texts[slot].load(std::memory_order_acquire);
    if (t == nullptr) return -1;
    if (t->code == code && t->line == line) return slot;
  }
  return -1;
}

// Publishes `text` for (code, line); returns its slot (another thread's
// when it won the race for the same pair), or -1 when the probes are full.
int publish_text(const void* code, int line, const char* text, bool* published) {
  *published = false;
  size_t len = std::strlen(text);
  Text* made = static_cast<Text*>(std::malloc(sizeof(Text) + len));
  if (made == nullptr) return -1;
  made->code = code;
  made->line = line;
  std::memcpy(made->text, text, len + 1);
  int slot = slot_of(code, line);
  for (int i = 0; i < kMaxProbes; ++i, slot = (slot + 1) % kMaxPythonTexts) {
    Text* seen = nullptr;
    if (g_texts[slot].compare_exchange_strong(seen, made, std::memory_order_acq_rel)) {
      *published = true;
      return slot;
    }
    if (seen->code == code && seen->line == line) break;  // the same pair, by another thread
  }
  std::free(made);
  return code == nullptr ? -1 : find_text(code, line);
}

void* tag(int slot) { return reinterpret_cast<void*>(kTag | static_cast<uintptr_t>(slot + 1)); }

// The file as Python names it, less any directories up to site-packages/.
const char* short_file(const char* file) {
  const char* cut = file;
  for (const char* marker : {"site-packages/", "dist-packages/"}) {
    const char* at = std::strstr(file, marker);
    while (at != nullptr) {
      cut = std::max(cut, at + std::strlen(marker));
      at = std::strstr(at + 1, marker);
    }
  }
  return cut;
}

// A string attribute of `code` (a new buffer in `out`), or false. May set
// an exception, which the caller's PyErr_Restore discards.
bool code_string(const PythonApi& a, PyObject* code, const char* name, char* out, size_t size) {
  PyObject* value = a.get_attr(code, name);
  if (value == nullptr) return false;
  const char* utf8 = a.as_utf8(value);
  bool ok = utf8 != nullptr;
  if (ok) std::snprintf(out, size, "%s", utf8);
  a.decref(value);
  return ok;
}

// The slot of (code, line), interning its text on first sight; -1 when it
// cannot be read or the table is full.
int intern(const PythonApi& a, PyObject* code, int line) {
  int slot = find_text(code, line);
  if (slot >= 0) return slot;
  char file[512], function[256], text[800];
  if (!code_string(a, code, "co_filename", file, sizeof(file))) return -1;
  if (!code_string(a, code, "co_qualname", function, sizeof(function)) &&
      !code_string(a, code, "co_name", function, sizeof(function)))
    return -1;
  std::snprintf(text, sizeof(text), "%s:%d in %s", short_file(file), line, function);
  bool published = false;
  slot = publish_text(code, line, text, &published);
  if (published) a.incref(code);  // its address names it for good
  return slot;
}

thread_local bool t_reading = false;

}  // namespace

int capture_python_frames(void** frames, int max_frames) {
  if (frames == nullptr || max_frames <= 0 || t_reading) return 0;
  const PythonApi* api = python_api();
  if (api == nullptr || !api->is_initialized() || !api->gil_check()) return 0;
  PyThreadState* mine = api->this_thread_state();
  if (mine == nullptr || api->attached_state() != mine) return 0;
  // This thread holds the GIL: the interpreter is ours to read.
  const PythonApi& a = *api;
  t_reading = true;
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  a.err_fetch(&type, &value, &traceback);
  int gc_was_enabled = a.gc_disable();
  int n = 0;
  PyObject* frame = a.thread_frame(mine);
  while (frame != nullptr && n < max_frames) {
    PyObject* code = a.frame_code(frame);
    int slot = code == nullptr ? -1 : intern(a, code, a.frame_line(frame));
    if (code != nullptr) a.decref(code);
    if (slot < 0) break;
    frames[n++] = tag(slot);
    PyObject* back = a.frame_back(frame);
    a.decref(frame);
    frame = back;
  }
  if (frame != nullptr) a.decref(frame);
  if (gc_was_enabled) a.gc_enable();
  a.err_restore(type, value, traceback);
  t_reading = false;
  return n;
}

// noinline: capture_backtrace's frame 0 is then the return address into
// here, inside gpuslack, which the report drops with the hook's frames.
__attribute__((noinline)) int capture_call_site(void** frames, int max_frames) {
  if (frames == nullptr || max_frames <= 0) return 0;
  int n = capture_python_frames(frames, std::min(max_frames, kMaxPythonFrames));
  return n + capture_backtrace(frames + n, max_frames - n);
}

int leading_python_frames(void* const* frames, int n_frames) {
  int n = 0;
  while (n < n_frames && is_python_frame(frames[n])) ++n;
  return n;
}

bool python_frame_text(const void* frame, std::string* text) {
  if (!is_python_frame(frame)) return false;
  uintptr_t index = (reinterpret_cast<uintptr_t>(frame) & ((uintptr_t{1} << 48) - 1)) - 1;
  if (index >= static_cast<uintptr_t>(kMaxPythonTexts)) return false;
  Text* t = g_texts[index].load(std::memory_order_acquire);
  if (t == nullptr) return false;
  *text = t->text;
  return true;
}

namespace testing {
void* intern_python_text(const std::string& text) {
  bool published = false;
  int slot = publish_text(nullptr, g_test_line.fetch_add(1, std::memory_order_relaxed), text.c_str(), &published);
  return slot < 0 ? nullptr : tag(slot);
}
}  // namespace testing

}  // namespace ledger
}  // namespace gpuslack

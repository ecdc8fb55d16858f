// See python_frames.h, Note [Python frames]. Python's C API is called only
// through the pointers found here; no lock of gpuslack's is held meanwhile.
#include "ledger/python_frames.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "config/options.h"
#include "cuda/real_dl.h"
#include "ledger/backtrace.h"
#include "ledger/python311_frames.h"

namespace gpuslack {
namespace ledger {
namespace {

// Opaque stand-ins for Python's types: only pointers to them are passed.
struct PyObject;
struct PyThreadState;

// The C API that a capture calls (stable ABI since 3.9-3.11, except the
// unchecked state getter, exported under one of two names), and on 3.11
// the two types python311_frames.h checks objects against.
struct PythonApi {
  int (*is_initialized)();
  int (*gil_check)();
  PyThreadState* (*this_thread_state)();
  PyThreadState* (*attached_state)();
  void* (*interpreter_of)(PyThreadState*);
  PyObject* (*thread_frame)(PyThreadState*);
  PyObject* (*frame_back)(PyObject*);
  PyObject* (*frame_code)(PyObject*);
  int (*frame_line)(PyObject*);
  PyObject* (*get_attr)(PyObject*, const char*);
  const char* (*as_utf8)(PyObject*);
  void (*decref)(PyObject*);
  void (*err_fetch)(PyObject**, PyObject**, PyObject**);
  void (*err_restore)(PyObject*, PyObject*, PyObject*);
  int (*gc_disable)();
  int (*gc_enable)();
  bool python311;  // the frames are read from 3.11's structures, GIL or not
  const void* code_type;
  const void* unicode_type;
};

template <typename F>
bool find(F* fn, const char* name) {
  *fn = reinterpret_cast<F>(cuda::real_dlsym(RTLD_DEFAULT, name));
  return *fn != nullptr;
}

// Python's major and minor version, from Py_GetVersion ("3.11.7 (main, ...").
bool version(int* major, int* minor) {
  const char* (*get)() = nullptr;
  return find(&get, "Py_GetVersion") && std::sscanf(get(), "%d.%d", major, minor) == 2;
}

bool resolve(PythonApi* a) {
  int major = 0, minor = 0;
  if (!find(&a->is_initialized, "Py_IsInitialized") || !version(&major, &minor)) return false;
  if (major != 3 || minor < 11) return false;
  if (!find(&a->attached_state, "PyThreadState_GetUnchecked") &&
      !find(&a->attached_state, "_PyThreadState_UncheckedGet"))
    return false;
  if (!(find(&a->gil_check, "PyGILState_Check") && find(&a->this_thread_state, "PyGILState_GetThisThreadState") &&
        find(&a->interpreter_of, "PyThreadState_GetInterpreter") &&
        find(&a->thread_frame, "PyThreadState_GetFrame") && find(&a->frame_back, "PyFrame_GetBack") &&
        find(&a->frame_code, "PyFrame_GetCode") && find(&a->frame_line, "PyFrame_GetLineNumber") &&
        find(&a->get_attr, "PyObject_GetAttrString") && find(&a->as_utf8, "PyUnicode_AsUTF8") &&
        find(&a->decref, "Py_DecRef") && find(&a->err_fetch, "PyErr_Fetch") &&
        find(&a->err_restore, "PyErr_Restore") && find(&a->gc_disable, "PyGC_Disable") &&
        find(&a->gc_enable, "PyGC_Enable")))
    return false;
  a->python311 = minor == 11 && find(&a->code_type, "PyCode_Type") && find(&a->unicode_type, "PyUnicode_Type");
  return true;
}

// The process's Python, or nullptr: looked up on the first capture only.
const PythonApi* python_api() {
  static const PythonApi* api = [] {
    static PythonApi found{};
    return resolve(&found) ? &found : nullptr;
  }();
  return api;
}

// ---- Interned texts: "file:line in function" -> a slot ----

struct Text {
  uint64_t hash;
  char text[1];  // NUL-terminated, allocated past the struct
};

constexpr int kMaxProbes = 32;
std::atomic<Text*> g_texts[kMaxPythonTexts];  // published once, never removed

constexpr uintptr_t kTag = uintptr_t{0x7079} << 48;

uint64_t hash_of(const char* text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char* c = text; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 0x100000001B3ull;
  return h;
}

// The slot of `text`, published on first sight (the allocation then is the
// only one a capture makes); -1 when its probes are full.
int intern(const char* text) {
  const uint64_t hash = hash_of(text);
  int slot = static_cast<int>((hash >> 20) % kMaxPythonTexts);
  Text* made = nullptr;
  for (int i = 0; i < kMaxProbes; ++i, slot = (slot + 1) % kMaxPythonTexts) {
    Text* seen = g_texts[slot].load(std::memory_order_acquire);
    while (seen == nullptr) {
      if (made == nullptr) {
        size_t len = std::strlen(text);
        made = static_cast<Text*>(std::malloc(sizeof(Text) + len));
        if (made == nullptr) return -1;
        made->hash = hash;
        std::memcpy(made->text, text, len + 1);
      }
      if (g_texts[slot].compare_exchange_strong(seen, made, std::memory_order_acq_rel)) return slot;
    }
    if (seen->hash == hash && std::strcmp(seen->text, text) == 0) {
      std::free(made);
      return slot;
    }
  }
  std::free(made);
  return -1;
}

void* tag(int slot) { return reinterpret_cast<void*>(kTag | static_cast<uintptr_t>(slot + 1)); }

// The working directory at the first capture, with a trailing '/', or "".
const char* first_cwd() {
  static const char* cwd = [] {
    static char buf[1024];
    if (getcwd(buf, sizeof(buf) - 1) == nullptr || buf[1] == '\0') return "";
    std::strcat(buf, "/");
    return static_cast<const char*>(buf);
  }();
  return cwd;
}

// The file as Python names it, shortened: a script under the working
// directory relative to it; a package's file from its top folder on (after
// site-packages/ or dist-packages/); the standard library's after
// lib/pythonX.Y/.
const char* short_file(const char* file) {
  const char* cwd = first_cwd();
  size_t cwd_len = std::strlen(cwd);
  if (cwd_len > 0 && std::strncmp(file, cwd, cwd_len) == 0) return file + cwd_len;
  const char* cut = file;
  for (const char* marker : {"site-packages/", "dist-packages/"}) {
    for (const char* at = std::strstr(file, marker); at != nullptr; at = std::strstr(at + 1, marker))
      cut = std::max(cut, at + std::strlen(marker));
  }
  if (cut != file) return cut;
  const char* lib = std::strstr(file, "/lib/python");
  const char* slash = lib ? std::strchr(lib + 11, '/') : nullptr;
  return slash ? slash + 1 : file;
}

// Interns one frame's text into `frames[n]`; false when the table is full.
bool add_frame(const char* file, int line, const char* function, void** frames, int n) {
  char text[768];
  std::snprintf(text, sizeof(text), "%s:%d in %s", short_file(file), line, function);
  int slot = intern(text);
  if (slot < 0) return false;
  frames[n] = tag(slot);
  return true;
}

// A string attribute of `code` into `out`, or false. May set an exception,
// which the caller's PyErr_Restore discards.
bool code_string(const PythonApi& a, PyObject* code, const char* name, char* out, size_t size) {
  PyObject* value = a.get_attr(code, name);
  if (value == nullptr) return false;
  const char* utf8 = a.as_utf8(value);
  bool ok = utf8 != nullptr;
  if (ok) std::snprintf(out, size, "%s", utf8);
  a.decref(value);
  return ok;
}

// 3.11: the thread's frames from the interpreter's structures (GIL held or
// not: python311_frames.h says why either is safe).
int capture_311(const PythonApi& a, PyThreadState* mine, void** frames, int max_frames) {
  // tstate->interp, read as the layout says, is what Python says it is: a
  // cheap check that this is the layout we know.
  void* interp = nullptr;
  std::memcpy(&interp, reinterpret_cast<const char*>(mine) + 16, sizeof(interp));
  if (interp == nullptr || interp != a.interpreter_of(mine)) return 0;
  Python311Frame read[kMaxPythonFrames];
  int got = read_python311_frames(mine, a.code_type, a.unicode_type, read, std::min(max_frames, kMaxPythonFrames));
  int n = 0;
  while (n < got && add_frame(read[n].file, read[n].line, read[n].function, frames, n)) ++n;
  return n;
}

// 3.12 and later, holding the GIL: through the C API.
int capture_with_gil(const PythonApi& a, PyThreadState* mine, void** frames, int max_frames) {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  a.err_fetch(&type, &value, &traceback);
  int gc_was_enabled = a.gc_disable();
  int n = 0;
  PyObject* frame = a.thread_frame(mine);
  while (frame != nullptr && n < max_frames) {
    PyObject* code = a.frame_code(frame);
    if (code == nullptr) break;
    char file[512], function[256];
    bool ok = code_string(a, code, "co_filename", file, sizeof(file)) &&
              (code_string(a, code, "co_qualname", function, sizeof(function)) ||
               code_string(a, code, "co_name", function, sizeof(function)));
    int line = a.frame_line(frame);
    a.decref(code);
    if (!ok || !add_frame(file, line, function, frames, n)) break;
    ++n;
    PyObject* back = a.frame_back(frame);
    a.decref(frame);
    frame = back;
  }
  if (frame != nullptr) a.decref(frame);
  if (gc_was_enabled) a.gc_enable();
  a.err_restore(type, value, traceback);
  return n;
}

thread_local bool t_reading = false;

}  // namespace

int capture_python_frames(void** frames, int max_frames) {
  if (frames == nullptr || max_frames <= 0 || t_reading) return 0;
  const PythonApi* api = python_api();
  if (api == nullptr || !api->is_initialized()) return 0;
  PyThreadState* mine = api->this_thread_state();  // this thread's, attached or not
  if (mine == nullptr) return 0;                     // a thread without Python
  t_reading = true;
  int n = 0;
  if (api->python311) {
    n = capture_311(*api, mine, frames, max_frames);
  } else if (api->gil_check() && api->attached_state() == mine) {
    n = capture_with_gil(*api, mine, frames, max_frames);  // this thread holds the GIL
  }
  t_reading = false;
  return n;
}

// noinline: capture_backtrace's frame 0 is then the return address into
// here, inside gpuslack, which the report drops with the hook's frames.
__attribute__((noinline)) int capture_call_site(void** frames, int max_frames) {
  if (frames == nullptr || max_frames <= 0) return 0;
  int n = options().python_frames ? capture_python_frames(frames, std::min(max_frames, kMaxPythonFrames)) : 0;
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
  int slot = intern(text.c_str());
  return slot < 0 ? nullptr : tag(slot);
}
}  // namespace testing

}  // namespace ledger
}  // namespace gpuslack

// The calling thread's innermost Python frames, read from the interpreter
// at capture time, so that a call site says `train.py:42 in step` before
// `libtorch_cuda.so+0x1c75727`.
//
// Used where call sites are captured (capture_call_site below: the slow
// calls of interpose/hooks.cc, the sampled pageable copies of
// stage/staged_copy.cc; the GPU timeline's idle sites reuse their keys).
// A Python frame travels among the native return addresses as a tagged
// value (is_python_frame): a number no user-space address can be, standing
// for an interned "file:line in function" text that report time reads back
// (python_frame_text). Call-site keys, their maps and the timeline carry
// them unchanged.
//
// Note [Python frames]: how and when the interpreter is read.
//  - Found by name, lazily, once: on the first capture, gpuslack's own
//    dlsym (cuda/real_dl.h; dlsym itself is interposed) looks up Python's C
//    API in the global scope (RTLD_DEFAULT): a python executable, or a
//    libpython loaded globally. gpuslack never links libpython; in a
//    process without Python the lookup fails once and every later capture
//    costs one load and a branch. Python older than 3.11 (Py_GetVersion) is
//    left alone.
//  - Read only when this thread holds the GIL: Py_IsInitialized(), then
//    PyGILState_Check(), then the thread's own state
//    (PyGILState_GetThisThreadState) is the one attached
//    (PyThreadState_GetUnchecked / _PyThreadState_UncheckedGet; the check
//    alone says yes to everything where sub-interpreters turned it off).
//    Holding the GIL, the interpreter is ours to read through its API. The
//    GIL is never taken: a thread in a CUDA call may hold a lock of its
//    caller (PyTorch's caching allocator frees under its own mutex) that
//    the GIL's holder waits for.
//  - What that captures: calls made with the GIL held: ctypes.PyDLL,
//    C extensions that keep the GIL (torch.cuda.empty_cache, and the
//    others of torch.cuda's module functions that do). What it does not:
//    ctypes.CDLL (ctypes releases the GIL around a foreign call),
//    PyTorch ops that release it (pybind11::gil_scoped_release: Tensor.to,
//    .cpu, .item, torch.cuda.synchronize, the factory functions), threads
//    the CUDA runtime or NCCL start, and threads without Python. Those
//    sites keep their native frames only. Reading a thread's frames
//    without the GIL (what py-spy does from outside) needs the layout of
//    each Python version's private structures; not done here.
//  - Reading must leave the interpreter as it was: the pending exception
//    is saved and restored around the walk (PyErr_Fetch/PyErr_Restore), and
//    the cyclic GC is paused around it (PyGC_Disable/PyGC_Enable): since
//    3.11 frame objects are made on demand, and on 3.11 such an allocation
//    can run a collection, i.e. arbitrary __del__ code, inside a CUDA call.
//    No gpuslack lock is held while Python is called; a capture re-entered
//    on the same thread (a CUDA call from that Python) captures nothing.
//  - Interning: (code object, line) to text, in a process-wide table of
//    kMaxPythonTexts entries, lock-free (entries are published with a
//    compare-and-swap and never removed); the code object is kept alive
//    (one reference) so that its address names it for good. A full table,
//    or a frame whose strings cannot be read, ends the walk there.
//
// Thread safety: every function, any thread. Capture allocates (the text of
// a (code, line) seen for the first time) and calls Python; report-time
// functions only read.
#pragma once

#include <cstdint>
#include <string>

namespace gpuslack {
namespace ledger {

// The innermost Python frames a call site keeps.
inline constexpr int kMaxPythonFrames = 4;
// The most (code object, line) pairs the process interns.
inline constexpr int kMaxPythonTexts = 4096;

// Writes up to `max_frames` tagged Python frames, innermost first, into
// `frames`; returns how many (0 when the thread does not hold the GIL, or
// the process has no Python).
int capture_python_frames(void** frames, int max_frames);

// A call site: this thread's Python frames (up to kMaxPythonFrames), then
// its native return addresses (ledger/backtrace.h; this function's own frame
// and capture_backtrace's are not among them), up to `max_frames` in all.
// Returns how many.
int capture_call_site(void** frames, int max_frames);

// Whether `frame` is a tagged Python frame rather than a return address.
inline bool is_python_frame(const void* frame) {
  return (reinterpret_cast<uintptr_t>(frame) >> 48) == 0x7079;  // "py": never a user-space address
}

// How many of `frames` lead as Python frames.
int leading_python_frames(void* const* frames, int n_frames);

// The text of a tagged frame: "file:line in function" (the file as Python
// names it, with any directories up to site-packages/ or dist-packages/
// left out), or false when `frame` is not one.
bool python_frame_text(const void* frame, std::string* text);

namespace testing {
// Interns `text` as if a Python frame had read so, and returns its tag
// (nullptr when the table is full): tests that make call sites by hand.
void* intern_python_text(const std::string& text);
}  // namespace testing

}  // namespace ledger
}  // namespace gpuslack

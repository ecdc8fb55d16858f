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
//    left alone. Then a capture needs Py_IsInitialized() and a thread state
//    of this thread (PyGILState_GetThisThreadState: a thread-local read):
//    the CUDA runtime's or NCCL's own threads, and any thread that never
//    ran Python, capture nothing.
//  - Whether this thread holds the GIL decides what can be read. PyTorch's
//    ops release it around their C++ work (pybind11::gil_scoped_release:
//    Tensor.to, .cpu, .item, torch.cuda.synchronize, empty_cache, the
//    factory functions), and so does ctypes.CDLL around a foreign call; so
//    the calls worth naming mostly run without it. The GIL is never taken
//    here: a thread in a CUDA call may hold a lock of its caller (PyTorch's
//    caching allocator frees under its own mutex) that the GIL's holder
//    waits for: a deadlock.
//  - On 3.11 (PyTorch's usual Python), held or not: the frames are read
//    from the interpreter's own structures (python311_frames.h): a thread
//    that released the GIL is inside the call, and only it changes its
//    frames. Offsets checked against Python's own objects; a frame whose
//    code object or strings are not what they must be ends the walk.
//  - On 3.12 and later: only while this thread holds the GIL
//    (PyGILState_Check, and the thread's state is the attached one:
//    PyThreadState_GetUnchecked / _PyThreadState_UncheckedGet; the check
//    alone says yes to everything where sub-interpreters turned it off):
//    ctypes.PyDLL, C extensions that keep the GIL. Through the C API:
//    PyThreadState_GetFrame, PyFrame_GetBack, PyFrame_GetCode,
//    PyFrame_GetLineNumber, the code's co_filename and co_qualname. That
//    must leave the interpreter as it was: the pending exception is saved
//    and restored around the walk (PyErr_Fetch/PyErr_Restore), and the
//    cyclic GC paused (PyGC_Disable/PyGC_Enable), since frame objects are
//    made on demand and an allocation could otherwise run a collection,
//    i.e. arbitrary __del__ code, inside a CUDA call. A GIL-less call
//    there keeps its native frames only (3.12 and 3.13 moved the frame
//    structures; their layouts are not read here).
//  - No gpuslack lock is held while Python is read; a capture re-entered on
//    the same thread captures nothing.
//  - Interning: "file:line in function" texts, in a process-wide table of
//    kMaxPythonTexts entries, lock-free (an entry is published with a
//    compare-and-swap and never removed; a text is hashed and compared, so
//    a code object freed and its address reused cannot name a frame
//    wrongly). A full table ends the walk there.
//
// Thread safety: every function, any thread. Capture allocates (a text seen
// for the first time) and may call Python (above); report-time functions
// only read.
#pragma once

#include <cstdint>
#include <string>

namespace gpuslack {
namespace ledger {

// The innermost Python frames a call site keeps.
inline constexpr int kMaxPythonFrames = 4;
// The most Python frame texts the process interns.
inline constexpr int kMaxPythonTexts = 4096;

// Writes up to `max_frames` tagged Python frames, innermost first, into
// `frames`; returns how many (0 in a thread or process without Python, or
// where the Note says it cannot read).
int capture_python_frames(void** frames, int max_frames);

// A call site: this thread's Python frames (up to kMaxPythonFrames; none
// with the knob python_frames off), then
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
// names it, shortened: relative to the working directory of the first
// capture when under it, else from after site-packages/, dist-packages/ or
// lib/pythonX.Y/), or false when `frame` is not one.
bool python_frame_text(const void* frame, std::string* text);

namespace testing {
// Interns `text` as if a Python frame had read so, and returns its tag
// (nullptr when the table is full): tests that make call sites by hand.
void* intern_python_text(const std::string& text);
}  // namespace testing

}  // namespace ledger
}  // namespace gpuslack

// CPython 3.11's frames of one thread, read from the interpreter's own
// structures without the GIL: for a thread that released the GIL around a
// C call (PyTorch's ops do: pybind11::gil_scoped_release), whose Python
// frames are then frozen until it takes the GIL back. Used by
// python_frames.cc (Note [Python frames]); nothing else should.
//
// Layout: the offsets below are CPython 3.11's (Include/cpython/pystate.h,
// Include/internal/pycore_frame.h, Include/cpython/code.h,
// Include/cpython/unicodeobject.h), the same in every 3.11.x, checked on
// 3.11.2 and 3.11.7 against the objects and line numbers Python itself
// returns (ctypes), and by tests/python/test_python_frames.py and the torch
// test (tests/python/under_torch/run.py pyframes), which expect the lines
// Python would name.
// The caller must have checked that the interpreter is 3.11 (Py_GetVersion).
// Each frame's code object must have type `code_type` (&PyCode_Type) and its
// strings type `unicode_type`, compact ASCII, or the walk stops there: a
// wrong guess ends a walk instead of reading on.
//
// Why reading is safe: only the owning thread pushes and pops its frames,
// and it is inside the call being captured; a frame keeps its code object
// alive, and a code object's file name, name and line table never change.
// Other threads may only materialize frame objects for these frames
// (sys._current_frames), which writes fields not read here. Nothing is
// allocated, no reference count touched, no Python function called but
// none. Not safe while the interpreter finalizes (it frees other threads'
// states): the caller checks Py_IsInitialized first; the window between
// that check and the read is the one left.
//
// Thread safety: any thread, reading only its own thread state.
#pragma once

namespace gpuslack {
namespace ledger {

struct Python311Frame {
  const char* file;      // the code object's co_filename, UTF-8 (ASCII)
  const char* function;  // its co_qualname
  int line;              // the line being run, -1 when unknown
};

// Reads up to `max_frames` frames of `thread_state` (a PyThreadState* of
// this thread), innermost first, skipping incomplete ones; returns how many.
// The strings point into the code objects: valid while the thread stays in
// the current call.
int read_python311_frames(const void* thread_state, const void* code_type, const void* unicode_type,
                          Python311Frame* frames, int max_frames);

}  // namespace ledger
}  // namespace gpuslack

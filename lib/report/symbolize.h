// Turns call-site return addresses (ledger/backtrace.h) into readable frames,
// at report time.
//
// Each frame becomes one of:
//   "function+0xOFF (module)"  a symbol was found; C++ names demangled;
//   "module+0xOFF"             inside a loaded object, no symbol for it
//                              (hidden or stripped code; Python's or a JIT's
//                              frames without symbols);
//   "??"                       in no loaded object (JIT code, garbage);
//   "FILE:LINE in FUNCTION (python)"
//                              a Python frame (ledger/python_frames.h):
//                              these come first, innermost first, before
//                              the native frames, wherever they were kept.
// `module` is the object's file name without its directory. OFF is the
// offset of the return address itself (as the frame holds it) from the
// symbol, or from the object's load base; the lookup uses address - 1, so a
// call that is the last instruction of a function still names that
// function. (For addr2line, subtract 1 from a module offset.)
//
// The leading frames that lie in gpuslack's own object are dropped: the
// hooks, the ledger and the capture itself are not the call site. Only that
// leading run goes; a caller further out in the same object stays (in unit
// tests the core is linked into the test executable, whose test bodies are
// callers).
//
// Only symbols in the dynamic symbol table are found (dladdr): an executable
// shows its functions only when linked with -rdynamic and built without
// hidden visibility.
//
// Thread safety: any thread. Allocates, calls dladdr (the loader's lock):
// report time only, never on a hooked call's path.
#pragma once

#include <string>
#include <vector>

namespace gpuslack {
namespace report {

// Symbolizes `frames` (innermost first), dropping the leading frames in the
// object that holds gpuslack's own code (libgpuslack.so when preloaded).
std::vector<std::string> symbolize(const std::vector<void*>& frames);

// As above, with the object to drop given by its load base (dladdr's
// dli_fbase); nullptr drops nothing.
std::vector<std::string> symbolize(const std::vector<void*>& frames, const void* drop_object_base);

}  // namespace report
}  // namespace gpuslack

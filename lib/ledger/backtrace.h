// Captures the calling thread's native call stack as raw return addresses,
// cheaply enough to do on the thread that made a hooked call.
//
// Used on the call-site slow path only (ledger::record_call_site, for calls
// that already blocked past the call-site threshold): the addresses are kept
// as they are and symbolized at report time (report/symbolize.h).
//
// How: _Unwind_Backtrace from the unwinder that libgpuslack.so carries
// statically (-static-libgcc), walking .eh_frame. Not glibc's backtrace(),
// whose first call dlopens libgcc_s and mallocs inside someone else's
// process. A frame without unwind info (JIT code, hand-written assembly)
// ends the walk there.
//
// Contract:
//  - innermost first; frame 0 is the return address into the function that
//    called capture_backtrace (capture_backtrace's own frame is left out);
//  - addresses are return addresses, i.e. just after the call instruction,
//    kept raw: whoever symbolizes looks up address - 1. (A signal frame's
//    address is the interrupted instruction itself; it is stored plus one so
//    that the same rule holds for every frame.)
//  - allocates nothing, takes no lock of gpuslack's (the unwinder may take
//    the loader's own), safe from any thread at any time except inside a
//    signal handler;
//  - cost: 8 frames took 1.3 us on an idle 2-core dev VM, 3-4 us on a
//    loaded one (Release; Backtrace.CostOfEightFrames prints the figure).
//    The unwinder finds each frame's object with glibc's lock-free
//    _dl_find_object, then reads its .eh_frame.
#pragma once

namespace gpuslack {
namespace ledger {

// Writes up to `max_frames` return addresses into `frames` and returns how
// many it wrote (0 when max_frames <= 0 or nothing could be unwound).
int capture_backtrace(void** frames, int max_frames);

}  // namespace ledger
}  // namespace gpuslack

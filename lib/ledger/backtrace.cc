// See backtrace.h. Nothing here may allocate or take a lock of ours: it runs
// on the calling thread of a hooked call, in someone else's process.
#include "ledger/backtrace.h"

#include <unwind.h>

#include <cstdint>

namespace gpuslack {
namespace ledger {
namespace {

struct Walk {
  void** frames;
  int max_frames;
  int count;
  bool skipped_self;  // capture_backtrace's own frame is reported first
};

_Unwind_Reason_Code on_frame(struct _Unwind_Context* context, void* arg) {
  Walk* walk = static_cast<Walk*>(arg);
  int before_insn = 0;
  uintptr_t ip = _Unwind_GetIPInfo(context, &before_insn);
  if (ip == 0) return _URC_END_OF_STACK;
  if (!walk->skipped_self) {
    walk->skipped_self = true;
    return _URC_NO_REASON;
  }
  // A signal frame's ip is the interrupted instruction, not a return
  // address: store it plus one so that "look up address - 1" holds for all.
  if (before_insn) ip += 1;
  walk->frames[walk->count++] = reinterpret_cast<void*>(ip);
  return walk->count < walk->max_frames ? _URC_NO_REASON : _URC_NORMAL_STOP;
}

}  // namespace

// noinline: the first frame the unwinder reports is this function's own,
// which on_frame skips; inlined into a caller, that skip would drop the
// caller's frame instead.
__attribute__((noinline)) int capture_backtrace(void** frames, int max_frames) {
  if (frames == nullptr || max_frames <= 0) return 0;
  Walk walk{frames, max_frames, 0, false};
  _Unwind_Backtrace(&on_frame, &walk);
  return walk.count;
}

}  // namespace ledger
}  // namespace gpuslack

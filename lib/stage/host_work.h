// The application's work whose effect the host can observe — device→host
// copies and host functions — still pending, per stream: what a staged
// pageable host→device copy must wait for.
//
// Note [The drain a staged copy keeps]: the driver drains the stream before
// a pageable host→device copy. Of that drain an application can observe
// one thing: memory the GPU writes on the host side (device→host copies)
// and host functions enqueued earlier on that stream have completed when
// the call returns. A staged copy (staged_copy.h) does not drain; it waits
// only for such work, recorded here by an event per stream, re-recorded
// after each piece of it (host_work_enqueued, called by the hooks of
// device→host copies, cudaLaunchHostFunc, cudaStreamAddCallback and
// cudaGraphLaunch — a graph may hold copies and host nodes — and of
// cudaStreamWaitEvent while anything is pending, since the waiting stream
// then inherits another stream's pending work).
//
// Which streams a drain of S covers: S itself; for the legacy default
// stream, every blocking stream of its device too (the legacy stream waits
// for them); for a blocking stream, the legacy stream and — because
// gpuslack does not see kernel launches, any of which on the legacy stream
// would chain them — the other blocking streams of its device as well (a
// cautious superset: it may wait where the driver would not, never the
// other way round). A non-blocking stream covers only itself.
//
// Not seen, so not waited for (docs/pinned-and-staged.md, "Staged copies"):
// kernels that write host memory directly (zero-copy, mapped pinned memory),
// copies made through the driver API (hooked, but forwarded without an
// event), and cudaMemcpy3D/cudaMemcpyFromSymbol/array
// copies (not hooked). GPUSLACK_CONF exact_copy_semantics:true restores the
// drain for programs that rely on those.
//
// An entry whose event cannot be recorded (a stream of another device, a
// runtime error pending) is "unknown": a drain that covers it waits for that
// whole stream; when it is the copy's own stream (or another thread's
// per-thread stream, which gpuslack cannot name) the wait reports it, and
// the copy goes through the runtime's own call, which drains.
//
// Thread safety: any thread; one mutex, never held while waiting.
// host_work_pending() is one relaxed load.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "absl/functional/function_ref.h"
#include "stage/stream_ref.h"

namespace gpuslack {
namespace stage {

// The application enqueued host-visible work on `s` (after the call
// succeeded; never while `s` captures a graph: the caller checks). With
// `may_call_runtime` false (the thread has a runtime error pending, which a
// failed call of gpuslack's would replace) nothing is recorded on the GPU
// and the stream's work becomes unknown.
void host_work_enqueued(const StreamRef& s, bool may_call_runtime);

// Whether any such work may still be pending (a hint for the fast path).
bool host_work_pending();

struct HostWorkWait {
  uint64_t waited_ns = 0;  // host time spent waiting (a copy stall when > 0)
  int streams = 0;         // streams whose pending work was waited for
  int other_streams = 0;   // of them, streams other than s (the legacy stream's blocking streams)
  bool unknown = false;    // some covered work cannot be waited for: drain natively
};
// Waits until the work a drain of `s` would have waited for has completed.
HostWorkWait wait_for_host_work(const StreamRef& s);

// `stream` is being destroyed: its entry is kept (its work may be pending)
// but no longer matches a new stream that gets the same handle.
void host_work_stream_destroyed(cudaStream_t stream);

// Forgets everything (tests).
void reset_host_work();

// Streams with an entry (tests: entries of finished work do not pile up as
// threads come and go with their per-thread streams).
size_t host_work_entries();

// Its fork child handler, once (register_fork_handlers in staged_copy.h).
void register_host_work_fork_handler();

namespace testing {
// Tests of Note [The stager after a fork] (staged_copy.cc) only: runs
// `during` while the calling thread holds the lock of the pending work.
void while_holding_host_work_lock(absl::FunctionRef<void()> during);
}  // namespace testing

}  // namespace stage
}  // namespace gpuslack

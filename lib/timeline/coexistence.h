// What gpuslack does when another tool subscribes to CUPTI after it: the
// interposed cuptiSubscribe and cuptiSubscribe_v2 (interpose/cupti_hooks.cc)
// call before_foreign_subscribe() before forwarding the tool's call,
// unchanged, to the real libcupti.
//
// Note [One CUPTI, several tools]: CUPTI's Activity API has had one
// subscriber per process (CUDA 13.2 and older, or drivers before r610); from
// there on, several may subscribe with cuptiSubscribe_v2, each asking for
// allowMultipleSubscribers. The tools a user runs beside gpuslack (Nsight
// Systems, torch.profiler through Kineto, DCGM profiling) matter more than
// gpuslack's own figures, so gpuslack never breaks them:
//   - gpuslack first asks to be one of several (cupti_session.h); where only
//     one is possible and another tool holds it, it steps aside and says so
//     (Status::kHeldByOther, the tool's oldSubscriberName);
//   - under gpu_timeline:auto it takes no single subscription at all (a tool
//     started later would then find CUPTI taken); gpu_timeline:on does,
//     and says so in how_to_enable's wording;
//   - a tool that subscribes later and needs CUPTI to itself — cuptiSubscribe
//     (v1 takes the whole of it), cuptiSubscribe_v2 with
//     allowMultipleSubscribers = 0 — or any later tool while gpuslack holds
//     the single subscription: gpuslack yields first. It flushes CUPTI and
//     processes what it holds, disables its kinds, unsubscribes, and only
//     then is the tool's call forwarded, so the tool gets exactly what it
//     would have got without gpuslack (the legacy callbacks it registers
//     next replace gpuslack's). The timeline then reports what it measured
//     until then: "stopped at <t>: <tool> took CUPTI" (Snapshot::stopped_by,
//     stopped_after_s). gpuslack does not subscribe again when the tool
//     unsubscribes: a second window would need its own wall time, and a
//     profiler usually runs to the end.
//   - a later tool asking allowMultipleSubscribers = 1 while gpuslack is one
//     of several: nothing to do, both run.
//   - a later tool that registers the process-wide buffer callbacks
//     (cuptiActivityRegisterCallbacks) without subscribing at all, as
//     torch.profiler's Kineto does: where gpuslack holds the single
//     subscription its own callbacks are those process-wide ones, which the
//     tool's would silently replace, so gpuslack yields first as above;
//     where it shares CUPTI its callbacks are its subscriber's own
//     (cuptiActivityRegisterCallbacks_v2) and both run. Kineto then also
//     gets its kinds enabled process-wide, and gpuslack's records keep
//     coming to gpuslack (tests/python/torch_sim.py timeline, with the real
//     torch.profiler).
// What gpuslack cannot avoid touching while it shares CUPTI: its snapshots
// call cuptiActivityFlushAll(FORCED), which has no per-subscriber form and
// hands every subscriber its partly filled buffers early (tools flush so
// themselves at their end; a snapshot is rare: exit, the periodic summary,
// the C API), and it reads cuptiActivityGetNumDroppedRecords, which resets
// the process-wide count another tool may also read.
// <tool> is the subscriberName a v2 call gives, else the file name of the
// object that called (libkineto, libtorch_cuda.so, ...).
// Tests: tests/lib/timeline/cupti_session_test.cc (yield) and the simulated
// second tool's end-to-end tests.
//
// Thread safety: any thread; takes the timeline's lock (subscribing is rare).
#pragma once

namespace gpuslack {
namespace timeline {

// Before another tool's subscription is forwarded. `exclusive`: the tool
// asks CUPTI to itself (v1, or v2 with allowMultipleSubscribers = 0).
void before_foreign_subscribe(const char* tool, bool exclusive);

}  // namespace timeline
}  // namespace gpuslack

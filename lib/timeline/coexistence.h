// What gpuslack does when another tool subscribes to CUPTI after it: the
// interposed cuptiSubscribe and cuptiSubscribe_v2 (interpose/cupti_hooks.cc)
// call before_foreign_subscribe() before forwarding the tool's call,
// unchanged, to the real libcupti.
//
// Note [One CUPTI, several tools]: CUPTI's Activity API has one subscriber
// per process in CUPTI 13.2 and older (cupti_callbacks.h 13.2: "Only a
// single subscriber can be registered at a time"; its
// allowMultipleSubscribers is beta there, and a request for several that
// "cannot be fulfilled" fails); a later CUPTI may grant several to
// cuptiSubscribe_v2 callers that each ask for allowMultipleSubscribers. The
// tools a user runs beside gpuslack (Nsight Systems, torch.profiler through
// Kineto, the JAX and TensorFlow profilers) matter more than gpuslack's own
// figures, so gpuslack never breaks them:
//   - gpuslack first asks to be one of several (cupti_session.h); where only
//     one is possible and another tool holds it, it steps aside and says so
//     (Status::kHeldByOther, the tool's oldSubscriberName);
//   - where only one is possible and it is free, gpuslack takes it, under
//     gpu_timeline:auto too, except when a tool was injected (Note
//     [gpu_timeline:auto and CUPTI's single subscription] below);
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
//
// Note [gpu_timeline:auto and CUPTI's single subscription]: auto takes a
// free single subscription, because every tool it could take it from is
// either outside the process, attached before gpuslack starts, or heard of
// before it subscribes (docs/gpu-timeline.md, "Sharing CUPTI", has the
// evidence per tool):
//   - Nsight Systems and Nsight Compute attach at launch, through the
//     driver's injection (CUDA_INJECTION64_PATH: the driver loads the
//     library at cuInit and calls its InitializeInjection), and CUPTI
//     refuses any other subscriber in a process they run ("returns the same
//     error when application is launched using NVIDIA tools like Nsight
//     Systems, Nsight Compute, cuda-gdb and cuda-memcheck": cupti_callbacks.h).
//     gpuslack starts on a thread of its own at the first CUDA call, which
//     may race the injected tool's own subscription in cuInit; so under auto
//     it stays out whenever CUDA_INJECTION64_PATH is set (any injected tool:
//     Nsight's, or a CUPTI tool of the user's), and says so;
//   - DCGM's profiling metrics are read by its host engine, another process,
//     from the GPU's performance counters (on Hopper and later through
//     NVML's GPM): they take no CUPTI subscription in this process, and the
//     Activity API's kernel, copy and memset records use no counters;
//   - a tool that subscribes later in the process (torch.profiler through
//     Kineto, the JAX and TensorFlow profilers through XLA's CUPTI tracer,
//     a library loaded later): gpuslack yields first, as below; XLA's CUPTI
//     stub resolves cuptiSubscribe by dlsym on the handle it dlopened, which
//     no preload interposes, so the interposed dlsym hands out gpuslack's
//     hooks for those names too (interpose/dl_hooks.cc);
//   - left: a tool that reaches CUPTI past every interposition (its own
//     static CUPTI, a library loaded with RTLD_DEEPBIND that links
//     libcupti) finds the subscription taken: cuptiSubscribe_v2 names
//     "CUPTI for gpuslack" in its oldSubscriberName; gpu_timeline:off
//     leaves CUPTI to it.
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

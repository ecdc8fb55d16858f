// Routes: the hooks that do more than forward.
//
// A hook forwards to the real function unless a route takes the call
// somewhere else first (route.h says how). One file per concept:
//
//   cudaMalloc / cudaFree,
//   cudaMallocAsync / cudaFreeAsync
//                                -> the VMM allocator (alloc/vmm.h) when
//                                   GPUSLACK_CONF selects allocator:vmm
//   cudaMallocHost, cudaHostAlloc,
//   cudaFreeHost                 -> the pinned heap (pin/pinned_heap.h) when
//                                   GPUSLACK_CONF's pin is on
//   cudaMallocFromPoolAsync,
//   cudaMallocManaged,
//   cudaMallocPitch, cudaMalloc3D -> the runtime, retried once after the
//                                   allocators released their memory if it
//                                   failed for memory (Note [Retrying a
//                                   pass-through allocation])
//   cudaMemGetInfo               -> adds the memory the allocator holds
//                                   unused to "free" (README,
//                                   "cudaMemGetInfo")
//   cudaDeviceSynchronize        -> frees made before it reusable at once
//                                   (Note [Frees behind a device
//                                   synchronization])
//   cudaDeviceEnablePeerAccess   -> grants the peer the allocator's memory
//   cudaStreamBeginCapture,
//   cudaStreamEndCapture         -> the allocator's capture state (Note
//                                   [Frees during capture])
//   cudaIpcGetMemHandle          -> refused, with one log line, for VMM
//                                   memory (its handle would not open)
//   cudaStreamCreateWithFlags,
//   cudaStreamCreateWithPriority,
//   cudaStreamDestroy            -> the stream registry the allocator fences
//                                   frees against (alloc/stream_registry.h)
//   cudaMemcpy, cudaMemcpyAsync,
//   cudaMemcpy2D, cudaMemcpy2DAsync
//                                -> the staged copies (pin/staged_copy.h):
//                                   pageable memory through pinned staging
//   every copy and memset        -> refused, as the runtime refuses a range
//                                   past a cudaMalloc allocation, when a range
//                                   leaves a block of the VMM allocator
//                                   (Note [Ranges in VMM blocks])
//   cudaMemcpyBatchAsync,
//   cudaLaunchHostFunc,
//   cudaStreamAddCallback,
//   cudaGraphLaunch,
//   cudaStreamWaitEvent          -> host-visible work the staged copies
//                                   must wait for (pin/host_work.h)
//
// The copy routes are not plain forwarding (Note [What a hook may never
// do] in hooks.cc): a pageable copy takes the stager's locks and records
// events, and a device->host copy into pinned memory, a host function, a
// graph launch (and a cross-stream wait while such work is pending) record
// one event each, under the host-work table's lock (pin/host_work.h); a
// copy or memset naming memory of the VMM allocator takes that allocator's
// lock to find the block (with the native allocator: one atomic load).
//
// Included by hooks.cc only, after the tables are expanded (the routes name
// their ids and slots).
#pragma once

#include "route.h"
#include "routes_alloc.h"    // device memory
#include "routes_copies.h"   // copies, memsets and host-visible work
#include "routes_passthrough.h"  // device memory the runtime serves
#include "routes_pinned.h"   // pinned host memory
#include "routes_streams.h"  // streams, captures, peers

#undef GPUSLACK_ROUTE_PASSED_THROUGH
#undef GPUSLACK_ROUTE_PAIR
#undef GPUSLACK_ROUTE

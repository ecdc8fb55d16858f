// Entry-point lookups: what gpuslack hands out when a program asks the
// driver (cuGetProcAddress) or the runtime (cudaGetDriverEntryPoint[ByVersion])
// for a driver function by name. entry_points.cc defines the interposed
// lookups; they call the real one and, when the variant it resolves to is
// one gpuslack hooks (driver_hook_table.h), hand out gpuslack's hook for
// that exact variant instead of the driver's pointer, so that a program
// that calls the driver only through such pointers (PyTorch's expandable
// segments, JAX/XLA, Triton) is seen as one that calls the exported names.
// dl_hooks.cc does the same for dlsym on a handle of libcuda.so.1.
//
// Not to be included outside interpose/.
//
// Thread safety: any thread; the tables are constant.
#pragma once

namespace gpuslack {
namespace interpose {

// gpuslack's hook of the exported driver symbol `exported` (a row of
// driver_hook_table.h, timed or counted), or nullptr. Defined in hooks.cc.
void* driver_hook(const char* exported);

// The hooked exported variant that cuGetProcAddress(base, cuda_version,
// flags) resolves to (GPUSLACK_DRIVER_VERSIONS: the newest variant whose
// version is at most `cuda_version`; the per-thread one when `per_thread`
// and there is one), or nullptr when that variant is not hooked.
const char* hooked_driver_variant(const char* base, int cuda_version, bool per_thread);

// gpuslack's interposed lookup of the driver's exported `exported`
// ("cuGetProcAddress_v2", "cuGetProcAddress"), or nullptr: what dlsym on
// libcuda.so.1's handle hands out for it (dl_hooks.cc), so that a program
// or a statically linked runtime that finds cuGetProcAddress that way and
// everything else through it is seen. Defined in entry_points.cc.
void* entry_point_hook(const char* exported);

// gpuslack's hook of the CUPTI symbol `name` (a row of cupti_hook_table.h:
// cuptiSubscribe, cuptiSubscribe_v2, cuptiActivityRegisterCallbacks), or
// nullptr: what dlsym on libcupti's handle hands out for it (dl_hooks.cc),
// so that a tool that resolves CUPTI by handle, as XLA's CUPTI stub does for
// the JAX and TensorFlow profilers (dlsym on the handle it dlopened), is
// heard of before it subscribes. Defined in cupti_hooks.cc.
void* cupti_hook(const char* name);

// What a lookup of `base` that found `real` hands out: gpuslack's hook of
// hooked_driver_variant(...), else `real` unchanged.
void* entry_point_for(const char* base, int cuda_version, bool per_thread, void* real);

}  // namespace interpose
}  // namespace gpuslack

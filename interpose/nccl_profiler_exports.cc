// NCCL's profiler plugin symbols, exported by libgpuslack.so: one
// `ncclProfiler_vN` struct per version of the interface (nccl/profiler_abi.h),
// each pointing at that version's adaptors (nccl/profiler_versions.h). NCCL
// dlopens the library NCCL_PROFILER_PLUGIN names (libgpuslack.so itself,
// already loaded: Note [Joining NCCL as its profiler] in
// nccl/profiler_enable.h) and looks these up newest first.
//
// The structs are constant-initialized data (function addresses and a
// string): nothing runs at load (docs/design.md, principle 4). They are
// writable, as a C plugin's would be, though NCCL only reads them.
// tests/interpose/check_seal.sh expects exactly these data exports.
#include "nccl/profiler_abi.h"
#include "nccl/profiler_versions.h"

// Adding a version: a row here, its struct in profiler_abi.h, its adaptors in
// profiler_versions.h.
#define GPUSLACK_NCCL_PROFILER_VERSIONS(X) X(1) X(2) X(3) X(4) X(5) X(6)

#define GPUSLACK_EXPORT_PROFILER(n)                                                                     \
  extern "C" __attribute__((visibility("default"))) ::gpuslack::nccl::abi::ProfilerV##n ncclProfiler_v##n; \
  ::gpuslack::nccl::abi::ProfilerV##n ncclProfiler_v##n = {                                              \
      ::gpuslack::nccl::profiler::kPluginName,                                                          \
      &::gpuslack::nccl::profiler::v##n::init,                                                          \
      &::gpuslack::nccl::profiler::v##n::start_event,                                                   \
      &::gpuslack::nccl::profiler::stop_event,                                                          \
      &::gpuslack::nccl::profiler::v##n::record_event_state,                                            \
      &::gpuslack::nccl::profiler::finalize,                                                            \
  };
GPUSLACK_NCCL_PROFILER_VERSIONS(GPUSLACK_EXPORT_PROFILER)
#undef GPUSLACK_EXPORT_PROFILER

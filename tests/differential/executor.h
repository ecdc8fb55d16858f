// The executor: runs a Program (program.h) through one Api (api.h), one
// host thread per ThreadProgram, all at once, and records what every op
// returned: the Trace two runs are compared by (compare.h).
//
// Per op it records the return code, the runtime's last error right after
// (cudaPeekAtLastError, then, unless the op leaves it pending,
// cudaGetLastError), errno, and what the op gave back (out-parameters
// cleared or not, pitches, second return codes). kObserve reads a buffer
// back — device memory through the runtime's own cudaMemcpy, never through
// a hook (a routed read could hide what a routed write did), host memory
// directly — and records a hash of every 512 bytes. At each barrier, with
// every thread waiting, thread 0 runs the global checks (GlobalResult).
//
// The hooked run compares as it goes (`check`): it stops at the first
// difference, before a diverged state can take the process down, and the
// crash report (crash_report.h) names the op each thread was in if it
// does anyway.
//
// Safety: the executor enforces Note [What an op may ask the runtime to
// touch] itself, on the buffers it really holds (an op that would break it,
// or that names a slot this run does not hold, is skipped, and recorded as
// skipped), so any subset of a program runs safely.
//
// Thread safety: execute() is not reentrant (one run at a time per process).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "api.h"
#include "program.h"

namespace differential {

struct Result {
  bool skipped = false;
  int rc = 0;            // cudaError_t
  int peek = 0;          // cudaPeekAtLastError() after the op
  int get = -1;          // cudaGetLastError() after the op, -1 when left pending
  int err = 0;           // errno after the op (set to 0 before it)
  int64_t v[3] = {0, 0, 0};  // what the op gave back (executor.cc says, per kind)
  uint64_t bytes = 0;          // kObserve: bytes read
  std::vector<uint32_t> hashes;  // kObserve: one per 512 bytes
};

// The global checks at a barrier (thread 0, every other thread waiting).
struct GlobalResult {
  bool final = false;
  int sync_rc = 0, info_rc = 0;
  uint64_t free_bytes = 0, total = 0;
  int live_device_blocks = 0;   // device-side buffers live in all threads
  // Final barrier: big allocations of `big` bytes (free - 64 MiB in the
  // runtime's run): a pass-through pool allocation, a cudaMalloc, and the
  // pool again; each freed and synchronized; then the free memory again.
  uint64_t big = 0;
  int big_pool_rc = -1, big_malloc_rc = -1, big_pool_again_rc = -1;
  int after_info_rc = 0;
  uint64_t free_after = 0;
};

struct Trace {
  std::vector<std::vector<Result>> threads;  // [thread][op index]
  std::vector<GlobalResult> globals;         // one per barrier
  long kernel_violations = 0;                // busy kernels that saw their buffer change
};

struct RunConfig {
  const Api* api = nullptr;         // the calls under test
  bool vmm = false;                 // allocator:vmm: ops marked not_under_vmm are skipped
  const Trace* reference = nullptr;  // the runtime's own run, when this is the hooked one
  const char* label = "";           // for crash reports
  // The hooked run's comparison, op by op and at each barrier: false stops
  // the run (every thread stops at its next op).
  std::function<bool(int thread, size_t index, const Result&)> check;
  std::function<bool(size_t barrier, const GlobalResult&)> check_global;
};

// Runs `program`; `*stopped` tells whether a check stopped it.
Trace execute(const Program& program, const RunConfig& config, bool* stopped);

}  // namespace differential

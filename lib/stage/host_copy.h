// host_copy: memcpy split across several threads, for the host side of
// large staged copies (one thread's memcpy is what limits a pageable copy
// once the DMA runs from pinned memory).
//
// The calling thread copies one part itself and then takes any part no
// helper has started yet, so it never waits for a helper busy with another
// caller's copy; it returns once every part has landed. Helpers are started
// on first use (at most kMaxThreads - 1, shared by all callers) and live
// until exit; they only ever run memcpy.
//
// Thread safety: any thread.
#pragma once

#include <cstddef>

#include "absl/functional/function_ref.h"

namespace gpuslack {
namespace stage {

inline constexpr int kMaxCopyThreads = 8;
// Parts smaller than this are not worth a handoff.
inline constexpr size_t kMinPartBytes = 256 * 1024;

// Copies n bytes (non-overlapping) with up to `threads` threads.
void host_copy(void* dst, const void* src, size_t n, int threads);

// Its fork child handler, once (register_fork_handlers in staged_copy.h).
void register_host_copy_fork_handler();

namespace testing {
// Tests of Note [The stager after a fork] (staged_copy.cc) only: runs
// `during` while the calling thread holds the helpers' lock.
void while_holding_host_copy_lock(absl::FunctionRef<void()> during);
}  // namespace testing

}  // namespace stage
}  // namespace gpuslack

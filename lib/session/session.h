// The session: gpuslack's life inside one process, from the first hooked
// CUDA call to the summary at exit.
//
// Note [Lazy and silent]: LD_PRELOAD puts gpuslack into every process a job
// starts (shells, compilers, nvidia-smi). Nothing happens at load: the
// session starts on the first hooked call (start(), out of line, once), and
// only a started session writes anything. A process that never calls CUDA
// sees no file, no line and no thread of gpuslack's.
//
// start() reads the configuration, starts the clock, registers the hooked
// calls with the ledger and NVTX, and arranges for the summary to be
// written: at exit (atexit), every summary_interval_s if configured, and on
// SIGTERM/SIGINT (signals.h) before the signal does what it did before. A
// forked child starts with no session (its first CUDA call starts a fresh
// one), so it never writes its parent's figures, and never waits for a lock
// a thread of its parent held at the fork (Note [Fork] in session.cc).
//
// Thread safety: every function, any thread. active() is one relaxed load.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "ledger/api_call.h"

namespace gpuslack {
namespace session {

namespace detail {
extern std::atomic<bool> g_active;
extern std::atomic<bool> g_last_reads_registered;
void register_last_reads_if_runtime_ready();
}  // namespace detail

// True once a session runs in this process.
inline bool active() { return detail::g_active.load(std::memory_order_relaxed); }

// Called by the runtime's hooks after a call that succeeded: registers the
// exit's last device reads once the runtime has made a context (Note [Last
// samples before the runtime's teardown], session.cc). One relaxed load once
// registered.
inline void after_runtime_call() {
  if (__builtin_expect(!detail::g_last_reads_registered.load(std::memory_order_relaxed), 0))
    detail::register_last_reads_if_runtime_ready();
}

// Starts the session (idempotent; racing first calls start it once).
// `calls` lists every hooked call, for the ledger and NVTX to know by id.
void start(const ApiCall* const* calls, int n_calls);

// Calls blocked longer than this many ticks record their call site.
// Valid once started.
uint64_t call_site_threshold_ticks();
// Refines call_site_threshold_ticks once the clock is calibrated; called on
// the slow path only.
void refine_threshold();

// Writes the summary now (text and/or JSON, per the configuration).
// `reason` goes into the summary ("exit", "periodic", "signal SIGTERM").
// Serialized: concurrent callers write one after the other.
void write_summary(const char* reason);

// The summary as of now, as the JSON document of docs/summary.schema.json
// (reason "api"); an empty string when no session has started.
std::string summary_json();

namespace testing {
// Tests of Note [Fork] (session.cc) only: runs `during(arg)` while the
// calling thread holds the session's locks (start's and the summary
// writer's), as a thread starting a session or writing a summary would at
// a fork.
void while_holding_locks(void (*during)(void*), void* arg);
}  // namespace testing

}  // namespace session
}  // namespace gpuslack

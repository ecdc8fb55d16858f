// NVTX ranges around hooked calls, in the "gpuslack" domain, so that
// Nsight Systems (or any NVTX tool) shows where a process blocked in CUDA.
//
// What a tool sees: one domain, "gpuslack"; one NVTX category per gpuslack
// Category (id = enum value + 1, named by category_name(): "allocation",
// "copies", ...), each with its own colour; one range per hooked call, whose
// message is the call's name (a registered string) and whose payload is the
// bytes the call moved or allocated (NVTX_PAYLOAD_TYPE_UNSIGNED_INT64); and
// marks for notable events (an OOM retry, ...).
//
// When to use: a hook calls push() before forwarding and pop() after, on the
// same thread, and mark() for one-off events. register_call() once per
// hooked symbol, beside ledger::register_call(); a push() of a call not yet
// registered registers it (once, on the slow path).
//
// Cost: push()/pop() are the fast path: one relaxed load of the enabled flag,
// one acquire load of the call's table entry, and NVTX's own function
// pointer load and null check. No lock, no allocation. With no tool
// attached (NVTX_INJECTION64_PATH unset when the first NVTX call ran), NVTX
// has set its pointers to null and a push+pop pair costs a few nanoseconds.
// The slow path (domain creation, string registration: register_slow in
// ranges.cc) takes a lock once per call id.
//
// Thread safety: every function, any thread. set_enabled() is meant for
// session start, before any hook runs; flipping it between a push() and its
// pop() unbalances that thread's range stack.
//
// NVTX is header-only: its state lives in hidden, weak, version-named
// globals, one copy per shared object, so our copy inside libgpuslack.so
// does not clash with the host process's copies. A tool attaches only if
// NVTX_INJECTION64_PATH is set before this copy's first NVTX call.
#pragma once

#include <cstdint>

#include "ledger/api_call.h"

namespace gpuslack {
namespace nvtx {

// Turns the ranges and marks on or off (the nvtx knob). Default: on.
void set_enabled(bool enabled);
bool enabled();

// Makes `call` known to NVTX: creates the domain and names its categories
// (first call only), and registers call->name as an NVTX string, kept in a
// table indexed by call->id that push() reads without a lock. `call` must
// have static storage duration. Idempotent; does nothing while disabled. A
// call whose id is >= ledger::kMaxCalls is not kept: its ranges carry
// call->name as a plain string.
void register_call(const ApiCall* call);

// Opens a range for one call of `call` on this thread's stack in the
// gpuslack domain, with `bytes` as payload. Hot path.
void push(const ApiCall& call, uint64_t bytes);

// Closes this thread's innermost gpuslack range. Hot path.
void pop();

// An instantaneous marker in the gpuslack domain. `message` is copied by
// the tool (if any) before return. Not for the hot path of every call.
void mark(const char* message);

// The NVTX category id and ARGB colour of a gpuslack Category.
constexpr uint32_t category_id(Category c) { return static_cast<uint32_t>(c) + 1; }
uint32_t category_color(Category c);

}  // namespace nvtx
}  // namespace gpuslack

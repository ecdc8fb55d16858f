// What NCCL's profiler plugin interface tells gpuslack, per collective:
// NCCL's own choice of algorithm, protocol and channels, and (interface v4
// and later) the GPU time of its kernel's channels. One implementation of
// the plugin's callbacks, whatever the version; the adaptors of
// profiler_versions.h turn each version's descriptors into these calls.
//
// Records: one row per (communicator hash, nranks, nnodes, operation, log2
// size bucket, algorithm, protocol): calls, channels summed, bytes
// (nccl-tests' S, nccl/collectives.h), and for the calls whose kernel
// channels reported GPU timestamps, their GPU time (the span from the first
// channel's start to the last channel's stop) and bytes. Report time turns
// them into mean channels and busbw.
//
// Bounded memory (Note [Profiler slots]): every table is fixed at build
// time (about 2 MiB, zero-initialized: touched as used): kMaxContexts
// communicators, kRows rows, a ring of kCollSlots collectives and
// kKernelSlots kernel channels in flight. What does not fit
// is counted in `dropped`, as the GPU timeline counts its lost records: a
// communicator past kMaxContexts (NCCL gets an empty mask for it), a row
// past kRows, a kernel channel whose collective's slot was reused before it
// stopped.
//
// Hot path (start_coll, start_kernel_channel, kernel_channel_stop,
// end_event: NCCL's user threads and its proxy/profiler threads): a few
// relaxed atomics on a ring index and a probe of the row table; no lock, no
// allocation, no system call. bench/nccl_profiler_bench.cc measures it.
//
// Names are normalized to NCCL_ALGO / NCCL_PROTO's spelling (NCCL passes
// its profiler "RING", "SIMPLE"; the environment variables and the cost
// model, nccl/cost_model.h, say "Ring", "Simple"): "Ring", "Tree",
// "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"; "LL",
// "LL128", "Simple". Anything else is "other".
//
// Thread safety: every function, any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nccl/collectives.h"

namespace gpuslack {
namespace nccl {
namespace profiler {

inline constexpr int kMaxContexts = 1024;
inline constexpr int kRows = 1024;
// NCCL keeps up to 16384 profiler ops in flight (src/plugin/profiler.cc,
// NCCL_PROFILER_DEFAULT_MAX_INFLIGHT: 64 channels × 64 events × 4).
inline constexpr int kCollSlots = 16384;
inline constexpr int kKernelSlots = 32768;

// Normalized algorithm and protocol: small indices into algo_name() /
// proto_name().
int algo_index(const char* nccl_name);   // case-insensitive, '_' ignored; unknown: the last index
int proto_index(const char* nccl_name);
int algo_index_v1(uint8_t nccl_enum);    // NCCL_ALGO_* (v1)
int proto_index_v1(uint8_t nccl_enum);   // NCCL_PROTO_* (v1)
const char* algo_name(int index);        // "Ring", ..., "other"
const char* proto_name(int index);       // "LL", "LL128", "Simple", "other"
// NCCL's function names ("AllReduce", ...) and v1's ncclFunc_t; false for
// SendRecv and anything unknown.
bool op_of(const char* nccl_func, CollectiveOp* out);
bool op_of_v1(uint8_t nccl_func, CollectiveOp* out);
// ncclDatatypeToString's names ("ncclFloat32", ...): element size, 0 unknown.
size_t datatype_size_of(const char* nccl_datatype);

// ---- the plugin's callbacks, version-independent ----

// One communicator: what NCCL's init told (v4+) or what the first
// collective tells (v1-v3: comm_hash from the descriptor, nranks and nnodes
// unknown, 0). Null when the table is full.
struct Context;
Context* open_context(int version, uint64_t comm_hash, int nnodes, int nranks, int rank);
void close_context(Context* c);

struct CollStart {
  uint64_t comm_hash = 0;  // v1-v3: the descriptor's; 0 takes the context's
  CollectiveOp op = CollectiveOp::kAllReduce;
  size_t count = 0;
  size_t elem_size = 0;
  int algo = 0, proto = 0;  // indices
  int channels = 0;
};
// A collective: counts it in its row. Returns its event handle (never null
// when recorded: NCCL passes it as the parent of its kernel channels).
void* start_coll(Context* c, const CollStart& s);
// A kernel channel of `parent` (a handle start_coll returned) that began at
// GPU time `start_ns` (0: the version gives none). Returns its handle, or
// null when it cannot be timed.
void* start_kernel_channel(void* parent, uint64_t start_ns);
// ncclProfilerKernelChStop: the channel ended at GPU time `stop_ns`.
void kernel_channel_stop(void* handle, uint64_t stop_ns);
// stopEvent for any handle this file returned.
void end_event(void* handle);

// init was called: the plugin is on, as version `version` (the newest NCCL
// found). Also says which version for the summary.
void note_loaded(int version);
int loaded_version();  // 0: NCCL never called init

// ---- report time ----

struct Record {
  uint64_t comm_hash = 0;
  int nranks = 0, nnodes = 0;  // 0: unknown
  CollectiveOp op = CollectiveOp::kAllReduce;
  int bucket = 0;              // bytes per call in [2^bucket, 2^(bucket+1))
  int algo = 0, proto = 0;     // indices
  uint64_t calls = 0;
  uint64_t channels_sum = 0;
  uint64_t bytes = 0;
  uint64_t timed = 0;          // calls with GPU time from their kernel channels
  uint64_t timed_bytes = 0;
  uint64_t gpu_ns = 0;
};

struct Snapshot {
  int version = 0;             // loaded_version()
  std::vector<Record> rows;    // in table order
  uint64_t records = 0;        // collectives recorded
  uint64_t dropped = 0;        // events that did not fit (see above)
};

Snapshot snapshot();
// Forgets every figure and context (tests; a forked child).
void reset();

}  // namespace profiler
}  // namespace nccl
}  // namespace gpuslack

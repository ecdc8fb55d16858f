// gpuslack's knobs: one table, read once from GPUSLACK_CONF.
//
// GPUSLACK_CONF is a comma-separated list of key:value pairs, the syntax of
// PYTORCH_CUDA_ALLOC_CONF (key=value is accepted too), for example
//   GPUSLACK_CONF=log_level:debug,summary_interval_s:60
// GPUSLACK_OUTPUT, when set, gives output_dir unless GPUSLACK_CONF names it
// (an explicit key wins).
// Every knob is a row of GPUSLACK_OPTIONS below: its key, type, default and
// one line of documentation (the README's table lists the same rows; a test,
// Options.ReadmeListsEveryKnob, keeps the two in step). A key that is unknown, or a value that
// does not parse, gets one line on stderr and the default: configuration
// never stops the host process.
//
// Thread safety: options() parses on first use (thread-safe static) and
// returns an immutable object; read it from any thread.
#pragma once

#include <string>
#include <vector>

namespace gpuslack {

// X(key, C++ type, default, doc)
#define GPUSLACK_OPTIONS(X)                                                      \
  X(log_level, std::string, "warn",                                            \
    "least severe message written: off, error, warn, info, debug")             \
  X(log_file, std::string, "",                                                 \
    "append log lines to this file instead of stderr")                         \
  X(output_dir, std::string, "gpuslack-out",                                   \
    "directory for the summary files (GPUSLACK_OUTPUT sets it when this key is not given)") \
  X(text_summary, std::string, "stderr",                                       \
    "the text summary at exit: stderr, file (beside the JSON) or off")         \
  X(json_summary, bool, true, "write the JSON summary to output_dir")          \
  X(summary_interval_s, double, 0.0,                                           \
    "also write the summary every this many seconds (0: only at exit)")       \
  X(signals, bool, true,                                                       \
    "write the summary on SIGTERM/SIGINT, then let the signal act as before")  \
  X(call_site_threshold_us, double, 100.0,                                     \
    "calls blocked longer than this record their call site")                   \
  X(top_call_sites, int, 5, "call sites listed per category in the summary")   \
  X(nvtx, bool, true, "emit NVTX ranges in the \"gpuslack\" domain")         \
  X(allocator, std::string, "native",                                          \
    "cudaMalloc/cudaFree: native, or vmm (gpuslack's allocator, experimental)")  \
  X(free_sync, bool, false,                                                    \
    "vmm: keep cudaFree's device synchronization (for code that relied on it)") \
  X(cache_limit_mb, int, 0,                                                    \
    "vmm: release free physical memory past this many MiB (0: only on demand)") \
  X(map_chunk_mb, int, 16,                                                     \
    "vmm: back runs of granules with physical chunks of up to this many MiB")   \
  X(pin, bool, true,                                                          \
    "serve cudaMallocHost/cudaHostAlloc/cudaFreeHost from gpuslack's pinned heap") \
  X(pinned_cap_mb, int, 0,                                                     \
    "pin: the most host memory the heap pins, MiB (0: a quarter of physical memory)") \
  X(pinned_chunk_mb, int, 64,                                                  \
    "pin: the heap pins host memory in chunks of this many MiB (at least 2)") \
  X(collective_timing_every, int, 8,                                           \
    "time the GPU side of one NCCL call in this many (each costs two events)") \
  X(expected_busbw_gbps, double, 0.0,                                          \
    "warn when large collectives run below half this bus bandwidth (0: off)") \
  X(stage_copies, bool, true,                                                  \
    "copy pageable host memory through gpuslack's pinned staging (no stream drain)") \
  X(exact_copy_semantics, bool, false,                                         \
    "pageable host-to-device copies drain their stream as the driver's do")   \
  X(async_d2h, bool, false,                                                    \
    "pageable device-to-host cudaMemcpyAsync returns before the data lands (README)") \
  X(staging_budget_mb, int, 256,                                               \
    "pinned staging memory, MiB at most (copies wait for it, then go native)") \
  X(staging_chunk_kb, int, 1024,                                               \
    "staged copies move in pipelined chunks of this many KiB")                \
  X(staging_threshold_kb, int, 0,                                              \
    "pageable copies smaller than this many KiB go to the runtime's own call") \
  X(staging_copy_threads, int, 1,                                              \
    "host threads copying each large chunk in and out of staging (1 to 8)")

struct Options {
#define GPUSLACK_OPTION_FIELD(key, type, def, doc) type key = def;
  GPUSLACK_OPTIONS(GPUSLACK_OPTION_FIELD)
#undef GPUSLACK_OPTION_FIELD
};

// The options of this process, parsed from GPUSLACK_CONF on first call.
const Options& options();

// Parses a GPUSLACK_CONF string and the GPUSLACK_OUTPUT value (may be null). Each problem found is appended to
// `errors` as one line (key and reason); the affected knob keeps its
// default.
Options parse_options(const char* conf, const char* output, std::vector<std::string>* errors);

// One line per knob: "key (type, default): doc".
std::vector<std::string> options_doc();

}  // namespace gpuslack

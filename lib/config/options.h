// gpuslack's knobs: one table, read once from GPUSLACK_CONF.
//
// GPUSLACK_CONF is a comma-separated list of key:value pairs, the syntax of
// PYTORCH_CUDA_ALLOC_CONF (key=value is accepted too), for example
//   GPUSLACK_CONF=log_level:debug,summary_interval_s:60
// GPUSLACK_OUTPUT, when set, gives output_dir unless GPUSLACK_CONF names it
// (an explicit key wins).
// Every knob is a row of GPUSLACK_OPTIONS below: its key, type, default,
// range and one line of documentation (docs/configuration.md's table lists
// the same rows and ranges; a test, Options.ConfigurationPageListsEveryKnob,
// keeps the two in step).
//
// Note [Knob ranges]: every numeric knob has a range, chosen so that no
// value in it can hurt the host process (a periodic summary at most ten
// times a second, a staging chunk of at most 64 MiB, ...). A key that is
// unknown, a value that does not parse, is not finite (nan, inf) or is out
// of its range gets one line on stderr and the knob keeps its default:
// configuration never stops the host process. One rule ties two knobs: a
// staging_chunk_kb larger than staging_budget_mb is refused the same way
// (the budget is a cap the user set; it is never raised to fit a chunk).
//
// Note [Secure execution]: in a process started with AT_SECURE (setuid,
// setgid, file capabilities: config/environment.h), the environment belongs
// to a less privileged user. gpuslack then reads none of it (no
// GPUSLACK_CONF, no GPUSLACK_OUTPUT, no rank or NCCL_* variables) and runs
// with secure_options(): the defaults, except that it writes no file at all
// (no JSON summary, no log file: the text summary at exit and any log line
// go to stderr, which glibc opens on /dev/null for such a process if it was
// closed) and NVTX stays off (NVTX would dlopen the library
// NVTX_INJECTION64_PATH names, as root). Nothing tells the user the
// variables were ignored: that too would be reading them.
//
// Thread safety: options() parses on first use (thread-safe static) and
// returns an immutable object; read it from any thread.
#pragma once

#include <string>
#include <vector>

namespace gpuslack {

// The values a numeric knob accepts: min to max, and 0 as well where 0
// means "off" (or_zero). Strings and bools have kNoRange; the strings' own
// checks (allocator, text_summary, log_level) are in options.cc.
struct Range {
  double min = 0;
  double max = 0;
  bool or_zero = false;
  bool numeric = false;
};
constexpr Range kNoRange{};
constexpr Range between(double min, double max) { return Range{min, max, false, true}; }
constexpr Range zero_or(double min, double max) { return Range{min, max, true, true}; }

// X(key, C++ type, default, range, doc)
#define GPUSLACK_OPTIONS(X)                                                                        \
  X(log_level, std::string, "warn", kNoRange, "least severe message written: off, error, warn, info, debug") \
  X(log_file, std::string, "", kNoRange, "append log lines to this file instead of stderr")       \
  X(output_dir, std::string, "gpuslack-out", kNoRange,                                             \
    "directory for the summary files (GPUSLACK_OUTPUT sets it when this key is not given)")        \
  X(text_summary, std::string, "stderr", kNoRange,                                                 \
    "the text summary at exit: stderr, file (beside the JSON) or off")                             \
  X(summary_detail, std::string, "auto", kNoRange,                                                 \
    "the text summary: short (headline, findings, where the rest is), full, or auto (short on a terminal)") \
  X(json_summary, bool, true, kNoRange, "write the JSON summary to output_dir")                    \
  X(summary_interval_s, double, 0.0, zero_or(0.1, 604800),                                         \
    "also write the summary every this many seconds (0: only at exit)")                            \
  X(signals, bool, true, kNoRange, "write the summary on SIGTERM/SIGINT, then let the signal act as before") \
  X(call_site_threshold_us, double, 100.0, between(0, 3.6e9),                                      \
    "calls blocked longer than this record their call site")                                       \
  X(top_call_sites, int, 5, between(0, 1000), "call sites listed per category in the summary")     \
  X(python_frames, bool, true, kNoRange,                                                           \
    "call sites start with the calling thread's Python frames (file:line in function)")            \
  X(nvtx, bool, true, kNoRange, "emit NVTX ranges in the \"gpuslack\" domain")                     \
  X(allocator, std::string, "native", kNoRange,                                                    \
    "cudaMalloc/cudaFree: native, or vmm (gpuslack's allocator, experimental)")                    \
  X(free_sync, bool, false, kNoRange,                                                              \
    "vmm: keep cudaFree's device synchronization (for code that relied on it)")                    \
  X(cache_limit_mb, int, 0, between(0, 16777216),                                                  \
    "vmm: release free physical memory past this many MiB (0: only on demand)")                    \
  X(map_chunk_mb, int, 20, between(0, 1024),                                                       \
    "vmm: pages of this many MiB, each one physical handle or runs of pages one (0: one granule, one handle each)")             \
  X(ipc_fds, std::string, "pidfd", kNoRange,                                                       \
    "vmm IPC: how an importer takes the exporter's descriptors: pidfd (pidfd_getfd, the exporter's socket where refused) or socket") \
  X(pin, bool, true, kNoRange,                                                                     \
    "serve cudaMallocHost/cudaHostAlloc/cudaFreeHost from gpuslack's pinned heap")                 \
  X(pinned_cap_mb, int, 0, between(0, 16777216),                                                   \
    "pin: the most host memory the heap pins, MiB (0: a quarter of physical memory)")              \
  X(pinned_chunk_mb, int, 64, between(2, 1024), "pin: the heap pins host memory in chunks of this many MiB") \
  X(collective_timing_every, int, 8, between(1, 1000000),                                          \
    "time the GPU side of one NCCL call in this many (each costs two events)")                     \
  X(nccl_profiler, bool, true, kNoRange,                                                           \
    "join NCCL (2.23+) as its profiler plugin: algorithm, protocol and channels per collective (steps aside for another)") \
  X(expected_busbw_gbps, double, 0.0, between(0, 100000),                                          \
    "expected bus bandwidth of large collectives, GB/s: a warning and a finding below half (0: fabric)") \
  X(fabric, std::string, "auto", kNoRange,                                                         \
    "the link collectives cross, for their expected bus bandwidth: auto, nvlink4, ib400, nvlink4+ib400, ...") \
  X(stage_copies, bool, true, kNoRange,                                                            \
    "copy pageable host memory through gpuslack's pinned staging (no stream drain)")               \
  X(exact_copy_semantics, bool, false, kNoRange,                                                   \
    "pageable host-to-device copies drain their stream as the driver's do")                        \
  X(async_d2h, bool, false, kNoRange,                                                              \
    "pageable device-to-host cudaMemcpyAsync returns before the data lands (docs/pinned-and-staged.md)") \
  X(staging_budget_mb, int, 256, between(1, 65536),                                                \
    "pinned staging memory, MiB at most (copies wait for it, then go native)")                     \
  X(staging_chunk_kb, int, 1024, between(4, 65536),                                                \
    "staged copies move in pipelined chunks of this many KiB (at most the budget)")                \
  X(staging_threshold_kb, int, 0, between(0, 4194304),                                             \
    "pageable copies smaller than this many KiB go to the runtime's own call")                     \
  X(staging_copy_threads, int, 1, between(1, 8),                                                   \
    "host threads copying each large chunk in and out of staging")                                 \
  X(gpu_timeline, std::string, "auto", kNoRange,                                                   \
    "GPU busy and idle from CUPTI: auto (where it can coexist with other tools), on, off")         \
  X(gpu_timeline_buffer_mb, int, 64, between(1, 4096),                                             \
    "gpu_timeline: CUPTI activity buffers are drawn from a pool of this many MiB")                 \
  X(launch_bound_gap_us, double, 20.0, between(0, 1e6),                                            \
    "gpu_timeline: idle gaps no longer than this with no blocking call in flight are launch-bound") \
  X(prometheus_dir, std::string, "", kNoRange,                                                     \
    "node_exporter textfile metrics here, every summary_interval_s (15 s when 0) and at exit (\"\": off)") \
  X(device_health, std::string, "auto", kNoRange,                                                  \
    "SM clock, throttle reasons, temperature and power of each GPU from NVML, once a second: auto, off")

struct Options {
#define GPUSLACK_OPTION_FIELD(key, type, def, range, doc) type key = def;
  GPUSLACK_OPTIONS(GPUSLACK_OPTION_FIELD)
#undef GPUSLACK_OPTION_FIELD
};

// The options of this process, read on first call:
// options_from_environment(secure_execution()); the log is configured from
// them (log_level, log_file: Note [Who configures the log] in log/log.h),
// then each problem is logged.
const Options& options();

// What options() holds: parse_options of GPUSLACK_CONF and GPUSLACK_OUTPUT,
// or, when `secure`, secure_options() without reading the environment.
Options options_from_environment(bool secure, std::vector<std::string>* errors);

// The options of a secure process (Note [Secure execution]).
Options secure_options();

// Parses a GPUSLACK_CONF string and the GPUSLACK_OUTPUT value (may be
// null). Each problem found is appended to `errors` as one line (key and
// reason); the affected knob keeps its default.
Options parse_options(const char* conf, const char* output, std::vector<std::string>* errors);

// One knob as a process would run with it (knobs_in_force): the value and
// the default as plain text ("vmm", "true", "0.1"; show() without quotes),
// and where the value came from: "GPUSLACK_CONF", "GPUSLACK_OUTPUT",
// "default", "default (GPUSLACK_CONF's value refused)", or "secure mode"
// (secure_options() differs from the default there).
struct KnobInForce {
  std::string key;
  std::string type;  // "string", "bool", "non-negative number", "non-negative integer"
  std::string value;
  std::string default_value;
  std::string source;
};

// Every knob, in the table's order, as parse_options(conf, output) or, when
// `secure`, secure_options() gives it; the parser's error lines go to
// `errors`. Reads no environment and logs nothing: `python -m gpuslack
// doctor` asks it (gpuslack_knobs_json) for the knobs a program would get.
std::vector<KnobInForce> knobs_in_force(const char* conf, const char* output, bool secure,
                                        std::vector<std::string>* errors);

// A range as the documentation writes it: "1 to 8", "0, or 0.1 to 604800";
// empty for kNoRange.
std::string range_text(const Range& range);

// One line per knob: "key (type, default[, range]): doc".
std::vector<std::string> options_doc();

}  // namespace gpuslack

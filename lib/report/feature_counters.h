// The report's own copies of the features' counters: what the summary's
// "allocator", "staging", "pinned" and "device_health" sections hold
// (summary.h), copied from the features' live structs (alloc::DeviceStats,
// alloc::Timeline::Samples, stage::StagingStats, pin::PinnedStats,
// health::DeviceHealth) once, at the boundary: build_summary and the
// builders it calls (Note [Counters copied at the boundary]).
//
// Note [Counters copied at the boundary]: the summary file is a versioned
// format (docs/summary.schema.json) and a feature's counters are its own
// business. Were the summary to embed a feature's struct, adding, renaming
// or retyping a counter there would change what the writer, the reader and
// the text see, and so the file. Here each section has its own type, with
// the same names the JSON uses, and one function copies a feature's struct
// into it field by field: a feature may change its counters freely, and
// only the copy (this file's .cc) has to follow; the file changes only
// when a field is added here and to the schema. The reader fills these
// types, never a feature's.
//
// Thread safety: plain data; the copies are pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "alloc/device_stats.h"
#include "alloc/timeline.h"
#include "health/device_health.h"
#include "pin/pinned_stats.h"
#include "stage/staging_stats.h"

namespace gpuslack {
namespace report {

// AllocatorCounters::created_without's bits ("created_without" in the JSON).
inline constexpr unsigned kCreatedWithoutPosixFd = 1, kCreatedWithoutRdma = 2;

// One device's VMM allocator (schema: allocator[]); alloc/device_stats.h
// says what each figure means. Only what the file carries: the feature's
// epochs and fence waits are not here.
struct AllocatorCounters {
  uint64_t allocated = 0, peak_allocated = 0;
  uint64_t reserved = 0, peak_reserved = 0;
  uint64_t largest_free = 0;
  uint64_t pending_free = 0;
  uint64_t allocations = 0;
  uint64_t frees = 0;
  uint64_t granules_mapped = 0, granules_unmapped = 0;
  uint64_t chunks_mapped = 0, chunks_unmapped = 0;
  uint64_t reservations = 0;
  uint64_t oom_retries = 0;
  uint64_t failed_allocations = 0;
  double stall_s = 0;
  uint64_t stream_reuses = 0;
  uint64_t deferred_frees = 0;
  uint64_t capture_fallbacks = 0;
  uint64_t unmap_calls = 0, set_access_calls = 0;
  unsigned created_without = 0;  // kCreatedWithout* bits
};

// allocated/reserved over the run (schema: allocator[].timeline).
struct AllocatorSamples {
  std::vector<double> t_s;  // window start, seconds since the allocator was made
  std::vector<uint64_t> allocated;
  std::vector<uint64_t> reserved;
};

// The staged copies (schema: staging); stage/staging_stats.h says what each
// figure means.
struct StagingCounters {
  struct Direction {
    uint64_t seen = 0, seen_bytes = 0;
    uint64_t staged = 0, staged_bytes = 0;
    uint64_t passed = 0, passed_bytes = 0;
    uint64_t blocked_ns = 0;
  };
  bool enabled = false;
  bool exact = false;
  bool async_d2h = false;
  uint64_t threshold_bytes = 0;
  uint64_t chunk_bytes = 0;
  Direction h2d, d2h;
  uint64_t passed_off = 0;
  uint64_t passed_small = 0;
  uint64_t passed_capture = 0;
  uint64_t passed_capture_unknown = 0;
  uint64_t passed_exact = 0;
  uint64_t passed_error_pending = 0;
  uint64_t passed_unsupported = 0;
  uint64_t passed_measured = 0;
  uint64_t passed_unknown_work = 0;
  uint64_t partial = 0;
  uint64_t host_work_waits = 0, host_work_wait_ns = 0;
  uint64_t legacy_h2d = 0, legacy_other_streams = 0;
  uint64_t budget_waits = 0, budget_wait_ns = 0;
  uint64_t async_d2h_copies = 0;
  uint64_t budget_bytes = 0;
  uint64_t pinned_bytes = 0;
  uint64_t peak_in_use_bytes = 0;
  uint64_t pin_failures = 0;
};

// The pinned host heap (schema: pinned); pin/pinned_stats.h says what each
// figure means.
struct PinnedCounters {
  uint64_t pinned = 0, peak_pinned = 0;
  uint64_t live = 0, peak_live = 0;
  uint64_t cap = 0;
  uint64_t chunk_size = 0;
  uint64_t chunks = 0, chunks_allocated = 0, chunks_released = 0;
  uint64_t allocations = 0;
  uint64_t frees = 0;
  uint64_t pending_free = 0;
  uint64_t epochs = 0;
  uint64_t deferred_frees = 0;
  uint64_t cap_hits = 0;
  uint64_t fallbacks = 0;
  uint64_t passthrough = 0;
  uint64_t trimmed = 0;
  double stall_s = 0;
};

// One device's NVML figures (schema: device_health.devices[]);
// health/device_health.h says what each means. The readings over time go
// to the series (report/series.h), not here.
struct DeviceHealthRow {
  int device = 0;
  std::string name, uuid;
  std::string nvml_handle = "gpu";
  uint64_t samples = 0;
  double sm_clock_mhz_mean = 0, sm_clock_mhz_min = 0, sm_clock_max_mhz = 0;
  double clock_ratio_mean = 0;
  uint64_t throttled_samples = 0;
  std::vector<std::string> throttle_reasons;
  double temperature_c_mean = 0, temperature_c_max = 0;
  double power_w_mean = 0, power_limit_w = 0;
  uint64_t memory_used_bytes_max = 0;
};

// The copies at the boundary (Note [Counters copied at the boundary]).
AllocatorCounters allocator_counters(const alloc::DeviceStats& s);
AllocatorSamples allocator_samples(const alloc::Timeline::Samples& s);
StagingCounters staging_counters(const stage::StagingStats& s);
PinnedCounters pinned_counters(const pin::PinnedStats& s);
DeviceHealthRow device_health_row(const health::DeviceHealth& d);
// The other way, for the feature's own text of a row (health::throttle_line).
health::DeviceHealth health_figures(const DeviceHealthRow& r);

}  // namespace report
}  // namespace gpuslack

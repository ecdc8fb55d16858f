// StagingStats: what the staged copies report (Stager::stats()), read by
// the summary (report/summary.h) and tests. Plain data, no dependency.
//
// "Pageable copies" are copies between device memory and pageable host
// memory through cudaMemcpy(Async) and cudaMemcpy2D(Async). Each is either
// staged or passed through to the runtime's own call (with the reason).
// blocked_ns is measured. There is no estimate of what the runtime's own
// call would have blocked: Note [No native estimate] in staged_copy.h.
#pragma once

#include <cstdint>

namespace gpuslack {
namespace stage {

struct StagingStats {
  struct Direction {
    uint64_t seen = 0, seen_bytes = 0;      // pageable copies seen
    uint64_t staged = 0, staged_bytes = 0;  // went through staging (at least in part)
    uint64_t passed = 0, passed_bytes = 0;  // went to the runtime's own call
    uint64_t blocked_ns = 0;                // host time inside staged calls: measured
  };

  // Configuration in effect.
  bool enabled = false;
  bool exact = false;
  bool async_d2h = false;
  uint64_t threshold_bytes = 0;
  uint64_t chunk_bytes = 0;

  Direction h2d, d2h;

  // Why copies passed through (each pageable copy passed counts once).
  uint64_t passed_off = 0;            // stage_copies:false
  uint64_t passed_small = 0;          // below staging_threshold_kb
  uint64_t passed_capture = 0;        // a graph was being captured
  uint64_t passed_capture_unknown = 0;  // the stream's capture status could not be read (query failed)
  uint64_t passed_exact = 0;          // exact_copy_semantics (H2D)
  uint64_t passed_error_pending = 0;  // the thread had a runtime error pending: left untouched
  uint64_t passed_unsupported = 0;    // a 2D row wider than a chunk
  uint64_t passed_measured = 0;       // D2H: the runtime's own copy measured faster (or was being measured)
  uint64_t passed_unknown_work = 0;   // host-visible work that could not be waited for by event
  uint64_t partial = 0;               // staged in part, the rest native (no staging memory in time)

  // Copy stalls inside staged calls.
  uint64_t host_work_waits = 0;       // waited for the application's D2H copies / host functions
  uint64_t host_work_wait_ns = 0;
  uint64_t legacy_h2d = 0;            // staged H2D copies on the legacy default stream
  uint64_t legacy_other_streams = 0;  // blocking streams those waited for (besides their own)
  uint64_t budget_waits = 0;          // waited for a staging event: budget used up
  uint64_t budget_wait_ns = 0;
  uint64_t async_d2h_copies = 0;      // D2H copies left to a host function (async_d2h)

  // Staging memory.
  uint64_t budget_bytes = 0;
  uint64_t pinned_bytes = 0;
  uint64_t peak_in_use_bytes = 0;
  uint64_t pin_failures = 0;
};

}  // namespace stage
}  // namespace gpuslack

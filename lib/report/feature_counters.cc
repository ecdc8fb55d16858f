#include "report/feature_counters.h"

namespace gpuslack {
namespace report {

AllocatorCounters allocator_counters(const alloc::DeviceStats& s) {
  AllocatorCounters c;
  c.allocated = s.allocated;
  c.peak_allocated = s.peak_allocated;
  c.reserved = s.reserved;
  c.peak_reserved = s.peak_reserved;
  c.largest_free = s.largest_free;
  c.pending_free = s.pending_free;
  c.allocations = s.allocations;
  c.frees = s.frees;
  c.granules_mapped = s.granules_mapped;
  c.granules_unmapped = s.granules_unmapped;
  c.chunks_mapped = s.chunks_mapped;
  c.chunks_unmapped = s.chunks_unmapped;
  c.reservations = s.reservations;
  c.oom_retries = s.oom_retries;
  c.failed_allocations = s.failed_allocations;
  c.stall_s = s.stall_s;
  c.stream_reuses = s.stream_reuses;
  c.deferred_frees = s.deferred_frees;
  c.capture_fallbacks = s.capture_fallbacks;
  c.unmap_calls = s.unmap_calls;
  c.set_access_calls = s.set_access_calls;
  if (s.created_without & alloc::kCreatedWithoutPosixFd) c.created_without |= kCreatedWithoutPosixFd;
  if (s.created_without & alloc::kCreatedWithoutRdma) c.created_without |= kCreatedWithoutRdma;
  return c;
}

AllocatorSamples allocator_samples(const alloc::Timeline::Samples& s) {
  AllocatorSamples c;
  c.t_s = s.t_s;
  c.allocated = s.allocated;
  c.reserved = s.reserved;
  return c;
}

namespace {

StagingCounters::Direction staging_direction(const stage::StagingStats::Direction& d) {
  StagingCounters::Direction c;
  c.seen = d.seen;
  c.seen_bytes = d.seen_bytes;
  c.staged = d.staged;
  c.staged_bytes = d.staged_bytes;
  c.passed = d.passed;
  c.passed_bytes = d.passed_bytes;
  c.blocked_ns = d.blocked_ns;
  return c;
}

}  // namespace

StagingCounters staging_counters(const stage::StagingStats& s) {
  StagingCounters c;
  c.enabled = s.enabled;
  c.exact = s.exact;
  c.async_d2h = s.async_d2h;
  c.threshold_bytes = s.threshold_bytes;
  c.chunk_bytes = s.chunk_bytes;
  c.h2d = staging_direction(s.h2d);
  c.d2h = staging_direction(s.d2h);
  c.passed_off = s.passed_off;
  c.passed_small = s.passed_small;
  c.passed_capture = s.passed_capture;
  c.passed_capture_unknown = s.passed_capture_unknown;
  c.passed_exact = s.passed_exact;
  c.passed_error_pending = s.passed_error_pending;
  c.passed_unsupported = s.passed_unsupported;
  c.passed_measured = s.passed_measured;
  c.passed_unknown_work = s.passed_unknown_work;
  c.partial = s.partial;
  c.host_work_waits = s.host_work_waits;
  c.host_work_wait_ns = s.host_work_wait_ns;
  c.legacy_h2d = s.legacy_h2d;
  c.legacy_other_streams = s.legacy_other_streams;
  c.budget_waits = s.budget_waits;
  c.budget_wait_ns = s.budget_wait_ns;
  c.async_d2h_copies = s.async_d2h_copies;
  c.budget_bytes = s.budget_bytes;
  c.pinned_bytes = s.pinned_bytes;
  c.peak_in_use_bytes = s.peak_in_use_bytes;
  c.pin_failures = s.pin_failures;
  return c;
}

PinnedCounters pinned_counters(const pin::PinnedStats& s) {
  PinnedCounters c;
  c.pinned = s.pinned;
  c.peak_pinned = s.peak_pinned;
  c.live = s.live;
  c.peak_live = s.peak_live;
  c.cap = s.cap;
  c.chunk_size = s.chunk_size;
  c.chunks = s.chunks;
  c.chunks_allocated = s.chunks_allocated;
  c.chunks_released = s.chunks_released;
  c.allocations = s.allocations;
  c.frees = s.frees;
  c.pending_free = s.pending_free;
  c.epochs = s.epochs;
  c.deferred_frees = s.deferred_frees;
  c.cap_hits = s.cap_hits;
  c.fallbacks = s.fallbacks;
  c.passthrough = s.passthrough;
  c.trimmed = s.trimmed;
  c.stall_s = s.stall_s;
  return c;
}

DeviceHealthRow device_health_row(const health::DeviceHealth& d) {
  DeviceHealthRow r;
  r.device = d.device;
  r.name = d.name;
  r.uuid = d.uuid;
  r.nvml_handle = d.nvml_handle;
  r.samples = d.samples;
  r.sm_clock_mhz_mean = d.sm_clock_mhz_mean;
  r.sm_clock_mhz_min = d.sm_clock_mhz_min;
  r.sm_clock_max_mhz = d.sm_clock_max_mhz;
  r.clock_ratio_mean = d.clock_ratio_mean;
  r.throttled_samples = d.throttled_samples;
  r.throttle_reasons = d.throttle_reasons;
  r.temperature_c_mean = d.temperature_c_mean;
  r.temperature_c_max = d.temperature_c_max;
  r.power_w_mean = d.power_w_mean;
  r.power_limit_w = d.power_limit_w;
  r.memory_used_bytes_max = d.memory_used_bytes_max;
  return r;
}

health::DeviceHealth health_figures(const DeviceHealthRow& r) {
  health::DeviceHealth d;
  d.device = r.device;
  d.name = r.name;
  d.uuid = r.uuid;
  d.nvml_handle = r.nvml_handle;
  d.samples = r.samples;
  d.sm_clock_mhz_mean = r.sm_clock_mhz_mean;
  d.sm_clock_mhz_min = r.sm_clock_mhz_min;
  d.sm_clock_max_mhz = r.sm_clock_max_mhz;
  d.clock_ratio_mean = r.clock_ratio_mean;
  d.throttled_samples = r.throttled_samples;
  d.throttle_reasons = r.throttle_reasons;
  d.temperature_c_mean = r.temperature_c_mean;
  d.temperature_c_max = r.temperature_c_max;
  d.power_w_mean = r.power_w_mean;
  d.power_limit_w = r.power_limit_w;
  d.memory_used_bytes_max = r.memory_used_bytes_max;
  return d;
}

}  // namespace report
}  // namespace gpuslack

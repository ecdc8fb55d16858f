// The copies at the boundary (report/feature_counters.h): every figure the
// file carries comes across from the feature's struct, each to its own
// field (distinct values, so a field copied from the wrong one fails).
#include "report/feature_counters.h"

#include <gtest/gtest.h>

namespace gpuslack {
namespace report {
namespace {

TEST(FeatureCounters, AllocatorEveryFigureCopied) {
  alloc::DeviceStats s;
  s.allocated = 1; s.peak_allocated = 2; s.reserved = 3; s.peak_reserved = 4; s.largest_free = 5;
  s.pending_free = 6; s.allocations = 7; s.frees = 8; s.granules_mapped = 9; s.granules_unmapped = 10;
  s.chunks_mapped = 11; s.chunks_unmapped = 12; s.reservations = 13; s.oom_retries = 14;
  s.failed_allocations = 15; s.stall_s = 16.5; s.stream_reuses = 17; s.deferred_frees = 18;
  s.capture_fallbacks = 19; s.unmap_calls = 20; s.set_access_calls = 21;
  s.created_without = alloc::kCreatedWithoutRdma;
  const AllocatorCounters c = allocator_counters(s);
  EXPECT_EQ(1u, c.allocated); EXPECT_EQ(2u, c.peak_allocated); EXPECT_EQ(3u, c.reserved);
  EXPECT_EQ(4u, c.peak_reserved); EXPECT_EQ(5u, c.largest_free); EXPECT_EQ(6u, c.pending_free);
  EXPECT_EQ(7u, c.allocations); EXPECT_EQ(8u, c.frees); EXPECT_EQ(9u, c.granules_mapped);
  EXPECT_EQ(10u, c.granules_unmapped); EXPECT_EQ(11u, c.chunks_mapped); EXPECT_EQ(12u, c.chunks_unmapped);
  EXPECT_EQ(13u, c.reservations); EXPECT_EQ(14u, c.oom_retries); EXPECT_EQ(15u, c.failed_allocations);
  EXPECT_EQ(16.5, c.stall_s); EXPECT_EQ(17u, c.stream_reuses); EXPECT_EQ(18u, c.deferred_frees);
  EXPECT_EQ(19u, c.capture_fallbacks); EXPECT_EQ(20u, c.unmap_calls); EXPECT_EQ(21u, c.set_access_calls);
  EXPECT_EQ(kCreatedWithoutRdma, c.created_without);
  s.created_without = alloc::kCreatedWithoutPosixFd;
  EXPECT_EQ(kCreatedWithoutPosixFd, allocator_counters(s).created_without);

  alloc::Timeline::Samples t;
  t.t_s = {0.0, 0.5};
  t.allocated = {1, 2};
  t.reserved = {3, 4};
  const AllocatorSamples ct = allocator_samples(t);
  EXPECT_EQ(t.t_s, ct.t_s);
  EXPECT_EQ(t.allocated, ct.allocated);
  EXPECT_EQ(t.reserved, ct.reserved);
}

TEST(FeatureCounters, StagingEveryFigureCopied) {
  stage::StagingStats s;
  s.enabled = true; s.exact = true; s.async_d2h = true; s.threshold_bytes = 1; s.chunk_bytes = 2;
  s.h2d = {3, 4, 5, 6, 7, 8, 9};
  s.d2h = {10, 11, 12, 13, 14, 15, 16};
  s.passed_off = 17; s.passed_small = 18; s.passed_capture = 19; s.passed_capture_unknown = 20;
  s.passed_exact = 21; s.passed_error_pending = 22; s.passed_unsupported = 23; s.passed_measured = 24;
  s.passed_unknown_work = 25; s.partial = 26; s.host_work_waits = 27; s.host_work_wait_ns = 28;
  s.legacy_h2d = 29; s.legacy_other_streams = 30; s.budget_waits = 31; s.budget_wait_ns = 32;
  s.async_d2h_copies = 33; s.budget_bytes = 34; s.pinned_bytes = 35; s.peak_in_use_bytes = 36;
  s.pin_failures = 37;
  const StagingCounters c = staging_counters(s);
  EXPECT_TRUE(c.enabled); EXPECT_TRUE(c.exact); EXPECT_TRUE(c.async_d2h);
  EXPECT_EQ(1u, c.threshold_bytes); EXPECT_EQ(2u, c.chunk_bytes);
  for (const auto& [d, first] : {std::pair{c.h2d, 3u}, std::pair{c.d2h, 10u}}) {
    EXPECT_EQ(first, d.seen); EXPECT_EQ(first + 1, d.seen_bytes); EXPECT_EQ(first + 2, d.staged);
    EXPECT_EQ(first + 3, d.staged_bytes); EXPECT_EQ(first + 4, d.passed); EXPECT_EQ(first + 5, d.passed_bytes);
    EXPECT_EQ(first + 6, d.blocked_ns);
  }
  EXPECT_EQ(17u, c.passed_off); EXPECT_EQ(18u, c.passed_small); EXPECT_EQ(19u, c.passed_capture);
  EXPECT_EQ(20u, c.passed_capture_unknown); EXPECT_EQ(21u, c.passed_exact); EXPECT_EQ(22u, c.passed_error_pending);
  EXPECT_EQ(23u, c.passed_unsupported); EXPECT_EQ(24u, c.passed_measured); EXPECT_EQ(25u, c.passed_unknown_work);
  EXPECT_EQ(26u, c.partial); EXPECT_EQ(27u, c.host_work_waits); EXPECT_EQ(28u, c.host_work_wait_ns);
  EXPECT_EQ(29u, c.legacy_h2d); EXPECT_EQ(30u, c.legacy_other_streams); EXPECT_EQ(31u, c.budget_waits);
  EXPECT_EQ(32u, c.budget_wait_ns); EXPECT_EQ(33u, c.async_d2h_copies); EXPECT_EQ(34u, c.budget_bytes);
  EXPECT_EQ(35u, c.pinned_bytes); EXPECT_EQ(36u, c.peak_in_use_bytes); EXPECT_EQ(37u, c.pin_failures);
}

TEST(FeatureCounters, PinnedEveryFigureCopied) {
  pin::PinnedStats s;
  s.pinned = 1; s.peak_pinned = 2; s.live = 3; s.peak_live = 4; s.cap = 5; s.chunk_size = 6; s.chunks = 7;
  s.chunks_allocated = 8; s.chunks_released = 9; s.allocations = 10; s.frees = 11; s.pending_free = 12;
  s.epochs = 13; s.deferred_frees = 14; s.cap_hits = 15; s.fallbacks = 16; s.passthrough = 17; s.trimmed = 18;
  s.stall_s = 19.5;
  const PinnedCounters c = pinned_counters(s);
  EXPECT_EQ(1u, c.pinned); EXPECT_EQ(2u, c.peak_pinned); EXPECT_EQ(3u, c.live); EXPECT_EQ(4u, c.peak_live);
  EXPECT_EQ(5u, c.cap); EXPECT_EQ(6u, c.chunk_size); EXPECT_EQ(7u, c.chunks); EXPECT_EQ(8u, c.chunks_allocated);
  EXPECT_EQ(9u, c.chunks_released); EXPECT_EQ(10u, c.allocations); EXPECT_EQ(11u, c.frees);
  EXPECT_EQ(12u, c.pending_free); EXPECT_EQ(13u, c.epochs); EXPECT_EQ(14u, c.deferred_frees);
  EXPECT_EQ(15u, c.cap_hits); EXPECT_EQ(16u, c.fallbacks); EXPECT_EQ(17u, c.passthrough);
  EXPECT_EQ(18u, c.trimmed); EXPECT_EQ(19.5, c.stall_s);
}

TEST(FeatureCounters, DeviceHealthEveryFigureCopiedBothWays) {
  health::DeviceHealth d;
  d.device = 1; d.name = "NVIDIA H200"; d.uuid = "GPU-1"; d.nvml_handle = "mig"; d.samples = 2;
  d.sm_clock_mhz_mean = 3; d.sm_clock_mhz_min = 4; d.sm_clock_max_mhz = 5; d.clock_ratio_mean = 0.6;
  d.throttled_samples = 7; d.throttle_reasons = {"sw_thermal"}; d.temperature_c_mean = 8;
  d.temperature_c_max = 9; d.power_w_mean = 10; d.power_limit_w = 11; d.memory_used_bytes_max = 12;
  const DeviceHealthRow r = device_health_row(d);
  EXPECT_EQ(1, r.device); EXPECT_EQ("NVIDIA H200", r.name); EXPECT_EQ("GPU-1", r.uuid);
  EXPECT_EQ("mig", r.nvml_handle); EXPECT_EQ(2u, r.samples); EXPECT_EQ(3, r.sm_clock_mhz_mean);
  EXPECT_EQ(4, r.sm_clock_mhz_min); EXPECT_EQ(5, r.sm_clock_max_mhz); EXPECT_EQ(0.6, r.clock_ratio_mean);
  EXPECT_EQ(7u, r.throttled_samples); EXPECT_EQ(std::vector<std::string>{"sw_thermal"}, r.throttle_reasons);
  EXPECT_EQ(8, r.temperature_c_mean); EXPECT_EQ(9, r.temperature_c_max); EXPECT_EQ(10, r.power_w_mean);
  EXPECT_EQ(11, r.power_limit_w); EXPECT_EQ(12u, r.memory_used_bytes_max);
  // Back, for the feature's own line: the same text either way.
  EXPECT_EQ(health::throttle_line(d), health::throttle_line(health_figures(r)));
  EXPECT_NE("", health::throttle_line(health_figures(r)));
}

}  // namespace
}  // namespace report
}  // namespace gpuslack

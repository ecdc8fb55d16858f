// MappingPolicy: the numbers by which a miss decides what to map: how far
// the mapped total may grow before cached granules elsewhere are released
// first (Note [Releasing memory] in device_allocator.h), whether a large
// block is mapped in whole pages (GranuleMap's Note [Pages mapped whole]),
// and how long a miss may wait for fenced frees instead of mapping (Note
// [Waiting instead of mapping] in device_allocator.h).
//
// Contract. Arithmetic on what the allocator tells it: its peaks
// (note_peaks, after every step that changes them) and what its mappings
// cost (note_map_cost). No CUDA calls, no clock, no locking: the allocator
// serializes, and it alone decides what a capture allows (growth() assumes
// none is running).
//   - growth(mapped): the bytes a miss may map without releasing cached
//     granules first: up to the larger of the mapped total's high-water
//     mark and the allocated bytes' high-water mark plus 1/kGrowthSlack of
//     it (neither is reset with the reported peaks).
//   - in_pages(bytes, mapped): whole pages for a large request (past
//     BlockManager::kSmallLimit) while the mapped total, with it, stays
//     within 1/kPagesUpTo of the device's memory; granule by granule
//     otherwise.
//   - long_run_bytes(mapped, bytes): the largest run of unmapped granules
//     a miss maps as one handle (GranuleMap's Note [One handle for a long
//     run]): 1/kLongRunShare of the allocated bytes' high-water mark, and
//     none past 1/kLongRunsUpTo of the device's memory.
//   - fence_wait(size): seconds to poll fenced frees for a block of
//     `size` bytes: the measured mapping cost per byte (a moving average)
//     times `size`, within [kMinFenceWait, kMaxFenceWait]; knows_map_cost()
//     says whether anything was measured yet (until then, no waiting).
#pragma once

#include <cstdint>

namespace gpuslack {
namespace alloc {

class MappingPolicy {
 public:
  // `device_bytes`: the device's memory (cuMemGetInfo's total).
  explicit MappingPolicy(uint64_t device_bytes) : device_bytes_(device_bytes) {}

  // The mapped total and the allocated bytes now.
  void note_peaks(uint64_t mapped, uint64_t allocated);
  uint64_t growth(uint64_t mapped) const;
  bool in_pages(uint64_t bytes, uint64_t mapped) const;
  // GranuleMap's Note [One handle for a long run]: the most bytes one
  // handle over a long run may hold: 1/kLongRunShare of the allocated
  // high-water mark; none (0) once the mapped total with `bytes` more is
  // past 1/kLongRunsUpTo of the device's memory (Note [Two pages make a
  // long run]).
  uint64_t long_run_bytes(uint64_t mapped, uint64_t bytes) const;

  // A mapping took `seconds` and mapped `mapped` bytes (0: none; ignored).
  void note_map_cost(double seconds, uint64_t mapped);
  bool knows_map_cost() const { return map_seconds_per_byte_ != 0; }
  double fence_wait(uint64_t size) const;

  // See Note [Releasing memory]: the slack over the allocated high-water mark.
  static constexpr uint64_t kGrowthSlack = 8;
  // GranuleMap's Note [Pages mapped whole]: misses for large blocks map
  // whole pages while the mapped total stays within 1/kPagesUpTo of the
  // device's memory; past that, and for small-pool pages always, each
  // granule is its own handle, so that under pressure every free granule
  // can be given back (a page is released only whole: with pages all the
  // way up, the smallest device on which the replayed traces run grew by
  // 2-9%, past PyTorch's expandable segments on seven of twelve; and a
  // 4 KiB block that lived all run pinned a whole page,
  // findings.test_fragmentation_fires_when_allocations_wait_for_frees).
  static constexpr uint64_t kPagesUpTo = 4;
  // GranuleMap's Note [One handle for a long run]: what one handle may pin
  // past its live bytes, as a share of the most ever allocated.
  static constexpr uint64_t kLongRunShare = 6;
  // See Note [Two pages make a long run]: long runs while the mapped total
  // stays within 1/kLongRunsUpTo of the device's memory.
  static constexpr uint64_t kLongRunsUpTo = 8;
  // Seconds. The floor: an event on an idle GPU completes within
  // microseconds, but the thread recording it may be descheduled between
  // the record and the first query on a loaded machine; mapping even one
  // 2 MiB granule costs tens of microseconds on real hardware.
  static constexpr double kMinFenceWait = 0.0005, kMaxFenceWait = 0.005;

 private:
  uint64_t device_bytes_;
  double map_seconds_per_byte_ = 0;    // 0: nothing mapped yet
  uint64_t mapped_high_water_ = 0;     // the most ever mapped
  uint64_t allocated_high_water_ = 0;  // the most ever allocated
};

}  // namespace alloc
}  // namespace gpuslack

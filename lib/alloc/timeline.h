// Timeline: one device's allocated and reserved bytes over the run, for
// the report, at a bounded rate and in bounded memory.
//
// note() is called on every allocation and free; it costs one cycle-counter
// read and a compare. A sample closes when its window (initially 2^21
// ticks, about a millisecond) has passed, and holds the highest values seen
// in the window, so no peak falls between samples. When kMaxSamples are
// held, neighbours merge pairwise (the maxima kept) and the window doubles:
// a run of any length fits, at a resolution that coarsens with its length.
//
// Plain data, no locking: the allocator serializes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpuslack {
namespace alloc {

class Timeline {
 public:
  static constexpr size_t kMaxSamples = 512;

  struct Samples {
    std::vector<double> t_s;  // window start, seconds since the allocator was made
    std::vector<uint64_t> allocated;  // highest in the window
    std::vector<uint64_t> reserved;
    uint64_t origin_ticks = 0;  // when the allocator was made (t_s 0), in clock::ticks()
  };

  Timeline();
  void note(uint64_t allocated, uint64_t reserved);
  // The closed samples and the open window.
  Samples samples() const;

 private:
  struct Sample {
    uint64_t start;  // ticks
    uint64_t allocated, reserved;
  };
  void decimate();

  uint64_t origin_;
  uint64_t window_ = 1ull << 21;
  std::vector<Sample> closed_;
  Sample open_;
  bool empty_ = true;  // nothing noted in the open window yet
};

}  // namespace alloc
}  // namespace gpuslack

// CopyChooser: staged or native, for copies whose two ways have the same
// semantics and differ only in speed (device→pageable host: both return
// when the data is in the buffer), decided by measuring both on this
// machine rather than by a constant.
//
// Per power-of-two size class: the first calls alternate between the two
// ways (kProbes each), then the faster one by measured host time per byte
// (an exponentially weighted mean) is used, and the other is tried again
// once every kReprobeEvery calls so that the choice follows the machine
// (a loaded CPU, a busy copy engine). Both ways are timed from after the
// stream's earlier work has completed, so only the transfer is compared.
//
// Thread safety: any thread; one mutex per chooser (the calls it serves
// take tens of microseconds at least).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "absl/functional/function_ref.h"

namespace gpuslack {
namespace stage {

enum class CopyWay : uint8_t { kNative, kStaged };

class CopyChooser {
 public:
  static constexpr int kProbes = 2;
  static constexpr uint64_t kReprobeEvery = 32;
  static constexpr int kClasses = 48;

  CopyWay pick(size_t bytes);
  void record(CopyWay way, size_t bytes, uint64_t ns);
  // The measured host time of `way` for `bytes`, in ns; 0 when not measured.
  double estimate_ns(CopyWay way, size_t bytes) const;
  // Tests of Note [The stager after a fork] (staged_copy.cc) only: runs
  // `during` while the calling thread holds the chooser's lock.
  void while_locked(absl::FunctionRef<void()> during);

 private:
  struct Class {
    uint64_t calls = 0;
    int samples[2] = {0, 0};
    double ns_per_byte[2] = {0, 0};
  };
  static int class_of(size_t bytes);
  mutable std::mutex mu_;
  Class classes_[kClasses];
};

}  // namespace stage
}  // namespace gpuslack

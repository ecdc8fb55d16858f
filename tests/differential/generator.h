// The generator: a Program (program.h) from a seed, the same on every
// machine and in every run (its own PRNG, no std:: distributions).
//
// Each thread gets its own slots and streams, so that what one thread's
// calls return never depends on another's timing; the threads still run at
// once, on the same device, through the same allocator and staging.
//
// Note [Ordering the generator keeps]: results must be the same in every
// correct run, so the program never races with itself. The generator keeps,
// per slot, the stream that last used it (`pending`); before the slot is
// used on another stream, or by the host (fills, read-backs, the harness's
// own frees), it emits a synchronization of that stream (an op like any
// other, through the API under test). It relies only on the order of work
// within one stream and on explicit synchronization — what CUDA promises —
// never on a pageable copy draining its stream, cudaFree synchronizing the
// device or the legacy stream's implicit barriers: those are exactly what
// gpuslack may change (docs/guarantees.md). A free never
// clears `pending` (the slot's next buffer inherits it), so dropping ops
// while shrinking never removes a synchronization something still needs.
//
// Thread safety: generate() is a pure function.
#pragma once

#include <cstdint>

#include "program.h"

namespace differential {

struct Shape {
  int threads = 4;
  int slots = 8;          // buffer slots per thread
  int ops = 120;          // random ops per thread (synchronizations and cleanup come on top)
  int phases = 3;         // barriers with global checks: phases - 1 between, 1 at the end
  // Pinned ranges past the end of their block too (off by default; see
  // differential_main.cc, "What is not compared").
  bool pinned_overruns = false;
};

Program generate(const Shape& shape, uint64_t seed);

}  // namespace differential

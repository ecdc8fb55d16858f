// The ledger's clock: a raw cycle counter on the hot path, turned into
// seconds only at report time.
//
// On x86-64, rdtsc (constant and invariant on every CPU gpuslack targets:
// ~10 ns against ~25 ns for clock_gettime); on AArch64, the virtual counter;
// elsewhere CLOCK_MONOTONIC in ns. tick_seconds() calibrates ticks against
// CLOCK_MONOTONIC between the first call of calibrate_start() and the call
// of tick_seconds() (at least 10 ms apart: it waits out the rest if needed).
//
// Thread safety: any thread.
#pragma once

#include <cstdint>
#include <ctime>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace gpuslack {
namespace clock {

inline uint64_t ticks() {
#if defined(__x86_64__)
  return __rdtsc();
#elif defined(__aarch64__)
  uint64_t v;
  asm volatile("mrs %0, cntvct_el0" : "=r"(v));
  return v;
#else
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
#endif
}

// CLOCK_MONOTONIC in seconds.
double monotonic_seconds();

// Starts the calibration (idempotent; the first call counts).
void calibrate_start();
// Seconds per tick.
double tick_seconds();

}  // namespace clock
}  // namespace gpuslack

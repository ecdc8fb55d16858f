#include "base/clock.h"

#include <atomic>
#include <thread>

namespace gpuslack {
namespace clock {
namespace {

struct Start {
  uint64_t ticks;
  double seconds;
};
std::atomic<Start*> g_start{nullptr};

}  // namespace

double monotonic_seconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void calibrate_start() {
  if (g_start.load(std::memory_order_acquire)) return;
  auto* s = new Start{ticks(), monotonic_seconds()};
  Start* expected = nullptr;
  if (!g_start.compare_exchange_strong(expected, s, std::memory_order_acq_rel)) delete s;
}

double tick_seconds() {
#if !defined(__x86_64__) && !defined(__aarch64__)
  return 1e-9;
#else
  calibrate_start();
  const Start* s = g_start.load(std::memory_order_acquire);
  // At least 10 ms of baseline keeps the error under 0.1% (clock_gettime
  // resolution and the read's own latency are well under 10 us).
  double elapsed = monotonic_seconds() - s->seconds;
  if (elapsed < 0.010) {
    std::this_thread::sleep_for(std::chrono::duration<double>(0.010 - elapsed));
  }
  uint64_t t = ticks();
  double now = monotonic_seconds();
  if (t <= s->ticks) return 1e-9;
  return (now - s->seconds) / static_cast<double>(t - s->ticks);
#endif
}

}  // namespace clock
}  // namespace gpuslack

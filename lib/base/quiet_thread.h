// gpuslack's own threads, born with the summary's signals blocked.
//
// gpuslack writes the summary when the process gets SIGTERM or SIGINT
// (session/signals.h): the handler asks the reporter thread for the summary
// and waits for it, up to 3 s, before the signal's own action. The kernel
// delivers a process-directed signal to any thread that does not block it.
// Were that one of gpuslack's threads while it held a lock the summary
// needs (the timeline's start thread holds the timeline's lock while it
// subscribes to CUPTI), the handler would wait for the summary on the
// thread the summary waits for: 3 s lost, and the process killed without
// its summary. So every thread gpuslack starts is started by
// start_quiet_thread, which blocks those signals for the new thread from
// its first instruction (a thread inherits its creator's mask); they then
// land on the application's threads, as they would without gpuslack.
//
// Thread safety: any thread; the caller's own mask is restored before it
// returns, exceptions included.
#pragma once

#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

namespace gpuslack {

// The signals gpuslack catches to write the summary (session/signals.h).
inline constexpr int kSummarySignals[] = {SIGTERM, SIGINT};

inline void summary_signal_set(sigset_t* set) {
  sigemptyset(set);
  for (int sig : kSummarySignals) sigaddset(set, sig);
}

// std::thread(f, args...), with kSummarySignals blocked in the new thread.
template <typename F, typename... Args>
std::thread start_quiet_thread(F&& f, Args&&... args) {
  sigset_t block, old;
  summary_signal_set(&block);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  struct Restore {
    sigset_t* old;
    ~Restore() { pthread_sigmask(SIG_SETMASK, old, nullptr); }
  } restore{&old};
  return std::thread(std::forward<F>(f), std::forward<Args>(args)...);
}

}  // namespace gpuslack

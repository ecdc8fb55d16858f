#include "session/signals.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>

#include "absl/strings/str_format.h"
#include "base/quiet_thread.h"
#include "log/log.h"
#include "session/session.h"

namespace gpuslack {
namespace session {
namespace {

constexpr double kHandlerWaitSeconds = 3.0;

std::atomic<int> g_pipe_write{-1};     // the handler's end; -1: only chain
std::atomic<uint64_t> g_requests{0};   // signals sent to the reporter
std::atomic<uint64_t> g_done{0};       // signal summaries finished
std::atomic<int> g_in_flight{0};       // handlers between entry and chaining
struct sigaction g_previous[NSIG];
std::atomic<bool> g_installed[NSIG];
double g_interval_s = 0;
void (*g_tick)() = nullptr;  // start_reporter's `tick`
constexpr double kTickSeconds = 1.0;
int g_pipe_read = -1;

void sleep_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// Async-signal-safe throughout: write, nanosleep, sigaction, raise.
void on_signal(int sig, siginfo_t* info, void* context) {
  int saved_errno = errno;
  int fd = g_pipe_write.load(std::memory_order_acquire);
  // Note [A signal on another thread holds the exit back]
  g_in_flight.fetch_add(1);
  if (fd >= 0) {
    uint64_t ticket = g_requests.fetch_add(1) + 1;
    unsigned char byte = static_cast<unsigned char>(sig);
    if (write(fd, &byte, 1) == 1) {
      for (int waited = 0; waited < kHandlerWaitSeconds * 1000 && g_done.load() < ticket; waited += 5) sleep_ms(5);
    }
  }
  const struct sigaction& prev = g_previous[sig];
  errno = saved_errno;
  // SA_SIGINFO with a null sa_sigaction is SIG_DFL (the union's 0): the
  // default action below, not a handler to call.
  if ((prev.sa_flags & SA_SIGINFO) && prev.sa_sigaction) {
    g_in_flight.fetch_sub(1);  // the program's handler may exit() itself
    prev.sa_sigaction(sig, info, context);
    return;
  }
  if (prev.sa_handler != SIG_DFL) g_in_flight.fetch_sub(1);
  if (prev.sa_handler == SIG_IGN) return;
  if (prev.sa_handler == SIG_DFL) {
    // Still in flight: the signal ends the process when this returns.
    // Die as we would have without gpuslack: default action, same status.
    struct sigaction dfl;
    std::memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, nullptr);
    raise(sig);
    return;
  }
  prev.sa_handler(sig);
}

// Ours when the handler it chains to takes one argument (or is SIG_DFL):
// installed without SA_SIGINFO, as that one was (Note [Signals]).
void on_signal_plain(int sig) { on_signal(sig, nullptr, nullptr); }

void signal_set(sigset_t* set) { summary_signal_set(set); }

const char* signal_name(int sig) { return sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "signal"; }

double monotonic_now_s() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

void* reporter_main(void*) {
  // The handler never runs here (it would wait for itself): start_reporter
  // created this thread with the signals blocked.
  pthread_setname_np(pthread_self(), "gpuslack-report");

  constexpr double kNever = HUGE_VAL;
  double next_summary = g_interval_s > 0 ? monotonic_now_s() + g_interval_s : kNever;
  double next_tick = g_tick ? monotonic_now_s() : kNever;  // the first tick right away
  for (;;) {
    double now = monotonic_now_s();
    if (now >= next_tick) {
      g_tick();
      next_tick = now + kTickSeconds;
      continue;
    }
    if (now >= next_summary) {
      next_summary = now + g_interval_s;
      write_summary("periodic");
      continue;
    }
    const double wake = std::min(next_tick, next_summary);
    const int wait_ms = wake == kNever ? -1 : static_cast<int>(std::ceil((wake - now) * 1000));
    pollfd p{g_pipe_read, POLLIN, 0};
    int r = poll(&p, 1, wait_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r > 0 && (p.revents & POLLIN)) {
      unsigned char sig = 0;
      if (read(g_pipe_read, &sig, 1) != 1) continue;
      write_summary(absl::StrFormat("signal %s", signal_name(sig)).c_str());
      g_done.fetch_add(1);
      continue;
    }
    if (r > 0) return nullptr;  // pipe closed or broken
  }
}

// The kernel's SA_RESTORER (not in glibc's headers): the C library sets it
// on every action it installs, so it says nothing of the program's.
constexpr int kRestorerFlag = 0x04000000;

bool same_disposition(const struct sigaction& a, const struct sigaction& b) {
  return a.sa_handler == b.sa_handler && (a.sa_flags & ~kRestorerFlag) == (b.sa_flags & ~kRestorerFlag);
}

void install_handlers() {
  for (int sig : kSummarySignals) {
    if (g_installed[sig].load()) continue;
    struct sigaction current;
    if (sigaction(sig, nullptr, &current) != 0) {
      log::warn("cannot read the {} handler ({}); no summary on that signal", signal_name(sig), std::strerror(errno));
      continue;
    }
    // An ignored signal stays ignored (and so for every program it execs).
    if (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_IGN) continue;
    // Ours keeps the flags and mask of the one it chains to.
    struct sigaction ours = current;
    if (current.sa_flags & SA_SIGINFO)
      ours.sa_sigaction = on_signal;
    else
      ours.sa_handler = on_signal_plain;
    g_previous[sig] = current;
    struct sigaction replaced;
    if (sigaction(sig, &ours, &replaced) != 0) {
      log::warn("cannot install a {} handler ({}); no summary on that signal", signal_name(sig), std::strerror(errno));
      continue;
    }
    if (!same_disposition(replaced, current)) {
      // The program changed it meanwhile, from another thread: theirs stays.
      sigaction(sig, &replaced, nullptr);
      continue;
    }
    g_installed[sig].store(true);
  }
}

}  // namespace

void start_reporter(double interval_s, bool signals, void (*tick)()) {
  if (interval_s <= 0 && !signals && !tick) return;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    log::warn("cannot start the reporter ({}); the summary is written at exit only", std::strerror(errno));
    return;
  }
  g_interval_s = interval_s;
  g_tick = tick;
  g_pipe_read = fds[0];
  pthread_t thread;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  // The reporter is born with the signals blocked: were one delivered to it
  // before it could block them itself, the handler would wait for the
  // reporter on the reporter (3 s lost, and a program that ends meanwhile
  // exits as if never signalled).
  sigset_t block, old;
  signal_set(&block);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  int rc = pthread_create(&thread, &attr, reporter_main, nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    close(fds[0]);
    close(fds[1]);
    log::warn("cannot start the reporter thread ({}); the summary is written at exit only", std::strerror(rc));
    return;
  }
  g_pipe_write.store(fds[1], std::memory_order_release);
  if (signals) install_handlers();
}

void hold_exit_for_signals() {
  for (int waited = 0; waited < (kHandlerWaitSeconds + 1) * 1000 && g_in_flight.load() > 0; waited += 5) sleep_ms(5);
}

void reporter_after_fork_child() {
  // The reporter thread is the parent's; keep the handlers (they only
  // chain now) and let a new session start a new reporter.
  int fd = g_pipe_write.exchange(-1);
  if (fd >= 0) close(fd);
  if (g_pipe_read >= 0) close(g_pipe_read);
  g_pipe_read = -1;
  g_requests.store(0);
  g_done.store(0);
  g_in_flight.store(0);
}

}  // namespace session
}  // namespace gpuslack

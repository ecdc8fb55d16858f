// See crash_report.h.
#include "crash_report.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace differential {
namespace crash_report {
namespace {

constexpr int kMaxThreads = 64;
constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

std::atomic<const std::vector<std::vector<std::string>>*> g_descriptions{nullptr};
std::atomic<long> g_at[kMaxThreads];
char g_label[128];
uint64_t g_seed = 0;
struct sigaction g_previous[sizeof(kSignals) / sizeof(kSignals[0])];

void put(const char* s) {
  ssize_t ignored = write(2, s, std::strlen(s));
  (void)ignored;
}
void put_number(uint64_t v) {
  char buf[24];
  int i = sizeof buf - 1;
  buf[i] = 0;
  do {
    buf[--i] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v && i > 0);
  put(buf + i);
}

void on_signal(int sig, siginfo_t* info, void* context) {
  const auto* d = g_descriptions.load(std::memory_order_relaxed);
  put("\ndifferential: signal ");
  put_number(static_cast<uint64_t>(sig));
  put(" during run ");
  put(g_label);
  put(", seed ");
  put_number(g_seed);
  put("\n");
  if (d) {
    for (size_t t = 0; t < d->size() && t < kMaxThreads; ++t) {
      const long i = g_at[t].load(std::memory_order_relaxed);
      put("differential:   thread ");
      put_number(t);
      if (i < 0 || static_cast<size_t>(i) >= (*d)[t].size()) {
        put(": not started or done\n");
        continue;
      }
      put(" at op #");
      put_number(static_cast<uint64_t>(i));
      put(": ");
      put((*d)[t][i].c_str());
      put("\n");
    }
  }
  put("differential: reproduce with --seed ");
  put_number(g_seed);
  put(" and the same mode and shape\n");
  // On to whoever handled it before, or the default action.
  size_t k = 0;
  while (kSignals[k] != sig) ++k;
  const struct sigaction& prev = g_previous[k];
  if ((prev.sa_flags & SA_SIGINFO) && prev.sa_sigaction) {
    prev.sa_sigaction(sig, info, context);
    return;
  }
  if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN && prev.sa_handler) {
    prev.sa_handler(sig);
    return;
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

void install() {
  static bool done = [] {
    for (auto& a : g_at) a.store(-1);
    for (size_t k = 0; k < sizeof(kSignals) / sizeof(kSignals[0]); ++k) {
      struct sigaction sa {};
      sa.sa_sigaction = on_signal;
      sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
      sigemptyset(&sa.sa_mask);
      sigaction(kSignals[k], &sa, &g_previous[k]);
    }
    return true;
  }();
  (void)done;
}

void begin(const std::string& label, uint64_t seed, const std::vector<std::vector<std::string>>* descriptions) {
  std::strncpy(g_label, label.c_str(), sizeof g_label - 1);
  g_seed = seed;
  for (auto& a : g_at) a.store(-1, std::memory_order_relaxed);
  g_descriptions.store(descriptions);
}

void at(int thread, size_t index) {
  if (thread >= 0 && thread < kMaxThreads) g_at[thread].store(static_cast<long>(index), std::memory_order_relaxed);
}

void end() { g_descriptions.store(nullptr); }

}  // namespace crash_report
}  // namespace differential

#include "log/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <new>

#include "log/log_sink.h"

namespace gpuslack {
namespace log {
namespace {

spdlog::level::level_enum level_of(const std::string& name) {
  if (name == "off") return spdlog::level::off;
  if (name == "error") return spdlog::level::err;
  if (name == "info") return spdlog::level::info;
  if (name == "debug") return spdlog::level::debug;
  return spdlog::level::warn;
}

std::atomic<spdlog::logger*> g_logger{nullptr};
// Set once by configure(), never changed nor freed (a forked child reads it
// without a lock).
std::atomic<const Settings*> g_settings{nullptr};
std::mutex g_make_mu;  // configure() and making the logger

// Out of line: the first line logged (in this process, or since a fork).
__attribute__((noinline, cold)) spdlog::logger* make_logger() {
  // Outside the lock: reading the options configures the log and may log.
  if (!g_settings.load(std::memory_order_acquire)) configure_before_first_line();
  std::lock_guard<std::mutex> lock(g_make_mu);
  if (spdlog::logger* l = g_logger.load(std::memory_order_acquire)) return l;
  const Settings* configured = g_settings.load(std::memory_order_acquire);
  const Settings settings = configured ? *configured : Settings();
  // Leaked on purpose: hooks may log during process exit, after static
  // destructors have run. The file, if any, opens on the first line
  // (Note [Log file]).
  auto* l = new spdlog::logger("gpuslack", make_log_sink(settings.file));
  l->set_pattern("gpuslack: %v");
  l->set_level(level_of(settings.level));
  l->flush_on(spdlog::level::trace);
  g_logger.store(l, std::memory_order_release);
  return l;
}

}  // namespace

void configure(const Settings& settings) {
  std::lock_guard<std::mutex> lock(g_make_mu);
  if (g_settings.load(std::memory_order_relaxed)) return;
  g_settings.store(new Settings(settings), std::memory_order_release);  // kept for the process's life
}

spdlog::logger& logger() {
  spdlog::logger* l = g_logger.load(std::memory_order_acquire);
  return l ? *l : *make_logger();
}

void after_fork_child() {
  // The parent's logger stays allocated (and reachable), never used again.
  [[maybe_unused]] static spdlog::logger* volatile left_behind[16];  // volatile: the stores stay
  static int n_left_behind = 0;
  spdlog::logger* old = g_logger.exchange(nullptr, std::memory_order_relaxed);
  if (old && n_left_behind < 16) left_behind[n_left_behind++] = old;
  new (&g_make_mu) std::mutex();
}

bool log_level_valid(const std::string& name) {
  return name == "off" || name == "error" || name == "warn" || name == "info" || name == "debug";
}

}  // namespace log
}  // namespace gpuslack

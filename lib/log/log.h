// gpuslack's log: one line per message, prefixed "gpuslack: ", to stderr or
// to the file GPUSLACK_CONF's log_file names.
//
// The logger is made on first use (never in a constructor: a process that
// never touches CUDA must print nothing), at the configured level, and
// writes every line at once so that nothing is lost if the host process
// dies. Its sink (log_sink.h) opens the log file on the first line logged,
// never through another user's symlink and never creating a directory
// (Note [Log file]), escapes every message (Note [Escaped input]), and falls
// back to stderr with one line if the file cannot be opened.
//
// Note [Who configures the log]: the log sits below the configuration
// (config/options.h), which logs its own problems, so it includes nothing of
// it. Its settings (level, file) come from above, once: options() calls
// configure() as soon as it has parsed GPUSLACK_CONF, before it logs what it
// found wrong, so those lines too are written at the configured level and to
// the configured file. A line logged before that (a hook resolving its real
// function before the session starts, a test) first calls
// configure_before_first_line(), which the configuration layer defines
// (config/options.cc: it reads the options): the one place the log reaches
// up, at link time only. Either way the first configuration is the log's
// for the life of the process (a forked child keeps it).
//
// Thread safety: every function may be called from any thread. Not for the
// hot path: a hook logs only on rare paths (first resolution, failures).
#pragma once

#include <string>
#include <utility>

#include "spdlog/logger.h"

namespace gpuslack {
namespace log {

// What the log is configured with: log_level and log_file.
struct Settings {
  std::string level = "warn";  // off, error, warn, info, debug (log_level_valid); else warn
  std::string file;            // empty: stderr
};

// Sets the log's settings unless it has some already (the first call wins).
// Opens nothing: the logger is made, and the file opened, on the first line.
void configure(const Settings& settings);

// Defined by the configuration layer (config/options.cc), not here: makes
// sure configure() has been called. The first line logged calls it when
// nothing has configured the log yet (Note [Who configures the log]).
void configure_before_first_line();

// The process's logger, made from the settings on first call.
spdlog::logger& logger();

// In the child of a fork (Note [Fork] in session/session.cc): the parent's
// logger may be locked by a thread that is not in the child; the next line
// makes a new one, with the same settings. Takes no lock, allocates nothing.
void after_fork_child();

// True for the level names the log_level knob accepts.
bool log_level_valid(const std::string& name);

template <typename... Args>
void debug(spdlog::format_string_t<Args...> f, Args&&... a) {
  logger().debug(f, std::forward<Args>(a)...);
}
template <typename... Args>
void info(spdlog::format_string_t<Args...> f, Args&&... a) {
  logger().info(f, std::forward<Args>(a)...);
}
template <typename... Args>
void warn(spdlog::format_string_t<Args...> f, Args&&... a) {
  logger().warn(f, std::forward<Args>(a)...);
}
template <typename... Args>
void error(spdlog::format_string_t<Args...> f, Args&&... a) {
  logger().error(f, std::forward<Args>(a)...);
}

}  // namespace log
}  // namespace gpuslack

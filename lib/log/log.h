// gpuslack's log: one line per message, prefixed "gpuslack: ", to stderr or
// to the file GPUSLACK_CONF's log_file names.
//
// The logger is made on first use (never in a constructor: a process that
// never touches CUDA must print nothing), at the level of the log_level
// knob, and writes every line at once so that nothing is lost if the host
// process dies. Its sink (log_sink.h) opens log_file on the first line
// logged, never through another user's symlink and never creating a
// directory (Note [Log file]), escapes every message (Note [Escaped
// input]), and falls back to stderr with one line if the file cannot be
// opened.
//
// Thread safety: every function may be called from any thread. Not for the
// hot path: a hook logs only on rare paths (first resolution, failures).
#pragma once

#include <string>
#include <utility>

#include "spdlog/logger.h"

namespace gpuslack {
struct Options;
namespace log {

// The process's logger, made from options() on first call.
spdlog::logger& logger();

// Logs `line` at error level with a logger made from `o`: for the option
// parser, which cannot call options() while it is being made.
void error_raw(const Options& o, const std::string& line);

// In the child of a fork (Note [Fork] in session/session.cc): the parent's
// logger may be locked by a thread that is not in the child; the next line
// makes a new one. Takes no lock, allocates nothing.
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

// Where gpuslack's log lines go: the file log_file names, or stderr.
//
// Note [Log file]: log_file is a path that whoever set GPUSLACK_CONF chose,
// written by a process that may be someone else's (a shared directory, a
// job running as another user). So the sink:
//   - opens it on the first line logged, never before: a process that logs
//     nothing creates no file, not even an empty one;
//   - creates no directory (a missing one is a failure like any other);
//   - never opens it through a symlink (O_NOFOLLOW), and follows a symlink
//     on the way to it only when root or the process's effective user owns
//     it: one planted by another user in a shared directory is refused.
//     The path is walked one component at a time with openat on the
//     directories themselves, so nothing can be swapped between the check
//     and the open;
//   - appends to a regular file only (O_NONBLOCK, then fstat: a FIFO would
//     block the process, a device is not a log), O_APPEND|O_CLOEXEC, mode
//     0644 when it creates it.
// When the file cannot be opened, one line on stderr says so
// ("gpuslack: cannot open log_file <path> (<reason>); logging to stderr")
// and the log goes to stderr. Every message is escaped (Note [Escaped
// input]) before it is formatted: one message, one line.
//
// A secure process has no log_file (Note [Secure execution]).
//
// Thread safety: the sink serializes its writes (spdlog's base_sink and its
// mutex); open_log_file is reentrant.
#pragma once

#include <memory>
#include <string>

#include "spdlog/sinks/sink.h"

namespace gpuslack {
namespace log {

// Opens `path` for appending as Note [Log file] says: a descriptor, or -1
// with a one-line reason in *error.
int open_log_file(const std::string& path, std::string* error);

// A sink writing each line, escaped, to `log_file` (opened on the first
// line) or, when it is empty or cannot be opened, to stderr.
std::shared_ptr<spdlog::sinks::sink> make_log_sink(const std::string& log_file);

}  // namespace log
}  // namespace gpuslack

// Where the summary goes: the text to stderr or a file, the JSON to
// output_dir, each file written atomically.
//
// File names: gpuslack-<host>-<pid>[-rank<R>].json (and .txt for
// text_summary=file), the rank part only when a rank is known; characters
// of the host name outside [A-Za-z0-9._-] become '_'.
//
// write_summary() never throws, never changes errno, never exits and never
// lets SIGPIPE (a closed stderr pipe) kill the process: it may run at exit or
// on a signal-initiated path inside someone else's program. Each file it
// cannot write costs exactly one log line
// ("gpuslack: cannot write summary to <path>: <reason>").
//
// Thread safety: any thread; two concurrent calls for the same process
// write the same final names, and the last rename wins whole.
#pragma once

#include <string>

#include "config/options.h"
#include "report/summary.h"

namespace gpuslack {
namespace report {

// "gpuslack-node01-1234-rank3.json" / ".txt".
std::string json_file_name(const Summary& summary);
std::string text_file_name(const Summary& summary);

// Writes `contents` to dir/name so that a reader sees either the old file or
// the whole new one: creates `dir` if missing (like mkdir -p, mode 0755),
// writes a fresh temporary file in it (O_EXCL|O_NOFOLLOW, mode 0644),
// fsyncs it and renames it onto `name`. A symlink at dir/name is replaced,
// never followed. On failure returns false, leaves no temporary file and
// sets `*error` to a one-line reason. `name` must be a plain file name.
bool write_file_atomically(const std::string& dir, const std::string& name, const std::string& contents,
                           std::string* error);

// Writes the summary as `options` say: the text to stderr (in one write, so
// other output does not cut into it), to dir/<text name> or nowhere; the
// JSON to output_dir when json_summary is on.
void write_summary(const Summary& summary, const Options& options);

}  // namespace report
}  // namespace gpuslack

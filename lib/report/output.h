// Where the summary goes: the text to stderr or a file, the JSON to
// output_dir, the metrics (report/prometheus.h) to prometheus_dir, each
// file written atomically.
//
// File names (.json, .txt for text_summary=file, .prom):
//   gpuslack-<job>-rank<R>[-restart<K>].json  a job id and a rank known
//                                             (report/job.h), the restart
//                                             part when the launcher
//                                             restarted the rank;
//   gpuslack-<host>-<pid>[-rank<R>].json      otherwise.
// Characters of the job id and host outside [A-Za-z0-9._-] become '_'
// (report/job.h, file_name_part). A job's name is claimed (Note [Claimed
// names] in output.cc): a process never overwrites another's file; when
// the name is taken it writes gpuslack-<job>-rank<R>-<pid>.json instead,
// and its periodic rewrites replace its own file.
//
// write_summary() never throws, never changes errno, never exits and never
// lets SIGPIPE (a closed stderr pipe) kill the process: it may run at exit or
// on a signal-initiated path inside someone else's program. Each file it
// cannot write costs exactly one line
// ("gpuslack: cannot write summary to <path>: <reason>"): logged, or handed
// to the caller, who decides what to tell (PeriodicFailures below).
//
// Thread safety: any thread; two concurrent calls for the same process
// write the same final names, and the last rename wins whole.
#pragma once

#include <string>
#include <vector>

#include "config/options.h"
#include "report/summary.h"

namespace gpuslack {
namespace report {

// "gpuslack-node01-1234-rank3.json" / ".txt".
std::string json_file_name(const Summary& summary);
std::string text_file_name(const Summary& summary);
std::string prometheus_file_name(const Summary& summary);

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
// JSON to output_dir when json_summary is on; the metrics to prometheus_dir
// when it is set. The text is rendered from the
// figures as the JSON holds them (Note [Text from the JSON] in output.cc),
// short or full as summary_detail says (Note [Short summary] in output.cc:
// auto is short when stderr is a terminal), the short one ending with a
// line that names the JSON file. Each failure is one line,
// logged, or appended to `failures` when it is given (then nothing is
// logged).
void write_summary(const Summary& summary, const Options& options, std::vector<std::string>* failures = nullptr);

// Note [Periodic failures]: a summary rewritten every summary_interval_s
// into an output directory that cannot take it would log the same line
// every interval (193,861 lines in 10 s once). A periodic write's failures
// are told once: the first failing write logs its lines, each ending
// "(periodic summaries: not repeated until one is written)"; the failing
// writes after it log nothing; a write that succeeds re-arms it, so a
// failure after a recovery is told again. The summaries at exit and on a
// signal always log their failures (once each: they are written once).
//
// Not thread-safe: the caller serializes (session.cc's write lock).
class PeriodicFailures {
 public:
  // The lines to log for one periodic write that failed with `failures`
  // (empty: it succeeded).
  std::vector<std::string> to_log(const std::vector<std::string>& failures);

 private:
  bool failing_ = false;
};

}  // namespace report
}  // namespace gpuslack

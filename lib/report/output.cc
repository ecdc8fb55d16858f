// See output.h. Plain POSIX calls only (no std::filesystem, no iostreams):
// nothing here throws on an I/O error, and every failure becomes a one-line
// reason.
#include "report/output.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <exception>
#include <map>
#include <mutex>
#include <utility>

#include "log/escape.h"
#include "log/log.h"
#include "report/json.h"
#include "report/prometheus.h"
#include "report/summary_reader.h"
#include "report/text.h"
#include "report/wrap.h"

namespace gpuslack {
namespace report {
namespace {

// strerror_r comes in a GNU (char*) and an XSI (int) flavour.
[[maybe_unused]] const char* pick_message(const char* gnu, const char*) { return gnu; }
[[maybe_unused]] const char* pick_message(int xsi, const char* buf) { return xsi == 0 ? buf : "unknown error"; }

std::string errno_text(int err) {
  char buf[256] = {};
  return pick_message(strerror_r(err, buf, sizeof(buf)), buf);
}

std::string failure(const std::string& what, int err) { return what + ": " + errno_text(err); }

// A job's name (Note [Claimed names]): a job id and a rank.
bool has_job_name(const Summary& s) { return !s.job.id.empty() && s.rank >= 0; }

// The name before any claim, without extension (output.h).
std::string file_stem(const Summary& s) {
  if (has_job_name(s)) {
    std::string name = "gpuslack-" + file_name_part(s.job.id) + "-rank" + std::to_string(s.rank);
    if (s.job.restart > 0) name += "-restart" + std::to_string(s.job.restart);
    return name;
  }
  std::string name = "gpuslack-" + file_name_part(s.host.empty() ? "unknown" : s.host) + "-" + std::to_string(s.pid);
  if (s.rank >= 0) name += "-rank" + std::to_string(s.rank);
  return name;
}

bool is_directory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// mkdir -p with mode 0755 (less the umask).
bool make_directories(const std::string& dir, std::string* error) {
  if (is_directory(dir)) return true;
  for (size_t end = 0; end != std::string::npos;) {
    end = dir.find('/', end + 1);
    std::string prefix = dir.substr(0, end);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      *error = failure("cannot create directory " + prefix, errno);
      return false;
    }
  }
  if (!is_directory(dir)) {
    *error = dir + " is not a directory";
    return false;
  }
  return true;
}

// Note [Claimed names]: a job's files are named by job id and rank, so
// that all ranks can share one folder; two processes may still compute the
// same name (a rank run twice, a job id reused). The first write of a name
// by this process claims it with O_CREAT|O_EXCL; if another process holds
// it, this process writes <stem>-<pid><ext> instead, from then on. Later
// writes replace the claimed file by rename (write_file_atomically), so
// periodic rewrites stay one file. Claims are per process (the key holds
// the pid: a forked child claims its own) and per folder. A claimed file
// that the first write then fails to fill is removed and the claim
// forgotten, so that no empty file stays behind.
struct Claim {
  std::string name;
  bool taken = false;  // the plain name was another process's
};

std::mutex& claims_mutex() {
  static std::mutex* mu = new std::mutex;  // never destroyed: used at exit
  return *mu;
}

std::map<std::string, Claim>& claims() {
  static auto* map = new std::map<std::string, Claim>;
  return *map;
}

std::string claim_key(const std::string& dir, const std::string& name) {
  return std::to_string(getpid()) + "/" + dir + "/" + name;
}

// The name this process writes `stem`+`ext` under in `dir`; *fresh when this
// call created the claimed file (the caller forgets it if the write fails).
Claim claim_name(const std::string& dir, const std::string& stem, const std::string& ext, bool* fresh) {
  *fresh = false;
  const std::string name = stem + ext;
  std::lock_guard<std::mutex> lock(claims_mutex());
  auto it = claims().find(claim_key(dir, name));
  if (it != claims().end()) return it->second;
  std::string error;
  if (!make_directories(dir, &error)) return Claim{name, false};  // the write tells why
  int fd = open((dir + "/" + name).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  Claim claim{name, false};
  if (fd >= 0) {
    close(fd);
    *fresh = true;
  } else if (errno == EEXIST) {
    claim = Claim{stem + "-" + std::to_string(getpid()) + ext, true};
  } else {
    return claim;  // not claimed: the write tells why
  }
  claims()[claim_key(dir, name)] = claim;
  return claim;
}

void forget_claim(const std::string& dir, const std::string& stem, const std::string& ext) {
  std::lock_guard<std::mutex> lock(claims_mutex());
  claims().erase(claim_key(dir, stem + ext));
  unlink((dir + "/" + stem + ext).c_str());
}

// Writes all of `data`, resuming after short writes and EINTR. The first
// write() gets everything.
bool write_all(int fd, const char* data, size_t size, int* err) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      *err = errno;
      return false;
    }
    if (n == 0) {
      *err = EIO;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool fsync_retrying(int fd) {
  while (fsync(fd) != 0) {
    if (errno != EINTR) return false;
  }
  return true;
}

// Makes a fresh temporary file in `dir` for `name`; -1 with *error if none.
int create_temporary(const std::string& dir, const std::string& name, std::string* path, std::string* error) {
  static std::atomic<unsigned> sequence{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    *path = dir + "/." + name + ".tmp." + std::to_string(getpid()) + "." +
            std::to_string(sequence.fetch_add(1, std::memory_order_relaxed));
    int fd = open(path->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) return fd;
    if (errno != EEXIST) {
      *error = failure("cannot create " + *path, errno);
      return -1;
    }
  }
  *error = "cannot create a temporary file in " + dir + ": every name tried exists";
  return -1;
}

// Makes the rename durable; best effort (some file systems refuse).
void fsync_directory(const std::string& dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  fsync_retrying(fd);
  close(fd);
}

// Blocks SIGPIPE on this thread for its lifetime, and swallows a SIGPIPE
// that its writes raised (a reader of stderr that went away must not kill
// the process). One already pending before is left alone.
class SigpipeHeld {
 public:
  SigpipeHeld() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    was_pending_ = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
    blocked_ = pthread_sigmask(SIG_BLOCK, &pipe_, &old_) == 0;
  }
  ~SigpipeHeld() {
    if (!blocked_) return;
    sigset_t pending;
    sigemptyset(&pending);
    if (!was_pending_ && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
      timespec zero{0, 0};
      while (sigtimedwait(&pipe_, nullptr, &zero) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeHeld(const SigpipeHeld&) = delete;
  SigpipeHeld& operator=(const SigpipeHeld&) = delete;

 private:
  sigset_t pipe_;
  sigset_t old_;
  bool was_pending_ = false;
  bool blocked_ = false;
};

// Logs the failure, or appends it to `failures` when given. The path and
// the reason quote output_dir: Note [Escaped input].
void tell_failure(const std::string& path, const std::string& reason, std::vector<std::string>* failures) {
  try {
    std::string line = "cannot write summary to " + log::escape_bytes(path) + ": " + log::escape_bytes(reason);
    if (failures) {
      failures->push_back(std::move(line));
      return;
    }
    log::error("{}", line);
  } catch (...) {
    // The log is the last resort; nothing is left to tell.
  }
}

void write_to_stderr(const std::string& text, std::vector<std::string>* failures) {
  int err = 0;
  if (!write_all(STDERR_FILENO, text.data(), text.size(), &err)) tell_failure("stderr", errno_text(err), failures);
}

// Where one of the summary's files goes: its name claimed when it is a
// job's (Note [Claimed names]).
struct Target {
  std::string dir, stem, ext, name;
  bool taken = false;  // written as <stem>-<pid><ext>
  bool fresh = false;  // this write created the claimed file
};

Target target_for(const std::string& dir, const Summary& summary, const char* ext) {
  Target t{dir, file_stem(summary), ext, file_stem(summary) + ext};
  if (has_job_name(summary)) {
    Claim c = claim_name(dir, t.stem, t.ext, &t.fresh);
    t.name = c.name;
    t.taken = c.taken;
  }
  return t;
}

void write_to_file(const Target& t, const std::string& contents, std::vector<std::string>* failures) {
  std::string error;
  if (write_file_atomically(t.dir, t.name, contents, &error)) return;
  if (t.fresh) forget_claim(t.dir, t.stem, t.ext);
  tell_failure(t.dir + "/" + t.name, error, failures);
}

// Note [Text from the JSON]: the process renders its text from the summary
// as its JSON holds it (read back: seconds to 9 digits, shares to 6), not
// from the figures in memory, so that `python -m gpuslack report FILE` and
// gpuslack_render_summary, which read the file, print exactly the text the
// process printed (summary_reader.h). If the document cannot be read back
// (a bug), the figures in memory are rendered.
std::string text_as_written(const Summary& summary, const std::string& json, TextDetail detail) {
  Summary as_written;
  std::string error;
  return format_text(summary_from_json(json, &as_written, &error) ? as_written : summary, detail);
}

// Note [Short summary]: summary_detail:auto gives the short text where a
// person reads it as it comes, a terminal (stderr is a tty), and the full
// text in a log or a file, which are read later and searched. The short
// text ends with where the rest is: the JSON file (the full text is
// `python -m gpuslack report FILE`), or, with no JSON written, the knob.
TextDetail text_detail(const Options& options) {
  if (options.summary_detail == "short") return TextDetail::kShort;
  if (options.summary_detail == "full") return TextDetail::kFull;
  return options.text_summary == "stderr" && isatty(STDERR_FILENO) == 1 ? TextDetail::kShort : TextDetail::kFull;
}

std::string where_the_rest_is(const std::string& json_path) {
  if (json_path.empty()) return wrap_line("gpuslack: ", "the full summary: summary_detail:full prints it here");
  return wrap_line("gpuslack: ", "the full summary: python -m gpuslack report " + log::escape_bytes(json_path) +
                                     " (summary_detail:full prints it here)");
}

// The metrics, from the summary as its JSON holds it too: a scrape shows
// the figures the file has.
std::string metrics_as_written(const Summary& summary, const std::string& json, bool with_pid) {
  Summary as_written;
  std::string error;
  return format_prometheus(summary_from_json(json, &as_written, &error) ? as_written : summary, with_pid);
}

}  // namespace

std::string json_file_name(const Summary& summary) { return file_stem(summary) + ".json"; }
std::string text_file_name(const Summary& summary) { return file_stem(summary) + ".txt"; }
std::string prometheus_file_name(const Summary& summary) { return file_stem(summary) + ".prom"; }

bool write_file_atomically(const std::string& dir_in, const std::string& name, const std::string& contents,
                           std::string* error) {
  std::string dir = dir_in.empty() ? "." : dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    *error = "\"" + name + "\" is not a plain file name";
    return false;
  }
  if (!make_directories(dir, error)) return false;

  std::string temporary;
  int fd = create_temporary(dir, name, &temporary, error);
  if (fd < 0) return false;
  int err = 0;
  bool ok = write_all(fd, contents.data(), contents.size(), &err);
  if (!ok) *error = failure("cannot write " + temporary, err);
  if (ok && !fsync_retrying(fd)) {
    ok = false;
    *error = failure("cannot fsync " + temporary, errno);
  }
  if (close(fd) != 0 && ok) {
    ok = false;
    *error = failure("cannot close " + temporary, errno);
  }
  std::string final_path = dir + "/" + name;
  if (ok && rename(temporary.c_str(), final_path.c_str()) != 0) {
    ok = false;
    *error = failure("cannot rename " + temporary + " to " + final_path, errno);
  }
  if (!ok) {
    unlink(temporary.c_str());
    return false;
  }
  fsync_directory(dir);
  return true;
}

void write_summary(const Summary& summary, const Options& options, std::vector<std::string>* failures) {
  const int saved_errno = errno;
  {
    SigpipeHeld sigpipe_held;
    const std::string dir = options.output_dir.empty() ? "." : options.output_dir;
    std::string where = "stderr";
    std::string json;
    // The JSON's name, claimed once (Note [Claimed names]): the short text
    // names it before it is written.
    Target json_target;
    bool json_claimed = false;
    auto claim_json = [&]() -> const Target& {
      if (!json_claimed) json_target = target_for(dir, summary, ".json");
      json_claimed = true;
      return json_target;
    };
    try {
      const TextDetail detail = text_detail(options);
      auto text = [&]() {
        std::string t = text_as_written(summary, json, detail);
        if (detail == TextDetail::kShort)
          t += where_the_rest_is(options.json_summary ? dir + "/" + claim_json().name : std::string());
        return t;
      };
      if (options.text_summary == "file") {
        Target t = target_for(dir, summary, ".txt");
        where = dir + "/" + t.name;
        json = format_json(summary);
        write_to_file(t, text(), failures);
      } else if (options.text_summary != "off") {
        json = format_json(summary);
        write_to_stderr(text(), failures);
      }
    } catch (const std::exception& e) {
      tell_failure(where, e.what(), failures);
    } catch (...) {
      tell_failure(where, "unknown error", failures);
    }
    where = dir;
    try {
      if (options.json_summary) {
        const Target& t = claim_json();
        where = dir + "/" + t.name;
        if (json.empty()) json = format_json(summary);
        write_to_file(t, json, failures);
      }
    } catch (const std::exception& e) {
      tell_failure(where, e.what(), failures);
    } catch (...) {
      tell_failure(where, "unknown error", failures);
    }
    where = options.prometheus_dir;
    try {
      if (!options.prometheus_dir.empty()) {
        Target t = target_for(options.prometheus_dir, summary, ".prom");
        where = options.prometheus_dir + "/" + t.name;
        if (json.empty()) json = format_json(summary);
        write_to_file(t, metrics_as_written(summary, json, t.taken), failures);
      }
    } catch (const std::exception& e) {
      tell_failure(where, e.what(), failures);
    } catch (...) {
      tell_failure(where, "unknown error", failures);
    }
  }
  errno = saved_errno;
}

std::vector<std::string> PeriodicFailures::to_log(const std::vector<std::string>& failures) {
  std::vector<std::string> lines;
  if (failures.empty()) {
    failing_ = false;
    return lines;
  }
  if (failing_) return lines;
  failing_ = true;
  for (const std::string& f : failures) lines.push_back(f + " (periodic summaries: not repeated until one is written)");
  return lines;
}

}  // namespace report
}  // namespace gpuslack

// See log_sink.h. Plain POSIX calls: nothing here throws on an I/O error.
#include "log/log_sink.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <string_view>
#include <utility>

#include "log/escape.h"
#include "spdlog/details/log_msg.h"
#include "spdlog/sinks/base_sink.h"

namespace gpuslack {
namespace log {
namespace {

constexpr int kMaxSymlinks = 40;  // as the kernel's own path walk (ELOOP)

// strerror_r comes in a GNU (char*) and an XSI (int) flavour.
[[maybe_unused]] const char* pick_message(const char* gnu, const char*) { return gnu; }
[[maybe_unused]] const char* pick_message(int xsi, const char* buf) { return xsi == 0 ? buf : "unknown error"; }

std::string errno_text(int err) {
  char buf[256] = {};
  return pick_message(strerror_r(err, buf, sizeof(buf)), buf);
}

// The components of `path` that name something ("a//b/./c" -> a, b, c).
std::deque<std::string> components(const std::string& path) {
  std::deque<std::string> out;
  size_t from = 0;
  while (from <= path.size()) {
    size_t end = path.find('/', from);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(from, end - from);
    if (!part.empty() && part != ".") out.push_back(std::move(part));
    from = end + 1;
  }
  return out;
}

// Closes a descriptor on every way out.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

int fail(std::string* error, std::string reason) {
  *error = std::move(reason);
  return -1;
}

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

class LogSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit LogSink(std::string path) : path_(std::move(path)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const int saved_errno = errno;
    if (fd_ < 0) open_once();
    std::string escaped = escape_bytes(std::string_view(msg.payload.data(), msg.payload.size()));
    spdlog::details::log_msg line(msg);
    line.payload = spdlog::string_view_t(escaped.data(), escaped.size());
    spdlog::memory_buf_t formatted;
    formatter_->format(line, formatted);
    write_all(fd_, formatted.data(), formatted.size());
    errno = saved_errno;
  }

  void flush_() override {}  // every line is one write(): nothing is buffered

 private:
  void open_once() {
    fd_ = STDERR_FILENO;
    if (path_.empty()) return;
    std::string error;
    int fd = open_log_file(path_, &error);
    if (fd >= 0) {
      fd_ = fd;
      return;
    }
    std::string line =
        "gpuslack: cannot open log_file " + escape_bytes(path_) + " (" + escape_bytes(error) + "); logging to stderr\n";
    write_all(STDERR_FILENO, line.data(), line.size());
  }

  const std::string path_;
  int fd_ = -1;  // -1 until the first line; then the file's, or stderr's
};

}  // namespace

int open_log_file(const std::string& path, std::string* error) {
  std::deque<std::string> todo = components(path);
  if (todo.empty() || path.back() == '/' || todo.back() == "..") return fail(error, "not a file name");
  const std::string name = todo.back();
  todo.pop_back();
  const uid_t euid = geteuid();
  Fd dir(open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) return fail(error, errno_text(errno));
  std::string walked = path[0] == '/' ? "" : ".";  // for the reasons given
  int symlinks = 0;
  while (!todo.empty()) {
    std::string part = std::move(todo.front());
    todo.pop_front();
    walked += "/" + part;
    Fd next(openat(dir.get(), part.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (next.get() < 0) return fail(error, walked + ": " + errno_text(errno));
    struct stat st;
    if (fstat(next.get(), &st) != 0) return fail(error, walked + ": " + errno_text(errno));
    if (S_ISLNK(st.st_mode)) {
      if (st.st_uid != 0 && st.st_uid != euid)
        return fail(error, walked + " is a symlink owned by uid " + std::to_string(st.st_uid) + ", not followed");
      if (++symlinks > kMaxSymlinks) return fail(error, walked + ": " + errno_text(ELOOP));
      char target[PATH_MAX];
      ssize_t n = readlinkat(next.get(), "", target, sizeof(target));
      if (n <= 0 || static_cast<size_t>(n) >= sizeof(target)) return fail(error, walked + ": unreadable symlink");
      std::string to(target, static_cast<size_t>(n));
      std::deque<std::string> parts = components(to);
      todo.insert(todo.begin(), parts.begin(), parts.end());
      if (to[0] == '/') {
        dir.reset(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (dir.get() < 0) return fail(error, errno_text(errno));
      }
      continue;
    }
    if (!S_ISDIR(st.st_mode)) return fail(error, walked + ": " + errno_text(ENOTDIR));
    dir.reset(next.release());
  }
  const int flags = O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
  Fd file(openat(dir.get(), name.c_str(), flags, 0644));
  if (file.get() < 0) return fail(error, errno == ELOOP ? "a symlink, not followed" : errno_text(errno));
  struct stat st;
  if (fstat(file.get(), &st) != 0) return fail(error, errno_text(errno));
  if (!S_ISREG(st.st_mode)) return fail(error, "not a regular file");
  return file.release();
}

std::shared_ptr<spdlog::sinks::sink> make_log_sink(const std::string& log_file) {
  return std::make_shared<LogSink>(log_file);
}

}  // namespace log
}  // namespace gpuslack

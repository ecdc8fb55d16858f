#include "topology/sysfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "config/environment.h"

namespace gpuslack {
namespace topology {
namespace {

std::string errno_text(int err) {
  char buf[128] = {};
  // GNU strerror_r returns the message (maybe not in buf).
  return strerror_r(err, buf, sizeof(buf));
}

}  // namespace

std::string sysfs_root() {
  const char* v = environment_variable("GPUSLACK_TEST_SYSFS_ROOT");  // Note [Secure execution]
  return v && *v ? std::string(v) : std::string("/");
}

Sysfs::Sysfs(std::string root) : root_(std::move(root)) {
  while (!root_.empty() && root_.back() == '/') root_.pop_back();
}

std::string Sysfs::under_root(const std::string& path) const { return root_ + path; }

bool Sysfs::read_line(const std::string& path, std::string* out, std::string* why) const {
  const std::string full = under_root(path);
  int fd = open(full.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *why = "cannot read " + full + ": " + errno_text(errno);
    return false;
  }
  char buf[4096];
  size_t used = 0;
  for (;;) {
    ssize_t n = read(fd, buf + used, sizeof(buf) - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      *why = "cannot read " + full + ": " + errno_text(err);
      return false;
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
    if (used == sizeof(buf)) break;
  }
  close(fd);
  out->assign(buf, used);
  size_t nl = out->find('\n');
  if (nl != std::string::npos) out->resize(nl);
  return true;
}

std::vector<std::string> Sysfs::list(const std::string& path, std::string* why) const {
  std::vector<std::string> out;
  const std::string full = under_root(path);
  DIR* dir = opendir(full.c_str());
  if (!dir) {
    *why = "no " + full + ": " + errno_text(errno);
    return out;
  }
  while (dirent* e = readdir(dir)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    out.emplace_back(e->d_name);
  }
  closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

bool Sysfs::exists(const std::string& path) const { return access(under_root(path).c_str(), F_OK) == 0; }

bool Sysfs::real_path(const std::string& path, std::string* out, std::string* why) const {
  const std::string full = under_root(path);
  char buf[PATH_MAX];
  if (!realpath(full.c_str(), buf)) {
    *why = "cannot resolve " + full + ": " + errno_text(errno);
    return false;
  }
  std::string resolved = buf;
  if (!root_.empty()) {
    // The root itself may be reached through a link (/tmp on some systems).
    char root_buf[PATH_MAX];
    std::string real_root = realpath(root_.c_str(), root_buf) ? std::string(root_buf) : root_;
    if (resolved.compare(0, real_root.size(), real_root) != 0) {
      *why = full + " resolves outside " + root_;
      return false;
    }
    resolved.erase(0, real_root.size());
  }
  *out = resolved;
  return true;
}

}  // namespace topology
}  // namespace gpuslack

// Linux sysfs as the topology reads it: small text files, directory
// listings and the real path of a link, all under a root directory.
//
// The root is "/" in every run; only tests set another (a fixture tree
// written into a temporary directory), through GPUSLACK_TEST_SYSFS_ROOT,
// read with config/environment.h: a secure process ignores it (Note
// [Secure execution]) and reads the real /sys. sysfs_root() reads the
// variable; a Sysfs object holds the root it was made with.
//
// Every reader answers false (or an empty list) with the reason in
// `why`, never throws and never logs: the caller decides whether a missing
// file is news ("unknown: ...") or an error worth one log line.
//
// Thread safety: a Sysfs is immutable; its readers may run on any thread.
#pragma once

#include <string>
#include <vector>

namespace gpuslack {
namespace topology {

// GPUSLACK_TEST_SYSFS_ROOT when set and not empty, else "/".
std::string sysfs_root();

class Sysfs {
 public:
  explicit Sysfs(std::string root);

  const std::string& root() const { return root_; }
  // `path` (absolute, as the kernel documents it: "/sys/class/...") under
  // the root.
  std::string under_root(const std::string& path) const;

  // The file's first line, without its newline (sysfs attributes are one
  // value); at most 4 KiB are read.
  bool read_line(const std::string& path, std::string* out, std::string* why) const;
  // The names in a directory, sorted, without "." and "..".
  std::vector<std::string> list(const std::string& path, std::string* why) const;
  bool exists(const std::string& path) const;
  // The real path of `path` (links resolved), with the root taken off its
  // front: "/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0".
  bool real_path(const std::string& path, std::string* out, std::string* why) const;

 private:
  std::string root_;  // without a trailing '/': "" for "/"
};

}  // namespace topology
}  // namespace gpuslack

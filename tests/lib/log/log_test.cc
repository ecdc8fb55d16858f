#include "log/log.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "config/options.h"
#include "log/log_sink.h"

namespace gpuslack {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// A fresh directory for one test, removed afterwards.
class LogFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "gpuslack_log_XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(pattern.data()));
    dir_ = pattern;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  // log_file:<path> at `level`, then `line` logged at warn, in a child.
  void log_in_child(const std::string& path, const char* level, const char* line, const char* expect_stderr) {
    std::string conf = "log_file:" + path + ",log_level:" + level;
    EXPECT_EXIT(
        {
          setenv("GPUSLACK_CONF", conf.c_str(), 1);
          log::info("at info");
          log::warn("{}", line);
          std::exit(0);
        },
        testing::ExitedWithCode(0), expect_stderr);
  }

  std::string dir_;
};


TEST(Log, UnwritableLogFileFallsBackToStderrWithOneLine) {
  EXPECT_EXIT(
      {
        setenv("GPUSLACK_CONF", "log_file:/dev/null/x.log,log_level:info", 1);
        log::info("still here");
        std::exit(0);
      },
      testing::ExitedWithCode(0),
      "gpuslack: cannot open log_file /dev/null/x.log .*; logging to stderr\n"
      "gpuslack: still here");
}

TEST(Log, WritesToTheLogFile) {
  std::string path = testing::TempDir() + "gpuslack_log_test.log";
  std::remove(path.c_str());
  std::string conf = "log_file:" + path + ",log_level:debug";
  EXPECT_EXIT(
      {
        setenv("GPUSLACK_CONF", conf.c_str(), 1);
        log::debug("to the file {}", 42);
        std::exit(0);
      },
      testing::ExitedWithCode(0), "");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ("gpuslack: to the file 42\n", text.str());
}

TEST(Log, BadConfIsReportedOnceAndLevelDefaultsToWarn) {
  EXPECT_EXIT(
      {
        setenv("GPUSLACK_CONF", "log_level:chatty", 1);
        log::info("hidden at warn");
        log::warn("shown");
        std::exit(0);
      },
      testing::ExitedWithCode(0),
      "gpuslack: GPUSLACK_CONF: log_level:chatty is not one of .*; using \"warn\"\n"
      "gpuslack: shown\n$");
}

// See Note [Log file]: the file opens on the first line logged. Before, it was
// created (empty) when the logger was made.
TEST_F(LogFile, NothingLoggedCreatesNoFile) {
  std::string path = dir_ + "/quiet.log";
  log_in_child(path, "error", "below the level", "");
  EXPECT_FALSE(exists(path));
  log_in_child(path, "warn", "now one line", "");
  EXPECT_EQ("gpuslack: now one line\n", read_file(path));
}

// No directory is made for it (spdlog's file sink made every missing one).
TEST_F(LogFile, NoDirectoryIsCreated) {
  std::string path = dir_ + "/missing/deeper/x.log";
  log_in_child(path, "warn", "still here",
               "gpuslack: cannot open log_file .*/missing/deeper/x.log \\(.*/missing: No such file or directory\\); "
               "logging to stderr\ngpuslack: still here\n");
  EXPECT_FALSE(exists(dir_ + "/missing"));
}

// A symlink at the name is not followed: the file it points to is left alone.
TEST_F(LogFile, ASymlinkAtTheNameIsRefused) {
  std::string victim = dir_ + "/victim";
  { std::ofstream(victim) << "precious\n"; }
  ASSERT_EQ(0, symlink(victim.c_str(), (dir_ + "/link.log").c_str()));
  log_in_child(dir_ + "/link.log", "warn", "appended?",
               "gpuslack: cannot open log_file .*/link.log \\(a symlink, not followed\\); logging to stderr\n"
               "gpuslack: appended\\?\n");
  EXPECT_EQ("precious\n", read_file(victim));
  // A dangling one is not followed either (it would create its target).
  ASSERT_EQ(0, symlink((dir_ + "/created").c_str(), (dir_ + "/dangling.log").c_str()));
  log_in_child(dir_ + "/dangling.log", "warn", "x", "cannot open log_file .*dangling.log");
  EXPECT_FALSE(exists(dir_ + "/created"));
}

// On the way to it, a symlink is followed when this user (or root) owns
// it, and refused when another user does.
TEST_F(LogFile, ASymlinkOnTheWayIsFollowedOnlyIfOursOrRoots) {
  ASSERT_EQ(0, mkdir((dir_ + "/real").c_str(), 0755));
  ASSERT_EQ(0, symlink("real", (dir_ + "/ours").c_str()));
  log_in_child(dir_ + "/ours/./x.log", "warn", "through our own link", "");
  EXPECT_EQ("gpuslack: through our own link\n", read_file(dir_ + "/real/x.log"));
  // Never skipped: the suite runs as root (CI does), which a symlink owned
  // by another user needs.
  ASSERT_EQ(0u, geteuid()) << "making a symlink owned by another user needs root: run the suite as root";
  ASSERT_EQ(0, symlink(dir_.c_str(), (dir_ + "/theirs").c_str()));
  ASSERT_EQ(0, lchown((dir_ + "/theirs").c_str(), 65534, 65534));
  log_in_child(
      dir_ + "/theirs/real/y.log", "warn", "x",
      "cannot open log_file .*/theirs/real/y.log \\(.*/theirs is a symlink owned by uid 65534, not followed\\)");
  EXPECT_FALSE(exists(dir_ + "/real/y.log"));
}

// A FIFO would block the process on open (no reader), a device is no log.
TEST_F(LogFile, OnlyARegularFileIsOpened) {
  std::string fifo = dir_ + "/fifo.log";
  ASSERT_EQ(0, mkfifo(fifo.c_str(), 0644));
  log_in_child(fifo, "warn", "x", "cannot open log_file .*/fifo.log \\(.*\\); logging to stderr");
  log_in_child("/dev/null", "warn", "x", "cannot open log_file /dev/null \\(not a regular file\\)");
  log_in_child(dir_ + "/", "warn", "x", "cannot open log_file .*/ \\(not a file name\\)");
}

TEST(LogFileOpen, WalksDotDotAndRelativePaths) {
  std::string error;
  std::string dir = ::testing::TempDir() + "gpuslack_log_walk";
  mkdir(dir.c_str(), 0755);
  int fd = log::open_log_file(dir + "/../gpuslack_log_walk/./w.log", &error);
  ASSERT_GE(fd, 0) << error;
  close(fd);
  EXPECT_TRUE(exists(dir + "/w.log"));
  std::remove((dir + "/w.log").c_str());
  rmdir(dir.c_str());
  EXPECT_EQ(-1, log::open_log_file("", &error));
  EXPECT_EQ("not a file name", error);
  EXPECT_EQ(-1, log::open_log_file("a/..", &error));
}

// See Note [Escaped input]: whatever a message holds, it is one line.
TEST(Log, EveryMessageIsOneEscapedLine) {
  EXPECT_EXIT(
      {
        unsetenv("GPUSLACK_CONF");
        log::warn("two\nlines and \x1b[2J{}", "\r");
        std::exit(0);
      },
      testing::ExitedWithCode(0), "^gpuslack: two\\\\nlines and \\\\x1b\\[2J\\\\r\n$");
}

}  // namespace
}  // namespace gpuslack


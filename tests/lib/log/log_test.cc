#include "log/log.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "config/options.h"

namespace gpuslack {
namespace {


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

}  // namespace
}  // namespace gpuslack

#include "config/options.h"

#include <gtest/gtest.h>

namespace gpuslack {
namespace {

TEST(Options, DefaultsWithoutConf) {
  std::vector<std::string> errors;
  Options o = parse_options(nullptr, &errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ("warn", o.log_level);
  EXPECT_EQ("", o.log_file);
}

TEST(Options, ParsesEveryKind) {
  std::vector<std::string> errors;
  Options o = parse_options(" log_level = debug ,log_file=/tmp/x.log", &errors);
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ("debug", o.log_level);
  EXPECT_EQ("/tmp/x.log", o.log_file);
}

TEST(Options, BadInputGetsOneLineEachAndTheDefault) {
  std::vector<std::string> errors;
  Options o = parse_options("colour=blue,log_level=loud,novalue", &errors);
  ASSERT_EQ(3u, errors.size());
  EXPECT_NE(std::string::npos, errors[0].find("unknown key 'colour'"));
  EXPECT_NE(std::string::npos, errors[1].find("'novalue' is not key=value"));
  EXPECT_NE(std::string::npos, errors[2].find("log_level=loud"));
  for (const auto& e : errors) EXPECT_EQ(std::string::npos, e.find('\n'));
  EXPECT_EQ("warn", o.log_level);
}

TEST(Options, DocHasOneLinePerKnob) {
  std::vector<std::string> doc = options_doc();
  ASSERT_EQ(2u, doc.size());
  EXPECT_EQ(0u, doc[0].find("log_level (string, default \"warn\"): "));
  EXPECT_EQ(0u, doc[1].find("log_file (string, default \"\"): "));
}

}  // namespace
}  // namespace gpuslack

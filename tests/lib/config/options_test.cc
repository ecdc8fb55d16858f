#include "config/options.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace gpuslack {
namespace {

TEST(Options, DefaultsWithoutConf) {
  std::vector<std::string> errors;
  Options o = parse_options(nullptr, nullptr, &errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ("warn", o.log_level);
  EXPECT_EQ("", o.log_file);
  EXPECT_EQ("gpuslack-out", o.output_dir);
  EXPECT_EQ("stderr", o.text_summary);
  EXPECT_TRUE(o.json_summary);
  EXPECT_EQ(0.0, o.summary_interval_s);
  EXPECT_EQ(100.0, o.call_site_threshold_us);
  EXPECT_EQ(5, o.top_call_sites);
  EXPECT_TRUE(o.signals);
  EXPECT_TRUE(o.nvtx);
}

TEST(Options, ParsesEveryTypeInPytorchSyntax) {
  std::vector<std::string> errors;
  Options o = parse_options(
      " log_level : debug ,log_file:/tmp/x.log,json_summary:false,summary_interval_s:2.5,"
      "top_call_sites:9,nvtx:off,text_summary:file",
      nullptr, &errors);
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ("debug", o.log_level);
  EXPECT_EQ("/tmp/x.log", o.log_file);
  EXPECT_FALSE(o.json_summary);
  EXPECT_EQ(2.5, o.summary_interval_s);
  EXPECT_EQ(9, o.top_call_sites);
  EXPECT_FALSE(o.nvtx);
  EXPECT_EQ("file", o.text_summary);
}

TEST(Options, AcceptsKeyEqualsValueAndOutputVariable) {
  std::vector<std::string> errors;
  Options o = parse_options("output_dir=/a,signals=0", "/from/env", &errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ("/a", o.output_dir);  // the explicit key wins over GPUSLACK_OUTPUT
  EXPECT_FALSE(o.signals);
  o = parse_options("signals:1", "/from/env", &errors);
  EXPECT_EQ("/from/env", o.output_dir);
}

TEST(Options, BadInputGetsOneLineEachAndTheDefault) {
  std::vector<std::string> errors;
  Options o = parse_options(
      "colour:blue,log_level:loud,novalue,json_summary:maybe,summary_interval_s:-1,"
      "top_call_sites:many,text_summary:printer",
      nullptr, &errors);
  ASSERT_EQ(7u, errors.size());
  EXPECT_NE(std::string::npos, errors[0].find("unknown key 'colour'; ignored"));
  EXPECT_NE(std::string::npos, errors[1].find("'novalue' is not key:value; ignored"));
  EXPECT_NE(std::string::npos, errors[2].find("json_summary:maybe is not a bool; using true"));
  EXPECT_NE(std::string::npos, errors[3].find("summary_interval_s:-1 is not a non-negative number; using 0"));
  EXPECT_NE(std::string::npos, errors[4].find("top_call_sites:many is not a non-negative integer; using 5"));
  EXPECT_NE(std::string::npos, errors[5].find("text_summary:printer is not one of stderr, file, off"));
  EXPECT_NE(std::string::npos, errors[6].find("log_level:loud"));
  for (const auto& e : errors) {
    EXPECT_EQ(std::string::npos, e.find('\n'));
    EXPECT_EQ(0u, e.find("GPUSLACK_CONF: "));
  }
  EXPECT_EQ("warn", o.log_level);
  EXPECT_TRUE(o.json_summary);
  EXPECT_EQ(0.0, o.summary_interval_s);
  EXPECT_EQ(5, o.top_call_sites);
  EXPECT_EQ("stderr", o.text_summary);
}

TEST(Options, DocHasOneLinePerKnob) {
  std::vector<std::string> doc = options_doc();
  ASSERT_EQ(26u, doc.size());
  EXPECT_EQ(0u, doc[0].find("log_level (string, default \"warn\"): "));
  EXPECT_EQ(0u, doc[1].find("log_file (string, default \"\"): "));
}

TEST(Options, ReadmeListsEveryKnob) {
  std::ifstream in(GPUSLACK_README);
  ASSERT_TRUE(in) << GPUSLACK_README;
  std::stringstream text;
  text << in.rdbuf();
  std::string all = text.str();
  size_t from = all.find("### Configuration");
  ASSERT_NE(std::string::npos, from);
  std::string readme = all.substr(from, all.find("\n#", from + 1) - from);
  size_t rows = 0;
  for (const std::string& doc : options_doc()) {
    std::string key = doc.substr(0, doc.find(' '));
    EXPECT_NE(std::string::npos, readme.find("| `" + key + "` |")) << key << " is missing from README.md";
    ++rows;
  }
  // And no row for a knob that does not exist.
  size_t listed = 0;
  for (size_t at = readme.find("\n| `"); at != std::string::npos; at = readme.find("\n| `", at + 1)) ++listed;
  EXPECT_EQ(rows, listed);
}

}  // namespace
}  // namespace gpuslack

// The fabric knob's table and parsing, and the communicator's shape
// (lib/findings/fabric.h).
#include "findings/fabric.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/options.h"

namespace gpuslack {
namespace findings {
namespace {

TEST(Fabric, ParsesOneLinkOrANodeAndANetwork) {
  Fabric f;
  std::string error;
  ASSERT_TRUE(parse_fabric("auto", &f, &error));
  EXPECT_EQ(nullptr, f.node);
  EXPECT_EQ(nullptr, f.network);
  ASSERT_TRUE(parse_fabric("nvlink4", &f, &error));
  ASSERT_NE(nullptr, f.node);
  EXPECT_EQ(370, f.node->busbw_gbps);
  EXPECT_EQ(nullptr, f.network);
  ASSERT_TRUE(parse_fabric("ib400+nvlink3", &f, &error));
  EXPECT_STREQ("nvlink3", f.node->name);
  EXPECT_STREQ("ib400", f.network->name);
}

TEST(Fabric, RefusesUnknownNamesAndTwoOfAKind) {
  Fabric f;
  std::string error;
  EXPECT_FALSE(parse_fabric("nvlink9", &f, &error));
  EXPECT_NE(std::string::npos, error.find("fabric:nvlink9 is not one of")) << error;
  EXPECT_FALSE(parse_fabric("ib400+roce200", &f, &error));
  EXPECT_NE(std::string::npos, error.find("two networks")) << error;
  EXPECT_FALSE(parse_fabric("nvlink4+", &f, &error));
  EXPECT_EQ(nullptr, f.node);
}

TEST(Fabric, EveryLinkHasAFigure) {
  int n = 0;
  for (const Link* l = links(); l->name; ++l, ++n) {
    EXPECT_GT(l->busbw_gbps, 0) << l->name;
    EXPECT_EQ(l, find_link(l->name));
  }
  EXPECT_EQ(9, n);
}

TEST(Fabric, TheKnobAcceptsEveryLinkOfTheTable) {
  for (const Link* l = links(); l->name; ++l) {
    std::vector<std::string> errors;
    Options o = parse_options((std::string("fabric:") + l->name + "+ib400").c_str(), nullptr, &errors);
    EXPECT_TRUE(errors.empty()) << l->name;
    EXPECT_EQ(std::string(l->name) + "+ib400", o.fabric);
  }
  std::vector<std::string> errors;
  Options o = parse_options("fabric:nvlink9", nullptr, &errors);
  ASSERT_EQ(1u, errors.size());
  EXPECT_NE(std::string::npos, errors[0].find("fabric:nvlink9 is not auto or one of")) << errors[0];
  EXPECT_EQ("auto", o.fabric);
}

TEST(Fabric, ExpectationByShape) {
  Fabric f;
  std::string error, source;
  ASSERT_TRUE(parse_fabric("nvlink4+ib400", &f, &error));
  EXPECT_EQ(370, expected_busbw(0, f, Span::kWithinNode, &source));
  EXPECT_EQ(40, expected_busbw(0, f, Span::kAcrossNodes, &source));
  EXPECT_EQ(40, expected_busbw(0, f, Span::kUnknown, &source));
  EXPECT_EQ(55, expected_busbw(55, f, Span::kWithinNode, &source));
  EXPECT_EQ("expected_busbw_gbps", source);
  ASSERT_TRUE(parse_fabric("ib400", &f, &error));
  EXPECT_EQ(0, expected_busbw(0, f, Span::kWithinNode, &source));
}

TEST(Fabric, SpanFromWhatTheSummaryHolds) {
  report::Summary s;
  for (int r = 0; r < 4; ++r) s.collectives.communicators.push_back({4, r, r, true, false});
  EXPECT_EQ(Span::kWithinNode, span_of(s, 4));
  EXPECT_EQ(Span::kUnknown, span_of(s, 8));
  s.job.world_size = 8;
  s.job.node_rank = 1;
  EXPECT_EQ(Span::kAcrossNodes, span_of(s, 8));
  s.job.node_rank = 0;
  EXPECT_EQ(Span::kUnknown, span_of(s, 8));
}

}  // namespace
}  // namespace findings
}  // namespace gpuslack

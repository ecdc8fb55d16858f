// How much of the GPU's idle the findings explain (report/idle_explained.h):
// the figure, the text line before the findings, and the summary JSON's
// "findings_explain" member, which the job report only sums over ranks.
#include <gtest/gtest.h>

#include "report/idle_explained.h"
#include "report/json.h"
#include "report/json_reader.h"
#include "report/summary_reader.h"
#include "report/text.h"
#include "sample_summary.h"
#include "text_lines.h"

namespace gpuslack {
namespace report {
namespace {

Finding finding(const char* rule, double cost_s, double gpu_idle_s) {
  Finding f;
  f.rule = rule;
  f.title = rule;
  f.cost_s = cost_s;
  f.gpu_idle_s = gpu_idle_s;
  return f;
}

TEST(IdleExplained, SumsTheFindingsGpuIdleOverEveryDevicesIdle) {
  Summary s = testing_sample::sample_summary_with_gpu_timeline();
  double idle = 0;
  for (const GpuDeviceRow& d : s.gpu_timeline.devices) idle += d.idle_s;
  ASSERT_GT(idle, 0.5);
  s.findings = {finding("sync_copies", 0.3, 0.3), finding("pageable_copies", 2.0, 0.1),
                finding("underfilled_kernels", 5.0, -1)};
  const IdleExplained e = idle_explained(s);
  EXPECT_TRUE(e.measured);
  EXPECT_DOUBLE_EQ(idle, e.idle_s);
  EXPECT_DOUBLE_EQ(0.4, e.explained_s);  // GPU idle only: not host time, not busy time
  EXPECT_DOUBLE_EQ(0.4 / idle, e.share());
  const std::string line = idle_explained_line(s);
  EXPECT_EQ(0u, line.rfind("findings explain 400.0 ms of the GPU's ", 0)) << line;
  // In the text, right before the findings.
  const std::vector<std::string> lines = testing_text::lines_of(format_text(s));
  size_t at = 0;
  while (at < lines.size() && lines[at].find("findings, most costly first:") == std::string::npos) ++at;
  ASSERT_LT(at, lines.size());
  ASSERT_GT(at, 0u);
  EXPECT_NE(std::string::npos, lines[at - 1].find("findings explain 400.0 ms")) << lines[at - 1];
}

TEST(IdleExplained, NoLineWithoutTheTimelineOrAFinding) {
  Summary s = testing_sample::sample_summary_with_gpu_timeline();
  EXPECT_EQ("", idle_explained_line(s));  // no finding
  s = testing_sample::sample_summary();
  s.findings = {finding("allocator_sync", 1.0, -1)};
  EXPECT_FALSE(idle_explained(s).measured);
  EXPECT_EQ("", idle_explained_line(s));
}

// The written member, parsed: {"gpu_idle_s", "explained_s"}, or null.
JsonValue findings_explain_member(const Summary& s) {
  JsonValue doc;
  std::string error;
  EXPECT_TRUE(parse_json(format_json(s), &doc, &error)) << error;
  const JsonValue* e = doc.find("findings_explain");
  return e ? *e : JsonValue();
}

double number(const JsonValue& v, const char* key) {
  const JsonValue* n = v.find(key);
  double out = -1;
  EXPECT_TRUE(n && n->to_double(&out)) << key;
  return out;
}

TEST(IdleExplained, TheSummaryJsonCarriesBothFigures) {
  Summary s = testing_sample::sample_summary_with_gpu_timeline();
  s.findings = {finding("sync_copies", 0.3, 0.3), finding("host_bound", 0.25, 0.25),
                finding("allocator_sync", 1.0, -1)};
  const IdleExplained e = idle_explained(s);
  const JsonValue written = findings_explain_member(s);
  ASSERT_TRUE(written.is_object());
  EXPECT_EQ(2u, written.keys().size());
  EXPECT_NEAR(e.idle_s, number(written, "gpu_idle_s"), 1e-9);
  EXPECT_NEAR(0.55, number(written, "explained_s"), 1e-9);
  // Derived, so it survives the reader without one: read back, written again.
  Summary back;
  std::string error;
  ASSERT_TRUE(summary_from_json(format_json(s), &back, &error)) << error;
  EXPECT_EQ(format_json(s), format_json(back));
  // No finding: nothing explained, the idle still said.
  s.findings.clear();
  EXPECT_NEAR(0, number(findings_explain_member(s), "explained_s"), 1e-12);
  EXPECT_NEAR(e.idle_s, number(findings_explain_member(s), "gpu_idle_s"), 1e-9);
}

TEST(IdleExplained, TheSummaryJsonSaysNullWithoutTheTimeline) {
  Summary s = testing_sample::sample_summary();
  s.findings = {finding("allocator_sync", 1.0, -1)};
  const JsonValue written = findings_explain_member(s);
  EXPECT_TRUE(written.is_null());
  EXPECT_NE(std::string::npos, format_json(s).find("\n  \"findings_explain\": null"));
}

}  // namespace
}  // namespace report
}  // namespace gpuslack

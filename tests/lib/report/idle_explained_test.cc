// How much of the GPU's idle the findings explain (report/idle_explained.h):
// the figure and the text line before the findings.
#include <gtest/gtest.h>

#include "report/idle_explained.h"
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

}  // namespace
}  // namespace report
}  // namespace gpuslack

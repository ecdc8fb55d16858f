// The findings in the writers: text right after the headline, in 80
// columns; JSON (findings_json.h) that reads back to the same document and
// the same text (Note [Text from the JSON] in report/output.cc).
#include <gtest/gtest.h>

#include <sstream>

#include "report/findings_text.h"
#include "report/json.h"
#include "report/summary_reader.h"
#include "report/text.h"
#include "sample_summary.h"
#include "text_lines.h"

namespace gpuslack {
namespace report {
namespace {

using testing_text::lines_of;

std::vector<Finding> two_findings() {
  Finding a;
  a.rule = "allocator_sync";
  a.title = "cudaFree/cudaMalloc wait for the whole GPU in steady state";
  a.cost_s = 1.2;
  a.cost_share = 0.096;
  a.gpu_idle_s = 0.75;
  a.evidence = {{"cudaFree calls", "120, 1.20 s blocked (longest 52.0 ms)"},
                {"in steady state (the run's middle 80%)", "980.0 ms"}};
  a.where = {{"train_step(int, std::vector<float, std::allocator<float> >&)+0x1a (/app/train)",
              "main+0x10 (/app/train)", "__libc_start_main+0x80 (/lib/libc.so.6)"},
             {"\"odd\" frame\n"}};
  a.fix = "GPUSLACK_CONF=allocator:vmm (gpuslack's allocator frees without waiting for the device)";
  Finding b;
  b.rule = "pageable_copies";
  b.title = "host-to-device copies from pageable memory block the host";
  b.cost_s = 0.4;
  b.cost_share = 0.032;
  b.gpu_idle_s = -1;
  b.evidence = {{"pageable H2D copies", "200, 200 MiB, 400.0 ms blocked"}};
  b.fix = "pin the batch: DataLoader(pin_memory=True), or tensor.pin_memory(), and copy with "
          ".to('cuda', non_blocking=True)";
  return {a, b};
}

TEST(FindingsReport, JsonReadsBackToTheSameDocumentAndText) {
  Summary s = testing_sample::sample_summary();
  s.findings = two_findings();
  const std::string json = format_json(s);
  EXPECT_NE(std::string::npos, json.find("\"gpu_idle_s\": null"));
  EXPECT_NE(std::string::npos, json.find("\"gpu_idle_s\": 0.75"));
  Summary back;
  std::string error;
  ASSERT_TRUE(summary_from_json(json, &back, &error)) << error;
  ASSERT_EQ(2u, back.findings.size());
  EXPECT_EQ(-1, back.findings[1].gpu_idle_s);
  EXPECT_EQ(s.findings[0].where, back.findings[0].where);
  EXPECT_EQ(s.findings[0].evidence, back.findings[0].evidence);
  EXPECT_EQ(json, format_json(back));
  EXPECT_EQ(format_text(s), format_text(back));
}

TEST(FindingsReport, OlderDocumentsWithoutFindingsReadAsNone) {
  Summary back;
  std::string error;
  ASSERT_TRUE(summary_from_json(R"({"schema_version": 1, "pid": 7, "wall_s": 2, "lost_share": 0, "categories": {},
                                   "threads": [], "calls": [], "copies": [], "call_sites": []})",
                                &back, &error))
      << error;
  EXPECT_TRUE(back.findings.empty());
}

TEST(FindingsReport, TextComesRightAfterTheHeadlineNumberedIn80Columns) {
  Summary s = testing_sample::sample_summary();
  s.findings = two_findings();
  const std::vector<std::string> lines = lines_of(format_text(s));
  size_t at = 0;
  while (at < lines.size() && lines[at].find("findings, most costly first:") == std::string::npos) ++at;
  ASSERT_LT(at, lines.size());
  // The headline and its context line come first (after GPU lines, none
  // here), each wrapped at 80 columns: their continuation lines are indented.
  size_t context = 0;
  while (context < lines.size() && lines[context].rfind("gpuslack: host ", 0) != 0) ++context;
  size_t after = context + 1;
  while (after < lines.size() && lines[after].rfind("gpuslack:   ", 0) == 0) ++after;
  EXPECT_EQ(0u, lines[0].rfind("gpuslack: 23.4% of 12.5 s lost", 0)) << lines[0];
  EXPECT_EQ(after, at);
  EXPECT_EQ("gpuslack: 1. cudaFree/cudaMalloc wait for the whole GPU in steady state", lines[at + 1]);
  EXPECT_EQ("gpuslack:    cost: 1.20 s (9.6% of wall), GPU idle 750.0 ms", lines[at + 2]);
  EXPECT_EQ("gpuslack:    where: train_step+0x1a (train) < main+0x10 (train)", lines[at + 5]);
  bool second = false;
  const size_t n = findings_lines(s.findings).size();
  for (size_t i = at; i < lines.size() && i < at + n; ++i) {
    EXPECT_LE(lines[i].size(), 80u) << lines[i];
    second = second || lines[i].rfind("gpuslack: 2. host-to-device copies", 0) == 0;
  }
  EXPECT_TRUE(second);
}

// Each site keeps its offset (three cudaFree lines in one function are
// three places to look); two that read the same shortened are shown once.
TEST(FindingsReport, SitesKeepTheirOffsetsAndAreShownOnceEach) {
  Finding f = two_findings()[0];
  f.where = {{"main+0x10 (/app/train)", "libc.so.6+0x2724a"},
             {"main+0x99 (/app/train)", "libc.so.6+0x2724a"},
             {"step(int)+0x1 (/app/train)", "main+0x5 (/app/train)"},
             {"step(long)+0x1 (/app/train)", "main+0x5 (/app/train)"},
             {"train.py:42 in step (python)", "at::native::copy_(at::Tensor&, bool)+0x30 (/usr/lib/libtorch_cpu.so)"}};
  int at_10 = 0, at_99 = 0, step = 0, python = 0;
  for (const std::string& l : findings_lines({f})) {
    at_10 += l == "   where: main+0x10 (train) < libc.so.6+0x2724a";
    at_99 += l == "   where: main+0x99 (train) < libc.so.6+0x2724a";
    step += l == "   where: step+0x1 (train) < main+0x5 (train)";
    python += l == "   where: train.py:42 in step (python) <" ||
              l == "     at::native::copy_+0x30 (libtorch_cpu.so)";
  }
  EXPECT_EQ(1, at_10);
  EXPECT_EQ(1, at_99);
  EXPECT_EQ(1, step);
  EXPECT_EQ(2, python);
}

TEST(FindingsReport, NoFindingNoLines) { EXPECT_TRUE(findings_lines({}).empty()); }

}  // namespace
}  // namespace report
}  // namespace gpuslack

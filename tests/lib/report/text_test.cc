// format_text on the sample summary: the first line, the prefix on every
// line, the sections, and what is left out.
#include "report/text.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "report/wrap.h"
#include "sample_summary.h"
#include "text_lines.h"

namespace gpuslack {
namespace report {
namespace {

using testing_text::lines_of;
using testing_text::contains_line;

using testing_sample::sample_summary;

TEST(FormatText, FirstLineSaysWhatShareWasLostAndToWhat) {
  std::string text = format_text(sample_summary());
  // One line, wrapped at 80 columns (wrap.h).
  EXPECT_EQ(0u, text.find("gpuslack: 23.4% of 12.5 s lost (pid 123, rank 0): allocation 2.1 s (16.8%),\n"
                          "gpuslack:   copies 0.825 s (6.6%), collectives 0 s; waiting for the GPU 3.2 s\n"
                          "gpuslack:   (not counted as lost)\n"))
      << text;
}

TEST(FormatText, RankIsLeftOutWhenUnknown) {
  Summary s = sample_summary();
  s.rank = -1;
  EXPECT_EQ(0u, format_text(s).find("gpuslack: 23.4% of 12.5 s lost (pid 123): "));
}

TEST(FormatText, ThreadsSeenCountExitedOnesListedOrSummed) {
  // Two listed (one exited) and three summed: five threads, four exited.
  EXPECT_EQ("gpuslack: host node01, local rank 0, 5 threads (4 exited), written at exit,",
            lines_of(format_text(sample_summary())).at(3));
  EXPECT_EQ("gpuslack:   gpuslack 0.1.0", lines_of(format_text(sample_summary())).at(4));
  Summary s = sample_summary();
  s.threads.resize(1);
  s.other_threads = {};
  EXPECT_EQ("gpuslack: host node01, local rank 0, 1 thread, written at exit, gpuslack 0.1.0", lines_of(format_text(s)).at(3));
}

TEST(FormatText, AnExitedWorstThreadSaysSo) {
  Summary s = sample_summary();
  s.worst_thread.exited = true;
  EXPECT_NE(std::string::npos, format_text(s).find("\" (exited) lost 2.8 s (22.4%\ngpuslack:   of wall)")) << format_text(s);
}

TEST(FormatText, EveryLineIsPrefixedAndEndsTheText) {
  std::string text = format_text(sample_summary());
  ASSERT_FALSE(text.empty());
  EXPECT_EQ('\n', text.back());
  for (const std::string& line : lines_of(text)) EXPECT_EQ(0u, line.find("gpuslack: ")) << line;
}

TEST(FormatText, ControlCharactersInNamesCannotBreakALine) {
  std::string text = format_text(sample_summary());
  // The worst thread's name holds a newline and \x01.
  EXPECT_NE(std::string::npos, text.find("worst thread: tid 4242 \"python3 \"main\"??\xef\xbf\xbd\" lost 2.8 s (22.4% of wall)"))
      << text;
  EXPECT_EQ(std::string::npos, text.find('\x01'));
  EXPECT_EQ(std::string::npos, text.find('\t'));
}

TEST(FormatText, OneTablePerCategoryWithCallsEmptyOnesOmitted) {
  std::string text = format_text(sample_summary());
  EXPECT_TRUE(contains_line(text, "gpuslack: allocation 2.1 s (16.8%):")) << text;
  EXPECT_TRUE(contains_line(text, "gpuslack: copies 0.825 s (6.6%):")) << text;
  EXPECT_TRUE(contains_line(text, "gpuslack: waiting for the GPU 3.2 s (25.6%), not counted as lost:")) << text;
  EXPECT_TRUE(contains_line(text, "gpuslack: other 0.1 s (0.8%), not counted as lost:")) << text;
  // No collective call was made: no collectives table, no collectives call sites.
  EXPECT_EQ(std::string::npos, text.find("gpuslack: collectives")) << text;
  EXPECT_EQ(std::string::npos, text.find("top call sites, collectives")) << text;
}

TEST(FormatText, CollectivesSayWhatTheModelExpectsAndFromWhere) {
  Summary s = sample_summary();
  s.collectives.present = true;
  CollectiveRow r;
  r.op = "all-reduce";
  r.datatype = "float32";
  r.bucket = 28;
  r.nranks = 8;
  r.count = r.timed = 10;
  r.expected_busbw_gbps = 40.1;
  r.expected_from = "between nodes: knob: fabric=ib400; 2 nodes x 4 ranks (NCCL)";
  r.best_algo = "Tree";
  r.best_proto = "Simple";
  r.best_time_s = 0.0041;
  r.chosen_time_s = 0.0118;
  s.collectives.rows = {r, r};
  s.collectives.rows[1].bucket = 27;
  const std::string text = format_text(s);
  EXPECT_NE(std::string::npos, text.find("expected: all-reduce float32 >=256.0 MiB: 40.10 GB/s busbw; best\n"))
      << text;
  EXPECT_NE(std::string::npos, text.find("Tree/Simple 4.1 ms a call against 11.8 ms by NCCL's choice")) << text;
  // The source once for both rows.
  const std::string from = "expected from: between nodes: knob: fabric=ib400";
  ASSERT_NE(std::string::npos, text.find(from)) << text;
  EXPECT_EQ(std::string::npos, text.find(from, text.find(from) + 1)) << text;
}

TEST(FormatText, PinnedHeapLine) {
  std::string text = format_text(sample_summary());
  EXPECT_NE(std::string::npos,
            text.find("gpuslack: pinned heap: 64.0 MiB pinned (peak 128.0 MiB, cap 16.0 GiB), peak\n"
                      "gpuslack:   100.0 MiB in live blocks, 1000 allocations, 990 frees without a\n"
                      "gpuslack:   device sync, cap hits 1, left to the runtime 4 (waited 2.0 ms at the\n"
                      "gpuslack:   cap)\n"))
      << text;
  Summary s = sample_summary();
  s.pinned.present = false;
  EXPECT_EQ(std::string::npos, format_text(s).find("pinned heap")) << format_text(s);
}

TEST(FormatText, CallTableColumnsAreAligned) {
  std::string text = format_text(sample_summary());
  EXPECT_TRUE(contains_line(text, "gpuslack:   call        count     total  share      p50      p99      max     bytes"))
      << text;
  EXPECT_TRUE(contains_line(text, "gpuslack:   cudaMalloc    120    1.60 s  12.8%  12.0 ms  40.0 ms  52.0 ms  12.0 GiB"))
      << text;
  EXPECT_TRUE(contains_line(text, "gpuslack:   cudaFree      118  500.0 ms   4.0%   3.0 ms  20.0 ms  30.0 ms         -"))
      << text;
}

TEST(FormatText, CopyTable) {
  std::string text = format_text(sample_summary());
  EXPECT_TRUE(contains_line(text, "gpuslack: copies by kind (a rate only for synchronous host copies):")) << text;
  EXPECT_TRUE(contains_line(text, "gpuslack:   kind    host      call   count    bytes  host time  GB/s (host time)"))
      << text;
  EXPECT_TRUE(contains_line(text, "gpuslack:   H2D     pageable  sync      30  2.0 GiB   600.0 ms              3.58"))
      << text;
  EXPECT_TRUE(contains_line(text, "gpuslack:   D2D     -         async    100  8.0 GiB    50.0 us                 -"))
      << text;
  EXPECT_TRUE(contains_line(text, "gpuslack:   memset  -         async      4  4.0 KiB          0                 -"))
      << text;
}

TEST(FormatText, TopCallSitesWithIndentedFrames) {
  std::string text = format_text(sample_summary());
  std::vector<std::string> lines = lines_of(text);
  size_t i = 0;
  while (i < lines.size() && lines[i] != "gpuslack: top call sites, allocation:") ++i;
  ASSERT_LT(i + 4, lines.size()) << text;
  EXPECT_EQ("gpuslack:   1.20 s in 90 calls to cudaMalloc", lines[i + 1]);
  EXPECT_EQ("gpuslack:       at at::native::empty_cuda+0x41 (libtorch_cuda.so)", lines[i + 2]);
  EXPECT_EQ("gpuslack:       at libtorch_cuda.so+0x1234", lines[i + 3]);
  EXPECT_EQ("gpuslack:   400.0 ms in 100 calls to cudaFree", lines[i + 4]);
  EXPECT_TRUE(contains_line(text, "gpuslack: top call sites, waiting for the GPU:")) << text;
}

TEST(FormatText, StagedCopiesAndTheBuffersToPin) {
  std::string text = format_text(sample_summary());
  EXPECT_NE(std::string::npos,
            text.find("gpuslack: pageable copies: H2D 30 copies (2.0 GiB): 28 staged, 2 passed through;\n"
                      "gpuslack:   D2H 2 copies (4.0 KiB): 0 staged, 2 passed through\n"))
      << text;
  EXPECT_TRUE(contains_line(text, "gpuslack:   staged copies blocked 40.0 ms (H2D 40.0 ms, D2H 0)")) << text;
  EXPECT_NE(std::string::npos,
            text.find("gpuslack:   passed through: below the threshold 2, D2H measured faster natively\n"
                      "gpuslack:     2\n"))
      << text;
  std::vector<std::string> lines = lines_of(text);
  size_t i = 0;
  while (i < lines.size() && lines[i].find("pin these buffers") == std::string::npos) ++i;
  ASSERT_LT(i + 3, lines.size()) << text;
  EXPECT_EQ("gpuslack:   2.0 GiB in ~30 copies (cudaMemcpyAsync)", lines[i + 1]);
  EXPECT_EQ("gpuslack:       at load_batch+0x2a (app)", lines[i + 2]);
}

TEST(FormatText, EmptySummaryIsJustTheHeadline) {
  Summary s;
  s.pid = 9;
  std::vector<std::string> lines = lines_of(format_text(s));
  ASSERT_EQ(3u, lines.size());
  EXPECT_EQ("gpuslack: 0.0% of 0 s lost (pid 9): allocation 0 s, copies 0 s, collectives 0 s;", lines[0]);
  EXPECT_EQ("gpuslack:   waiting for the GPU 0 s (not counted as lost)", lines[1]);
}

// summary_detail:short: the GPU lines, the headline and its context line,
// the first lines of the full text; nothing wider than 80 columns.
TEST(FormatText, ShortIsTheFirstLinesOfTheFullTextWithin80Columns) {
  for (const Summary& s : {sample_summary(), testing_sample::sample_summary_with_gpu_timeline()}) {
    const std::string short_text = format_text(s, TextDetail::kShort);
    const std::string full = format_text(s);
    EXPECT_EQ(0u, full.find(short_text));
    EXPECT_LT(short_text.size(), full.size() / 3);
    EXPECT_EQ(std::string::npos, short_text.find("copies by kind")) << short_text;
    EXPECT_EQ(std::string::npos, short_text.find("top call sites")) << short_text;
    EXPECT_NE(std::string::npos, short_text.find(" lost (pid 123")) << short_text;
    for (const std::string& l : lines_of(short_text)) {
      EXPECT_LE(text_columns(l), kTextWidth) << l;
      EXPECT_EQ(0u, l.find("gpuslack: ")) << l;
    }
  }
  const std::string with_gpu = format_text(testing_sample::sample_summary_with_gpu_timeline(), TextDetail::kShort);
  EXPECT_EQ(0u, with_gpu.find("gpuslack: device 0: GPU idle ")) << with_gpu;
}

// Prose wraps (wrap.h); table rows keep their columns, however wide.
TEST(FormatText, ProseWrapsAndTableRowsDoNot) {
  const std::string text = format_text(testing_sample::sample_summary_with_gpu_timeline());
  for (const std::string& l : lines_of(text)) {
    if (text_columns(l) <= kTextWidth) continue;
    // Only a table's row may be wider: its columns are two spaces apart.
    EXPECT_NE(std::string::npos, l.find("  ", 12)) << l;
  }
}

}  // namespace
}  // namespace report
}  // namespace gpuslack

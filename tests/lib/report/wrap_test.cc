// wrap_line: short lines untouched, long ones broken at spaces within 80
// columns with the prefix and an indent, nothing lost, long words kept.
#include "report/wrap.h"
#include "text_lines.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace gpuslack {
namespace report {
namespace {

using testing_text::lines_of;

// The text again: each continuation line's prefix and indent replaced by
// the one space the break took.
std::string unwrapped(const std::string& wrapped, const std::string& more) {
  std::string out;
  for (const std::string& l : lines_of(wrapped)) out += out.empty() ? l : " " + l.substr(more.size());
  return out;
}

TEST(WrapLine, AShortLineIsLeftAsItIs) {
  EXPECT_EQ("gpuslack: host vm, 1 thread\n", wrap_line("gpuslack: ", "host vm, 1 thread"));
  const std::string exactly(70, 'x');  // 10 + 70 = 80 columns
  EXPECT_EQ("gpuslack: " + exactly + "\n", wrap_line("gpuslack: ", exactly));
}

TEST(WrapLine, TheHeadlineWrapsWithThePrefixAndAnIndent) {
  const std::string headline =
      "72.6% of 1.91 s lost (pid 31320): allocation 1.34 s (70.0%), copies 0.0128 s (0.7%), collectives "
      "0.0378 s (2.0%); waiting for the GPU 0.492 s (not counted as lost)";
  const std::string text = wrap_line("gpuslack: ", headline);
  EXPECT_EQ(
      "gpuslack: 72.6% of 1.91 s lost (pid 31320): allocation 1.34 s (70.0%), copies\n"
      "gpuslack:   0.0128 s (0.7%), collectives 0.0378 s (2.0%); waiting for the GPU\n"
      "gpuslack:   0.492 s (not counted as lost)\n",
      text);
  for (const std::string& l : lines_of(text)) EXPECT_LE(text_columns(l), kTextWidth) << l;
  EXPECT_EQ("gpuslack: " + headline, unwrapped(text, "gpuslack:   "));
}

TEST(WrapLine, AnIndentedLineKeepsItsIndentPlusTwo) {
  const std::string text = wrap_line("gpuslack: ", "  staged copies blocked 1.2 ms (H2D 1.2 ms, D2H 0); natively "
                                                   "~458.7 us (estimate: H2D ~458.7 us, D2H ~0)");
  std::vector<std::string> lines = lines_of(text);
  ASSERT_EQ(2u, lines.size()) << text;
  EXPECT_EQ(0u, lines[0].find("gpuslack:   staged copies"));
  EXPECT_EQ(0u, lines[1].find("gpuslack:     ")) << lines[1];
  EXPECT_NE(' ', lines[1].at(14)) << lines[1];
}

TEST(WrapLine, AWordLongerThanALineIsNotCut) {
  const std::string symbol(100, 's');
  const std::string text = wrap_line("gpuslack: ", "    at " + symbol + " (libtorch_cuda.so)");
  EXPECT_EQ("gpuslack:     at " + symbol + "\ngpuslack:       (libtorch_cuda.so)\n", text);
}

TEST(WrapLine, ColumnsAreCodePoints) {
  EXPECT_EQ(3u, text_columns("86\xc2\xb0"));  // 86°: four bytes, three columns
  const std::string line = std::string(67, 'x') + " 86 \xc2\xb0" "C";  // 10 + 67 + 6 = 83 columns
  EXPECT_EQ(2u, lines_of(wrap_line("gpuslack: ", line)).size());
  const std::string fits = std::string(64, 'x') + " 86 \xc2\xb0" "C";  // 80 columns, 81 bytes
  EXPECT_EQ(1u, lines_of(wrap_line("gpuslack: ", fits)).size());
}

TEST(WrapLine, AFigureStaysWithItsUnit) {
  const std::string text = wrap_line("gpuslack: ", "  staged copies blocked 40.0 ms (H2D 40.0 ms, D2H 0); natively "
                                                   "~600.0 ms (estimate: H2D ~600.0 ms, D2H ~0)");
  EXPECT_EQ(
      "gpuslack:   staged copies blocked 40.0 ms (H2D 40.0 ms, D2H 0); natively\n"
      "gpuslack:     ~600.0 ms (estimate: H2D ~600.0 ms, D2H ~0)\n",
      text);
}

TEST(WrapLine, NoLineEndsInASpace) {
  const std::string text = wrap_line("gpuslack: ", std::string(60, 'a') + "  " + std::string(30, 'b') + " c");
  for (const std::string& l : lines_of(text)) EXPECT_NE(' ', l.back()) << text;
}

}  // namespace
}  // namespace report
}  // namespace gpuslack

// See Note [Escaped input]: what escape_bytes keeps and what it writes as an
// escape.
#include "log/escape.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuslack {
namespace log {
namespace {

TEST(EscapeBytes, PrintableAsciiIsKept) {
  std::string all;
  for (int c = 0x20; c < 0x7f; ++c) all += static_cast<char>(c);
  EXPECT_EQ(all, escape_bytes(all));
  EXPECT_EQ("", escape_bytes(""));
}

TEST(EscapeBytes, ControlDelAndHighBytesAreEscaped) {
  EXPECT_EQ("a\\nb\\rc\\td", escape_bytes("a\nb\rc\td"));
  EXPECT_EQ("\\x1b[31mred\\x00\\x7f", escape_bytes(std::string("\x1b[31mred\0\x7f", 10)));
  EXPECT_EQ("caf\\xc3\\xa9 \\x9b", escape_bytes("caf\xc3\xa9 \x9b"));
}

TEST(EscapeBytes, IsIdempotent) {
  std::string every;
  for (int c = 0; c < 256; ++c) every += static_cast<char>(c);
  std::string once = escape_bytes(every);
  EXPECT_EQ(once, escape_bytes(once));
  for (char c : once) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << static_cast<int>(c);
}

}  // namespace
}  // namespace log
}  // namespace gpuslack

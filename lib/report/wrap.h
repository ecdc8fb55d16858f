// Wrapping a line of the text summary to 80 columns (text.h): what keeps
// the headline and other long sentences readable in a terminal.
//
// wrap_line(prefix, text) returns `prefix` + `text` + '\n' when that fits
// in `width` columns; otherwise it breaks `text` at spaces into lines that
// each start with `prefix`, the continuation lines indented by the text's
// own leading spaces plus two more:
//   gpuslack: 72.6% of 1.91 s lost (pid 31320): allocation 1.34 s (70.0%),
//   gpuslack:   copies 0.0128 s (0.7%), collectives 0.0378 s (2.0%); ...
// A word longer than a line (a path, a C++ symbol without spaces) is never
// cut: its line stays long. Breaking removes the one space at the break and
// nothing else, so joining the continuation lines back with single spaces
// gives the text again. Columns are counted in code points of valid UTF-8
// (text.cc prints no other): a double-width character counts as one.
//
// Tables (text_parts.h's Table) are not wrapped: their rows keep their columns,
// wider than 80 where a table has many (the collectives table).
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <string>

namespace gpuslack {
namespace report {

constexpr size_t kTextWidth = 80;

// Columns `s` takes: its code points.
size_t text_columns(const std::string& s);

std::string wrap_line(const std::string& prefix, const std::string& text, size_t width = kTextWidth);

}  // namespace report
}  // namespace gpuslack

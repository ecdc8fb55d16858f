// Reading the text summary in tests: its lines, whether one is there, and
// the text as prose the wrap pass (lib/report/wrap.h) broke at 80 columns.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace gpuslack {
namespace report {
namespace testing_text {

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

inline bool contains_line(const std::string& text, const std::string& line) {
  for (const std::string& l : lines_of(text))
    if (l == line) return true;
  return false;
}

// The text with each line break and the prefix and indent after it made one
// space: prose the wrap pass broke reads as one line again, and a phrase is
// found wherever the break fell.
inline std::string unwrapped(const std::string& text) {
  std::string out;
  for (const std::string& l : lines_of(text)) {
    size_t from = 0;
    if (!out.empty()) {
      from = std::string("gpuslack:").size();
      while (from < l.size() && l[from] == ' ') ++from;
      out += ' ';
    }
    out += l.substr(from);
  }
  return out;
}

}  // namespace testing_text
}  // namespace report
}  // namespace gpuslack

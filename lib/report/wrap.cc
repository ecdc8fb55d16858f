// See wrap.h.
#include "report/wrap.h"

#include <vector>

namespace gpuslack {
namespace report {

size_t text_columns(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80 ? 1 : 0;  // continuation bytes take no column
  return n;
}

namespace {

// A line may break before words[i] unless that would part a figure from its
// unit ("3.2 s", "~600.0 ms", "1000 allocations": the word before ends in a
// digit) or fall next to a space kept inside the text (an empty word).
bool may_break_before(const std::vector<std::string>& words, size_t i) {
  const std::string& before = words[i - 1];
  return !words[i].empty() && !before.empty() && !(before.back() >= '0' && before.back() <= '9');
}

}  // namespace

std::string wrap_line(const std::string& prefix, const std::string& text, size_t width) {
  if (text_columns(prefix) + text_columns(text) <= width) return prefix + text + '\n';
  const size_t first = text.find_first_not_of(' ');
  const size_t indent = first == std::string::npos ? 0 : first;
  const std::string more = prefix + std::string(indent + 2, ' ');
  // The words after the indent, split at single spaces (an empty word
  // stands for each extra space of a run, which is kept).
  std::vector<std::string> words;
  for (size_t at = indent;;) {
    size_t space = text.find(' ', at);
    words.push_back(text.substr(at, space == std::string::npos ? std::string::npos : space - at));
    if (space == std::string::npos) break;
    at = space + 1;
  }
  // Greedy, one line at a time: [begin, end) of words, moved back to the
  // last place a break is allowed when the next word does not fit.
  std::string out;
  std::string lead = prefix + text.substr(0, indent);
  size_t begin = 0;
  while (begin < words.size()) {
    size_t columns = text_columns(lead) + text_columns(words[begin]);
    size_t end = begin + 1;
    // A word too long for any line stays on the line it reaches.
    auto fits = [&](size_t i) {
      const size_t w = text_columns(words[i]);
      return columns + 1 + w <= width || text_columns(more) + w > width;
    };
    while (end < words.size() && fits(end)) {
      columns += 1 + text_columns(words[end]);
      ++end;
    }
    if (end < words.size()) {
      size_t cut = end;
      while (cut > begin + 1 && !may_break_before(words, cut)) --cut;
      if (cut > begin + 1 || may_break_before(words, cut)) {
        end = cut;
      } else {
        // No allowed break inside the width: the first allowed one after it
        // (the line stays long), or the end.
        while (end < words.size() && !may_break_before(words, end)) ++end;
      }
    }
    std::string line = lead + words[begin];
    for (size_t i = begin + 1; i < end; ++i) line += ' ' + words[i];
    out += line + '\n';
    begin = end;
    lead = more;
  }
  return out;
}

}  // namespace report
}  // namespace gpuslack

// See text_parts.h.
#include "report/text_parts.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>

#include "report/units.h"
#include "report/utf8.h"
#include "report/wrap.h"

namespace gpuslack {
namespace report {

std::string printf_string(const char* format, ...) {
  char buf[128];
  va_list args;
  va_start(args, format);
  int n = std::vsnprintf(buf, sizeof(buf), format, args);
  va_end(args);
  if (n < 0) return std::string();
  return std::string(buf, std::min(static_cast<size_t>(n), sizeof(buf) - 1));
}

std::string printable(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t len = utf8_sequence_length(s, i);
    if (c < 0x20 || c == 0x7f) {
      out += '?';
    } else if (len == 0) {
      out += "\xef\xbf\xbd";
    } else {
      out.append(s, i, len);
    }
    i += len != 0 ? len : 1;
  }
  return out;
}

std::string headline_seconds(double s) {
  if (s > 0 && s < 0.01) return seconds_text(s);
  return printf_string(s >= 1000 ? "%.0f s" : "%.3g s", s);
}

std::string bytes_cell(uint64_t bytes) { return bytes == 0 ? "-" : bytes_text(static_cast<double>(bytes)); }

std::string count_text(uint64_t n) { return printf_string("%" PRIu64, n); }

std::string grouped(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string thread_seconds(double s) {
  std::string t = headline_seconds(s);
  if (t.size() > 2 && t.compare(t.size() - 2, 2, " s") == 0) return t.substr(0, t.size() - 2) + " thread-s";
  return t + " of thread time";
}

void line(std::string* out, const std::string& text) { *out += wrap_line(kTextPrefix, text); }

void Table::render(const char* indent, std::string* out) const {
  std::vector<size_t> width;
  for (const auto& row : rows_) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : rows_) {
    std::string line = std::string(kTextPrefix) + indent;
    for (size_t i = 0; i < row.size(); ++i) {
      std::string pad(width[i] - row[i].size(), ' ');
      if (i > 0) line += "  ";
      line += i < left_columns_ ? row[i] + (i + 1 < row.size() ? pad : "") : pad + row[i];
    }
    *out += line + '\n';
  }
}

}  // namespace report
}  // namespace gpuslack

// The JSON writer of the summary (json.cc) and its sections' writers
// (findings_json.h, pinned_json.h, ...): a small pretty-printing Writer,
// the string escaper and the fixed-digit number format. Internal to
// lib/report.
//
// Strings are escaped for JSON and made valid UTF-8 (bytes that are not
// become U+FFFD, as the text summary does: utf8.h). Numbers are written
// with a fixed number of significant digits, not shortest-roundtrip.
//
// Thread safety: a Writer is one document being written, by one thread.
#pragma once

#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "report/utf8.h"

namespace gpuslack {
namespace report {
namespace json_detail {

inline void append_escaped(const std::string& s, std::string* out) {
  static const char kHex[] = "0123456789abcdef";
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': *out += "\\\""; break;
        case '\\': *out += "\\\\"; break;
        case '\b': *out += "\\b"; break;
        case '\f': *out += "\\f"; break;
        case '\n': *out += "\\n"; break;
        case '\r': *out += "\\r"; break;
        case '\t': *out += "\\t"; break;
        default:
          if (c < 0x20 || c == 0x7f) {
            *out += "\\u00";
            *out += kHex[c >> 4];
            *out += kHex[c & 0xf];
          } else {
            *out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    // A UTF-8 sequence: well-formed (utf8.h) goes through as is; each byte
    // that does not start one becomes U+FFFD.
    const size_t len = utf8_sequence_length(s, i);
    const bool ok = len != 0;
    if (ok && s.compare(i, len, "\xef\xbf\xbd") == 0) {
      // U+FFFD itself is written as the escape that stands for bytes that
      // are not UTF-8, so that a document read back writes the same bytes.
      *out += "\\ufffd";
      i += len;
    } else if (ok) {
      out->append(s, i, len);
      i += len;
    } else {
      *out += "\\ufffd";
      ++i;
    }
  }
}

// Shortest-roundtrip is not wanted: a fixed number of significant digits,
// as printf's %.<digits>g would write it in the "C" locale.
inline std::string number(double v, int digits) {
  if (!std::isfinite(v) || v == 0) return "0";
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::general, digits);
  if (result.ec != std::errc()) return "0";
  return std::string(buf, result.ptr);
}

// Pretty-prints JSON: two-space indent; an "inline" object or array stays
// on one line.
class Writer {
 public:
  void begin_object(bool on_one_line = false) { begin('{', on_one_line); }
  void end_object() { end('}'); }
  void begin_array(bool on_one_line = false) { begin('[', on_one_line); }
  void end_array() { end(']'); }

  Writer& key(const char* name) {
    separate();
    out_ += '"';
    append_escaped(name, &out_);  // env names come from the environment
    out_ += "\": ";
    after_key_ = true;
    return *this;
  }
  void string(const std::string& s) {
    separate();
    *this << json_string(s);
  }
  // Durations and shares are never negative: a negative figure is written as 0.
  void seconds(double v) { raw(number(v > 0 ? v : 0, 9)); }
  void share(double v) { raw(number(v > 0 ? v : 0, 6)); }
  void integer(int64_t v) { raw(std::to_string(v)); }
  void unsigned_integer(uint64_t v) { raw(std::to_string(v)); }
  void null() { raw("null"); }
  void boolean(bool v) { raw(v ? "true" : "false"); }

  std::string take() { return std::move(out_) + "\n"; }

 private:
  struct Level {
    bool first = true;
    bool on_one_line = false;
  };

  Writer& operator<<(const std::string& s) {
    out_ += s;
    return *this;
  }
  Writer& operator<<(const char* s) {
    out_ += s;
    return *this;
  }
  Writer& operator<<(char c) {
    out_ += c;
    return *this;
  }

  bool on_one_line() const {
    for (const Level& l : levels_)
      if (l.on_one_line) return true;
    return false;
  }
  void newline() {
    if (on_one_line()) return;
    out_ += '\n';
    out_.append(2 * levels_.size(), ' ');
  }
  // Before a value or a key: the comma and line break that go before it.
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (levels_.empty()) return;
    if (!levels_.back().first) out_ += on_one_line() ? ", " : ",";
    levels_.back().first = false;
    newline();
  }
  void raw(const std::string& token) {
    separate();
    out_ += token;
  }
  void begin(char bracket, bool one_line) {
    separate();
    out_ += bracket;
    levels_.push_back(Level{true, one_line});
  }
  void end(char bracket) {
    bool empty = levels_.back().first;
    bool one_line = on_one_line();
    levels_.pop_back();
    if (!empty && !one_line) newline();
    out_ += bracket;
  }

  std::string out_;
  std::vector<Level> levels_;
  bool after_key_ = false;
};

}  // namespace json_detail
}  // namespace report
}  // namespace gpuslack

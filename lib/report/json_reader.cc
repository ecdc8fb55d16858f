// See json_reader.h. A recursive-descent parser over the bytes, depth
// bounded by kMaxJsonDepth; the first error stops it.
#include "report/json_reader.h"

#include <locale.h>
#include <stdlib.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "report/utf8.h"

namespace gpuslack {
namespace report {

const JsonValue* JsonValue::find(std::string_view key) const {
  if (kind_ != Kind::kObject) return nullptr;
  for (size_t i = keys_.size(); i-- > 0;)
    if (keys_[i] == key) return &items_[i];
  return nullptr;
}

namespace {

bool is_integer_text(const std::string& t) { return t.find_first_of(".eE") == std::string::npos; }

}  // namespace

// strtod_l in the "C" locale, not std::from_chars: libstdc++'s floating
// from_chars brings <memory_resource>'s static constructor into the library
// (the seal test, tests/interpose/check_seal.sh, refuses one), and plain
// strtod reads "12.5" as 12 where the process set a locale with a decimal
// comma.
bool JsonValue::to_double(double* out) const {
  if (kind_ != Kind::kNumber) return false;
  static const locale_t c_locale = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(0));
  if (c_locale == static_cast<locale_t>(0)) return false;
  char* end = nullptr;
  const int saved_errno = errno;
  double v = strtod_l(text_.c_str(), &end, c_locale);
  errno = saved_errno;
  if (end != text_.c_str() + text_.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool JsonValue::to_int64(int64_t* out) const {
  if (kind_ != Kind::kNumber || !is_integer_text(text_)) return false;
  int64_t v = 0;
  auto r = std::from_chars(text_.data(), text_.data() + text_.size(), v);
  if (r.ec != std::errc() || r.ptr != text_.data() + text_.size()) return false;
  *out = v;
  return true;
}

bool JsonValue::to_uint64(uint64_t* out) const {
  if (kind_ != Kind::kNumber || !is_integer_text(text_) || text_[0] == '-') return false;
  uint64_t v = 0;
  auto r = std::from_chars(text_.data(), text_.data() + text_.size(), v);
  if (r.ec != std::errc() || r.ptr != text_.data() + text_.size()) return false;
  *out = v;
  return true;
}

class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : s_(text) {}

  bool parse(JsonValue* out, std::string* error) {
    skip_space();
    bool ok = value(out, 0);
    if (ok) {
      skip_space();
      if (i_ != s_.size()) ok = fail("unexpected text after the document");
    }
    if (!ok) *error = where() + ": " + why_;
    return ok;
  }

 private:
  bool fail(std::string why) {
    why_ = std::move(why);
    return false;
  }

  // "line 3, column 7" of the byte where parsing stopped.
  std::string where() const {
    size_t line = 1, column = 1;
    for (size_t k = 0; k < i_ && k < s_.size(); ++k) {
      if (s_[k] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
  }

  // "'x'", or "byte 0xff" for what cannot be shown, or "the end".
  std::string found() const {
    if (i_ >= s_.size()) return "the end of the text";
    unsigned char c = static_cast<unsigned char>(s_[i_]);
    if (c >= 0x20 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
    char buf[16];
    std::snprintf(buf, sizeof(buf), "byte 0x%02x", c);
    return buf;
  }

  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }

  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return fail("expected a JSON value, found " + found());
    i_ += word.size();
    return true;
  }

  bool value(JsonValue* out, int depth) {
    if (i_ >= s_.size()) return fail("expected a JSON value, found the end of the text");
    switch (s_[i_]) {
      case '{': return object(out, depth + 1);
      case '[': return array(out, depth + 1);
      case '"':
        out->kind_ = JsonValue::Kind::kString;
        return string(&out->text_);
      case 't':
        out->kind_ = JsonValue::Kind::kBool;
        out->boolean_ = true;
        return literal("true");
      case 'f':
        out->kind_ = JsonValue::Kind::kBool;
        return literal("false");
      case 'n':
        out->kind_ = JsonValue::Kind::kNull;
        return literal("null");
      default:
        out->kind_ = JsonValue::Kind::kNumber;
        return number(&out->text_);
    }
  }

  bool object(JsonValue* out, int depth) {
    if (depth > kMaxJsonDepth) return fail("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    out->kind_ = JsonValue::Kind::kObject;
    ++i_;  // '{'
    skip_space();
    if (i_ < s_.size() && s_[i_] == '}') {
      ++i_;
      return true;
    }
    for (;;) {
      skip_space();
      if (i_ >= s_.size() || s_[i_] != '"') return fail("expected a member name in quotes, found " + found());
      out->keys_.emplace_back();
      if (!string(&out->keys_.back())) return false;
      skip_space();
      if (i_ >= s_.size() || s_[i_] != ':') return fail("expected ':', found " + found());
      ++i_;
      skip_space();
      out->items_.emplace_back();
      if (!value(&out->items_.back(), depth)) return false;
      bool closed = false;
      if (!after_item('}', &closed)) return false;
      if (closed) return true;
    }
  }

  // After a member or element: a ',' (another follows) or `close` (the
  // object or array ends: *closed); anything else is an error.
  bool after_item(char close, bool* closed) {
    skip_space();
    if (i_ < s_.size() && (s_[i_] == ',' || s_[i_] == close)) {
      *closed = s_[i_++] == close;
      return true;
    }
    return fail(std::string("expected ',' or '") + close + "', found " + found());
  }

  bool array(JsonValue* out, int depth) {
    if (depth > kMaxJsonDepth) return fail("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    out->kind_ = JsonValue::Kind::kArray;
    ++i_;  // '['
    skip_space();
    if (i_ < s_.size() && s_[i_] == ']') {
      ++i_;
      return true;
    }
    for (;;) {
      skip_space();
      out->items_.emplace_back();
      if (!value(&out->items_.back(), depth)) return false;
      bool closed = false;
      if (!after_item(']', &closed)) return false;
      if (closed) return true;
    }
  }

  size_t digits() {
    size_t start = i_;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    return i_ - start;
  }

  // -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, kept as text.
  bool number(std::string* out) {
    size_t start = i_;
    if (s_[i_] == '-') ++i_;
    if (i_ >= s_.size() || s_[i_] < '0' || s_[i_] > '9') {
      i_ = start;
      return fail("expected a JSON value, found " + found());
    }
    if (s_[i_] == '0') {
      ++i_;
    } else {
      digits();
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (digits() == 0) return fail("expected a digit after '.', found " + found());
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (digits() == 0) return fail("expected a digit in the exponent, found " + found());
    }
    out->assign(s_.data() + start, i_ - start);
    return true;
  }

  static void append_utf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      *out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      *out += static_cast<char>(0xC0 | (cp >> 6));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      *out += static_cast<char>(0xE0 | (cp >> 12));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      *out += static_cast<char>(0xF0 | (cp >> 18));
      *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // Four hex digits at i_; advances past them.
  bool hex4(uint32_t* out) {
    if (s_.size() - i_ < 4) {
      i_ = s_.size();
      return fail("expected four hex digits after \\u, found the end of the text");
    }
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k, ++i_) {
      char c = s_[i_];
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) return fail("expected four hex digits after \\u, found " + found());
      v = v * 16 + static_cast<uint32_t>(d);
    }
    *out = v;
    return true;
  }

  bool escape(std::string* out) {
    ++i_;  // '\\'
    if (i_ >= s_.size()) return fail("unterminated string");
    char c = s_[i_];
    switch (c) {
      case '"': case '\\': case '/': *out += c; ++i_; return true;
      case 'b': *out += '\b'; ++i_; return true;
      case 'f': *out += '\f'; ++i_; return true;
      case 'n': *out += '\n'; ++i_; return true;
      case 'r': *out += '\r'; ++i_; return true;
      case 't': *out += '\t'; ++i_; return true;
      case 'u': break;
      default: return fail("unknown escape \\" + found());
    }
    ++i_;
    uint32_t cp = 0;
    if (!hex4(&cp)) return false;
    if (cp >= 0xD800 && cp <= 0xDBFF && s_.substr(i_, 2) == "\\u") {
      size_t saved = i_;
      i_ += 2;
      uint32_t low = 0;
      if (!hex4(&low)) return false;
      if (low >= 0xDC00 && low <= 0xDFFF) {
        append_utf8(0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00), out);
        return true;
      }
      i_ = saved;  // not a pair: the second escape stands alone
    }
    append_utf8(cp >= 0xD800 && cp <= 0xDFFF ? 0xFFFD : cp, out);
    return true;
  }

  // A well-formed UTF-8 sequence of 2 to 4 bytes at i_ (utf8.h).
  bool utf8(std::string* out) {
    const size_t len = utf8_sequence_length(s_, i_);
    if (len == 0) return fail("invalid UTF-8 in a string, at " + found());
    out->append(s_.data() + i_, len);
    i_ += len;
    return true;
  }

  bool string(std::string* out) {
    ++i_;  // '"'
    for (;;) {
      if (i_ >= s_.size()) return fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c == '\\') {
        if (!escape(out)) return false;
      } else if (c < 0x20) {
        return fail("a control character in a string, " + found());
      } else if (c >= 0x80) {
        if (!utf8(out)) return false;
      } else {
        *out += static_cast<char>(c);
        ++i_;
      }
    }
  }

  std::string_view s_;
  size_t i_ = 0;
  std::string why_;
};

bool parse_json(std::string_view text, JsonValue* out, std::string* error) {
  *out = JsonValue();
  JsonParser parser(text);
  return parser.parse(out, error);
}

}  // namespace report
}  // namespace gpuslack

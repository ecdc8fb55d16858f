// A JSON parser (RFC 8259) for reading documents back: the summary files
// json.h writes, read by summary_reader.h. Small and strict rather than fast.
//
// What it accepts: exactly one JSON value, surrounded by optional
// whitespace. Strings must be valid UTF-8 with no raw control characters;
// escapes are decoded (\uXXXX surrogate pairs joined, a lone surrogate
// becomes U+FFFD). Numbers keep their text, so that an integer of any size
// is read exactly by the caller (JsonValue::to_uint64 ...) and one out of
// range is told, not rounded. Objects keep their members in document
// order, duplicates included (find() gives the last, as Python's json
// does).
//
// What it refuses, with a one-line reason that names line and column:
// anything else, including nesting deeper than kMaxJsonDepth (so no input
// can exhaust the stack), NaN/Infinity, trailing commas, comments and
// trailing garbage. It never crashes on any input; memory is proportional
// to the input.
//
// Thread safety: pure functions; a JsonValue is a plain value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpuslack {
namespace report {

inline constexpr int kMaxJsonDepth = 64;

class JsonValue {
 public:
  enum class Kind : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_object() const { return kind_ == Kind::kObject; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_number() const { return kind_ == Kind::kNumber; }
  bool is_bool() const { return kind_ == Kind::kBool; }

  bool boolean() const { return boolean_; }
  // A string's decoded contents, or a number's text as written.
  const std::string& text() const { return text_; }

  // An array's items, or an object's member values (keys() beside them).
  const std::vector<JsonValue>& items() const { return items_; }
  const std::vector<std::string>& keys() const { return keys_; }
  // The object member named `key` (the last, if repeated); null if none or
  // not an object.
  const JsonValue* find(std::string_view key) const;

  // A number as the type asked for: false when it is not a number, not an
  // integer (for the integer forms), or out of the type's range. to_double
  // refuses what would overflow to infinity.
  bool to_double(double* out) const;
  bool to_int64(int64_t* out) const;
  bool to_uint64(uint64_t* out) const;

 private:
  friend class JsonParser;
  Kind kind_ = Kind::kNull;
  bool boolean_ = false;
  std::string text_;
  std::vector<JsonValue> items_;
  std::vector<std::string> keys_;
};

// Parses `text` into `*out`. On failure returns false and sets `*error` to
// one line, e.g. "line 3, column 7: expected ',' or '}'".
bool parse_json(std::string_view text, JsonValue* out, std::string* error);

}  // namespace report
}  // namespace gpuslack

// Typed reading of a parsed JSON document (json_reader.h), for the readers
// of gpuslack's own documents (summary_reader.cc): each member read as the
// type the writer wrote, a missing member as its default (an older writer),
// and a member of another type thrown as Malformed, naming where it is
// ("calls[3].count: expected an integer in [0, 2^64)"). The reader catches
// Malformed at its boundary and turns it into its one-line error; nothing
// else throws it.
//
// Internal to lib/report; no number is clamped or rounded to fit.
// Thread safety: a Fields reads a JsonValue it does not own, nothing else.
#pragma once

#include <climits>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "report/json_reader.h"

namespace gpuslack {
namespace report {
namespace detail {

// A member of the wrong type: what and where ("calls[3].count: expected ...").
struct Malformed {
  std::string what;
};

// A JSON object being read, and where it is in the document ("calls[3]").
class Fields {
 public:
  Fields(const JsonValue& v, std::string where) : v_(v), where_(std::move(where)) {
    if (!v_.is_object()) throw Malformed{where_ + ": expected an object"};
  }

  // The member, or null when missing.
  const JsonValue* get(const char* key) const { return v_.find(key); }
  std::string where(const char* key) const { return where_.empty() ? key : where_ + "." + key; }

  [[noreturn]] void bad(const char* key, const char* expected) const {
    throw Malformed{where(key) + ": expected " + expected};
  }

  double number(const char* key) const {
    double v = 0;
    const JsonValue* m = get(key);
    if (m && !m->to_double(&v)) bad(key, "a finite number");
    return v;
  }
  uint64_t count(const char* key) const {
    uint64_t v = 0;
    const JsonValue* m = get(key);
    if (m && !m->to_uint64(&v)) bad(key, "an integer in [0, 2^64)");
    return v;
  }
  int64_t integer(const char* key) const {
    int64_t v = 0;
    const JsonValue* m = get(key);
    if (m && !m->to_int64(&v)) bad(key, "an integer in [-2^63, 2^63)");
    return v;
  }
  // A 64-bit counter json.cc writes as a signed integer: read as written.
  uint64_t signed_count(const char* key) const { return static_cast<uint64_t>(integer(key)); }
  int whole(const char* key, int fallback = 0) const {
    if (!get(key)) return fallback;
    int64_t v = integer(key);
    if (v < INT_MIN || v > INT_MAX) bad(key, "an integer that fits an int");
    return static_cast<int>(v);
  }
  // Seconds json.cc wrote from whole nanoseconds.
  uint64_t nanoseconds(const char* key) const {
    double ns = std::round(number(key) * 1e9);
    if (ns < 0 || ns >= 18446744073709551616.0) bad(key, "seconds in [0, 2^64 ns)");
    return static_cast<uint64_t>(ns);
  }
  bool flag(const char* key) const {
    const JsonValue* m = get(key);
    if (m && !m->is_bool()) bad(key, "true or false");
    return m && m->boolean();
  }
  std::string text(const char* key) const {
    const JsonValue* m = get(key);
    if (m && !m->is_string()) bad(key, "a string");
    return m ? m->text() : std::string();
  }
  // Calls fn(item, "key[i]") for each item of an array member.
  template <typename Fn>
  void each(const char* key, Fn fn) const {
    const JsonValue* m = get(key);
    if (!m) return;
    if (!m->is_array()) bad(key, "an array");
    for (size_t i = 0; i < m->items().size(); ++i) fn(m->items()[i], where(key) + "[" + std::to_string(i) + "]");
  }
  std::vector<std::string> strings(const char* key) const {
    std::vector<std::string> out;
    each(key, [&](const JsonValue& item, const std::string& at) {
      if (!item.is_string()) throw Malformed{at + ": expected a string"};
      out.push_back(item.text());
    });
    return out;
  }
  // The member as an object; false when missing or null.
  bool object(const char* key, const JsonValue** out) const {
    const JsonValue* m = get(key);
    if (!m || m->is_null()) return false;
    if (!m->is_object()) bad(key, "an object or null");
    *out = m;
    return true;
  }

 private:
  const JsonValue& v_;
  std::string where_;
};

}  // namespace detail
}  // namespace report
}  // namespace gpuslack

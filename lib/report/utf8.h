// UTF-8 well-formedness, the one rule the writers and the reader share:
// json.cc writes each byte that does not start a well-formed sequence as
// \ufffd, text.cc prints it as U+FFFD, json_reader.cc refuses it.
//
// Well-formed (RFC 3629): no overlong forms, no surrogates, nothing past
// U+10FFFF. Thread safety: a pure function.
#pragma once

#include <cstddef>
#include <string_view>

namespace gpuslack {
namespace report {

// The length (1 to 4) of the well-formed UTF-8 sequence starting at s[i],
// or 0 when the bytes there do not start one. i < s.size().
inline size_t utf8_sequence_length(std::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  }
  if (len == 0 || i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const unsigned char b = static_cast<unsigned char>(s[i + k]);
    if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return 0;
  }
  return len;
}

}  // namespace report
}  // namespace gpuslack

// A section's JSON writer and reader on their own (the _json.h beside each
// section: report/sections.h): the document a writer makes, parsed, and
// the round trip write -> read -> write. Shared by sections_json_test.cc,
// device_health_json_test.cc and series_json_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "report/json.h"
#include "report/json_fields.h"
#include "report/json_reader.h"
#include "report/json_writer.h"

namespace gpuslack {
namespace report {
namespace testing_round_trip {

// The document `write` makes: one object around what `write` writes.
inline std::string document(const std::function<void(json_detail::Writer*)>& write) {
  json_detail::Writer w;
  w.begin_object();
  write(&w);
  w.end_object();
  return w.take();
}

inline JsonValue parsed(const std::string& json) {
  JsonValue doc;
  std::string error;
  EXPECT_TRUE(parse_json(json, &doc, &error)) << error << "\n" << json;
  return doc;
}

// Reads `json` with `read` (given the document's top level) and writes the
// result with `write`: the same document.
template <typename Section>
void expect_round_trip(const std::string& json, const std::function<Section(const detail::Fields&)>& read,
                       const std::function<void(const Section&, json_detail::Writer*)>& write) {
  const JsonValue doc = parsed(json);
  Section back;
  try {
    back = read(detail::Fields(doc, ""));
  } catch (const detail::Malformed& m) {
    FAIL() << m.what;
  }
  EXPECT_EQ(json, document([&](json_detail::Writer* w) { write(back, w); }));
}

}  // namespace testing_round_trip
}  // namespace report
}  // namespace gpuslack

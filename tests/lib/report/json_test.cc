// format_json: string escaping, number formatting, and the document's
// shape. That the document matches docs/summary.schema.json is checked by
// the ctest report.json_validates_against_schema (write_sample_summary +
// validate_summary.py).
#include "report/json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "sample_summary.h"

namespace gpuslack {
namespace report {
namespace {

using testing_sample::sample_summary;

bool has(const std::string& json, const std::string& part) { return json.find(part) != std::string::npos; }

TEST(JsonString, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(R"("a\"b\\c")", json_string("a\"b\\c"));
  EXPECT_EQ(R"("\b\f\n\r\t")", json_string("\b\f\n\r\t"));
  EXPECT_EQ(R"("\u0000\u0001\u001f\u007f")", json_string(std::string("\0\x01\x1f\x7f", 4)));
  EXPECT_EQ(R"("/ ok")", json_string("/ ok"));
}

TEST(JsonString, ValidUtf8PassesThrough) {
  EXPECT_EQ("\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80\"", json_string("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80"));
}

TEST(JsonString, InvalidUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(R"("a\ufffdb")", json_string("a\xff" "b"));
  EXPECT_EQ(R"("\ufffd\ufffd")", json_string("\xc0\xaf"));              // overlong '/'
  EXPECT_EQ(R"("\ufffd\ufffd\ufffd")", json_string("\xed\xa0\x80"));    // a surrogate
  EXPECT_EQ(R"("\ufffd\ufffd")", json_string("\xe2\x82"));              // cut short
  EXPECT_EQ(R"("\ufffd\ufffd\ufffd\ufffd")", json_string("\xf4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_EQ(R"("\ufffd")", json_string("\x80"));                        // a lone continuation byte
}

TEST(FormatJson, HeaderFields) {
  std::string json = format_json(sample_summary());
  EXPECT_EQ(0u, json.find("{\n  \"schema_version\": 1,\n  \"gpuslack_version\": \"0.1.0\",\n")) << json;
  EXPECT_TRUE(has(json, "\n  \"pid\": 123,\n  \"rank\": 0,\n  \"local_rank\": 0,\n")) << json;
  EXPECT_TRUE(has(json, "\n  \"wall_s\": 12.5,\n  \"lost_s\": 2.925,\n  \"lost_share\": 0.234,\n")) << json;
  EXPECT_EQ('\n', json.back());
}

TEST(FormatJson, CategoriesAreKeyedAndComplete) {
  std::string json = format_json(sample_summary());
  EXPECT_TRUE(has(json,
                  "  \"categories\": {\n"
                  "    \"allocation\": {\"seconds\": 2.1, \"share\": 0.168},\n"
                  "    \"copy\": {\"seconds\": 0.825, \"share\": 0.066},\n"
                  "    \"collective\": {\"seconds\": 0, \"share\": 0},\n"
                  "    \"sync\": {\"seconds\": 3.2, \"share\": 0.256},\n"
                  "    \"other\": {\"seconds\": 0.1, \"share\": 0.008}\n"
                  "  },\n"))
      << json;
}

TEST(FormatJson, NamesAreEscaped) {
  std::string json = format_json(sample_summary());
  EXPECT_TRUE(has(json, R"("name": "python3 \"main\"\n\u0001\ufffd")")) << json;
}

TEST(FormatJson, NumbersHaveFixedDigitsAndNeverNaNOrInf) {
  Summary s = sample_summary();
  s.wall_s = 1.23456789012345;
  s.lost_share = 0.123456789;
  s.lost_s = std::numeric_limits<double>::quiet_NaN();
  s.categories[0].seconds = std::numeric_limits<double>::infinity();
  s.categories[1].share = -std::numeric_limits<double>::infinity();
  s.categories[2].seconds = -1;
  s.calls[0].max_s = 1e-7;
  std::string json = format_json(s);
  EXPECT_TRUE(has(json, "\"wall_s\": 1.23456789,")) << json;
  EXPECT_TRUE(has(json, "\"lost_share\": 0.123457,")) << json;
  EXPECT_TRUE(has(json, "\"lost_s\": 0,")) << json;
  EXPECT_TRUE(has(json, "\"allocation\": {\"seconds\": 0, \"share\": 0.168}")) << json;
  EXPECT_TRUE(has(json, "\"copy\": {\"seconds\": 0.825, \"share\": 0}")) << json;
  EXPECT_TRUE(has(json, "\"collective\": {\"seconds\": 0, \"share\": 0}")) << json;
  EXPECT_TRUE(has(json, "\"max_s\": 1e-07,")) << json;
  for (const char* bad : {": nan", ": -nan", ": inf", ": -inf", "NaN", "Infinity"}) EXPECT_FALSE(has(json, bad)) << bad;
}

TEST(FormatJson, ExitedThreadsAreMarkedAndTheOthersSummed) {
  std::string json = format_json(sample_summary());
  EXPECT_TRUE(has(json, "\"tid\": 4250,\n      \"name\": \"pt_data_worker\",\n      \"exited\": true,\n")) << json;
  EXPECT_TRUE(has(json, "\"tid\": 4242,\n    \"name\": \"python3 \\\"main\\\"\\n\\u0001\\ufffd\",\n    \"exited\": false,\n"))
      << json;
  EXPECT_TRUE(has(json, "  \"other_threads\": {\n    \"threads\": 3,\n    \"lost_s\": 0.05,\n    \"lost_share\": 0.004,\n"))
      << json;
}

TEST(FormatJson, WorstThreadIsNullWithoutThreadsAndArraysAreEmpty) {
  Summary s;
  std::string json = format_json(s);
  EXPECT_TRUE(has(json, "\"worst_thread\": null,\n  \"threads\": [],\n  \"other_threads\": null,\n"
                        "  \"calls\": [],\n  \"copies\": [],\n"
                        "  \"call_sites\": [],\n  \"collectives\": null,\n  \"allocator\": [],\n"
                        "  \"allocator_status\": {\n    \"selected\": \"native\",\n    \"off\": []\n  },\n"
                        "  \"staging\": null,\n"))
      << json;
  EXPECT_TRUE(has(json, "\"rank\": -1,\n  \"local_rank\": -1,")) << json;
}

TEST(FormatJson, StagingIsNullWithoutPageableCopies) {
  Summary s;
  EXPECT_TRUE(has(format_json(s), "\"staging\": null")) << format_json(s);
  std::string json = format_json(sample_summary());
  EXPECT_TRUE(has(json, "\"blocked_s\": 0.04")) << json;
  EXPECT_TRUE(has(json, "\"api\": \"cudaMemcpyAsync\",\n        \"bytes\": 2147483648,")) << json;
}

TEST(FormatJson, PinnedHeapIsAnObjectAtTheEndOnlyWhenPresent) {
  std::string json = format_json(sample_summary());
  EXPECT_TRUE(has(json, "\"pinned\": {\n    \"pinned\": 67108864,\n    \"peak_pinned\": 134217728,\n")) << json;
  EXPECT_TRUE(has(json, "    \"cap_hits\": 1,\n    \"fallbacks\": 1,\n    \"passthrough\": 3,\n")) << json;
  EXPECT_TRUE(has(json, "    \"stall_s\": 0.002\n  },\n  \"device_health\": {")) << json;
  Summary s = sample_summary();
  s.pinned.present = false;
  EXPECT_FALSE(has(format_json(s), "\"pinned\": {")) << format_json(s);
}

TEST(FormatJson, RowsCarryEnumKeys) {
  std::string json = format_json(sample_summary());
  EXPECT_TRUE(has(json, "\"kind\": \"H2D\",\n      \"host\": \"pageable\",")) << json;
  EXPECT_TRUE(has(json, "\"kind\": \"memset\",\n      \"host\": \"none\",")) << json;
  EXPECT_TRUE(has(json, "\"name\": \"cudaDeviceSynchronize\",\n      \"category\": \"sync\",")) << json;
  EXPECT_TRUE(has(json, "\"frames\": [\n        \"main+0x99 (app)\"\n      ]")) << json;
}

}  // namespace
}  // namespace report
}  // namespace gpuslack

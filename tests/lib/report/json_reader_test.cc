// parse_json: the values it reads, the numbers it refuses to round, and the
// one-line reasons for what is not JSON.
#include "report/json_reader.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuslack {
namespace report {
namespace {

JsonValue parsed(const std::string& text) {
  JsonValue v;
  std::string error;
  EXPECT_TRUE(parse_json(text, &v, &error)) << text << ": " << error;
  return v;
}

// The reason parse_json gives for `text`, checked to be one line.
std::string refused(const std::string& text) {
  JsonValue v;
  std::string error;
  EXPECT_FALSE(parse_json(text, &v, &error)) << text;
  EXPECT_FALSE(error.empty());
  EXPECT_EQ(std::string::npos, error.find('\n')) << error;
  return error;
}

TEST(JsonReader, ReadsEveryKindOfValue) {
  JsonValue v = parsed(" {\"a\": [1, -2.5e3, true, false, null, \"x\"], \"b\": {}, \"c\": []}\n");
  ASSERT_TRUE(v.is_object());
  ASSERT_EQ(3u, v.keys().size());
  const JsonValue* a = v.find("a");
  ASSERT_TRUE(a && a->is_array());
  ASSERT_EQ(6u, a->items().size());
  EXPECT_EQ("1", a->items()[0].text());
  double d = 0;
  EXPECT_TRUE(a->items()[1].to_double(&d));
  EXPECT_EQ(-2500, d);
  EXPECT_TRUE(a->items()[2].is_bool() && a->items()[2].boolean());
  EXPECT_TRUE(a->items()[3].is_bool() && !a->items()[3].boolean());
  EXPECT_TRUE(a->items()[4].is_null());
  EXPECT_EQ("x", a->items()[5].text());
  EXPECT_TRUE(v.find("b")->is_object() && v.find("c")->is_array());
  EXPECT_EQ(nullptr, v.find("d"));
  EXPECT_EQ(nullptr, a->find("a"));  // not an object
}

TEST(JsonReader, KeepsMembersInOrderAndFindsTheLastOfRepeatedOnes) {
  JsonValue v = parsed(R"({"z": 1, "a": 2, "z": 3})");
  EXPECT_EQ((std::vector<std::string>{"z", "a", "z"}), v.keys());
  EXPECT_EQ("3", v.find("z")->text());
}

TEST(JsonReader, DecodesEscapes) {
  EXPECT_EQ("a\"b\\c/\b\f\n\r\t", parsed(R"("a\"b\\c\/\b\f\n\r\t")").text());
  EXPECT_EQ(std::string("\0\x01", 2), parsed(R"("\u0000\u0001")").text());
  EXPECT_EQ("caf\xc3\xa9 \xe2\x82\xac", parsed(R"("caf\u00e9 \u20AC")").text());
  EXPECT_EQ("\xf0\x9f\x9a\x80", parsed(R"("\ud83d\ude80")").text());  // a surrogate pair
  EXPECT_EQ("\xef\xbf\xbd" "x", parsed(R"("\ud83dx")").text());        // a lone one: U+FFFD
  EXPECT_EQ("\xef\xbf\xbd\xef\xbf\xbd", parsed(R"("\ude80\ud83d")").text());
  EXPECT_EQ("caf\xc3\xa9", parsed("\"caf\xc3\xa9\"").text());  // raw UTF-8 passes through
}

TEST(JsonReader, NumbersAreReadExactlyOrRefused) {
  uint64_t u = 0;
  int64_t i = 0;
  double d = 0;
  EXPECT_TRUE(parsed("18446744073709551615").to_uint64(&u));
  EXPECT_EQ(18446744073709551615ull, u);
  EXPECT_FALSE(parsed("18446744073709551616").to_uint64(&u));
  EXPECT_FALSE(parsed("-1").to_uint64(&u));
  EXPECT_TRUE(parsed("-9223372036854775808").to_int64(&i));
  EXPECT_EQ(INT64_MIN, i);
  EXPECT_FALSE(parsed("9223372036854775808").to_int64(&i));
  EXPECT_FALSE(parsed("1.0").to_int64(&i));
  EXPECT_FALSE(parsed("1e3").to_uint64(&u));
  EXPECT_FALSE(parsed("1e400").to_double(&d));
  EXPECT_FALSE(parsed("\"1\"").to_double(&d));
  EXPECT_TRUE(parsed("0.123456789").to_double(&d));
  EXPECT_EQ(0.123456789, d);
  EXPECT_EQ(std::string(400, '9'), parsed(std::string(400, '9')).text());
}

TEST(JsonReader, RefusesWhatIsNotJsonWithLineAndColumn) {
  EXPECT_EQ("line 1, column 1: expected a JSON value, found the end of the text", refused(""));
  EXPECT_EQ("line 2, column 3: expected a JSON value, found ']'", refused("{\"a\":\n  ]"));
  EXPECT_EQ("line 1, column 9: expected a member name in quotes, found the end of the text", refused("{\"a\": 1,"));
  EXPECT_EQ("line 1, column 9: expected a member name in quotes, found '}'", refused("{\"a\": 1,}"));
  EXPECT_EQ("line 1, column 5: expected a JSON value, found ']'", refused("[1, ]"));
  EXPECT_EQ("line 1, column 1: expected a JSON value, found 'N'", refused("NaN"));
  EXPECT_EQ("line 1, column 1: expected a JSON value, found byte 0xff", refused("\xff\xfe"));
  EXPECT_EQ("line 1, column 2: unexpected text after the document", refused("01"));
  EXPECT_EQ("line 1, column 4: unexpected text after the document", refused("{} {}"));
  EXPECT_EQ("line 1, column 1: expected a JSON value, found '/'", refused("// no comments"));
  EXPECT_EQ("line 1, column 3: expected a digit after '.', found the end of the text", refused("1."));
  EXPECT_EQ("line 1, column 4: unterminated string", refused("\"ab"));
  EXPECT_EQ("line 1, column 2: a control character in a string, byte 0x0a", refused("\"\n\""));
  EXPECT_EQ("line 1, column 2: invalid UTF-8 in a string, at byte 0xc0", refused("\"\xc0\xaf\""));
  EXPECT_EQ("line 1, column 3: unknown escape \\'x'", refused(R"("\x")"));
  EXPECT_EQ("line 1, column 5: expected four hex digits after \\u, found 'g'", refused(R"("\u0g00")"));
  EXPECT_EQ("line 1, column 2: expected a JSON value, found 't'", refused("[tru]"));
}

TEST(JsonReader, DepthIsBoundedSoNoInputExhaustsTheStack) {
  std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  parsed(ok);
  std::string deep = std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']');
  EXPECT_NE(std::string::npos, refused(deep).find("nested deeper than 64 levels"));
  std::string very_deep(1 << 20, '[');  // a million: never recursed into
  refused(very_deep);
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  refused(objects);
}

}  // namespace
}  // namespace report
}  // namespace gpuslack

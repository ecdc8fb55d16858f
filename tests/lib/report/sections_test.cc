// The sections table (report/sections.h) against the writer and the
// schema: format_json writes exactly the table's top-level members, in its
// order, whether each optional section is present (the sample summary with
// every section) or not (an empty summary: null or empty members keep their
// place); the schema names the same members.
#include "report/sections.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "report/json.h"
#include "report/json_reader.h"
#include "sample_summary.h"

namespace gpuslack {
namespace report {
namespace {

// The members of the document's top-level object: the writer puts each on
// its own line, indented by two spaces.
std::vector<std::string> top_level_keys(const std::string& json) {
  std::vector<std::string> keys;
  const std::string start = "\n  \"";
  for (size_t at = json.find(start); at != std::string::npos; at = json.find(start, at + 1)) {
    const size_t from = at + start.size();
    keys.push_back(json.substr(from, json.find('"', from) - from));
  }
  return keys;
}

std::vector<std::string> table_keys(bool all_present) {
  std::vector<std::string> keys;
  for (const SummaryMember& m : kSummaryMembers)
    if (all_present || !m.only_when_present) keys.push_back(m.key);
  return keys;
}

TEST(SummarySections, WriterWritesTheTablesMembersInItsOrder) {
  Summary full = testing_sample::sample_summary_with_gpu_timeline();
  full.pinned.present = true;
  full.staging.present = true;
  EXPECT_EQ(table_keys(true), top_level_keys(format_json(full)));
  EXPECT_EQ(table_keys(false), top_level_keys(format_json(Summary())));
}

// The schema (docs/summary.schema.json) names the same top-level members as
// the table, and requires none that the table lets a section leave out.
TEST(SummarySections, SchemaHasTheTablesMembers) {
  std::ifstream in(GPUSLACK_SUMMARY_SCHEMA);
  ASSERT_TRUE(in) << "cannot read " << GPUSLACK_SUMMARY_SCHEMA;
  std::stringstream text;
  text << in.rdbuf();
  JsonValue schema;
  std::string error;
  ASSERT_TRUE(parse_json(text.str(), &schema, &error)) << error;
  const JsonValue* properties = schema.find("properties");
  ASSERT_NE(nullptr, properties);
  const std::vector<std::string> all = table_keys(true);
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()),
            std::set<std::string>(properties->keys().begin(), properties->keys().end()));
  const JsonValue* required = schema.find("required");
  ASSERT_NE(nullptr, required);
  const std::vector<std::string> always = table_keys(false);
  for (const JsonValue& r : required->items())
    EXPECT_NE(always.end(), std::find(always.begin(), always.end(), r.text())) << r.text();
}

TEST(SummarySections, EverySectionOfTheTableHasAMember) {
  for (const char* section : {"run", "job", "calls", "findings", "collectives", "allocator", "staging",
                              "GPU timeline", "pinned heap", "health", "topology", "series"}) {
    bool found = false;
    for (const SummaryMember& m : kSummaryMembers) found = found || std::string(m.section) == section;
    EXPECT_TRUE(found) << section;
  }
}

}  // namespace
}  // namespace report
}  // namespace gpuslack

// The sections table (report/sections.h) against the writer: format_json
// writes exactly the table's top-level members, in its order, whether each
// optional section is present (the sample summary with every section) or
// not (an empty summary: null or empty members keep their place).
#include "report/sections.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "report/json.h"
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

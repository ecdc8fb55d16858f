// lib/report/labels.h: the names exported for the Python renderers, and
// findings rendered from their JSON as the text summary renders them.
#include "report/labels.h"

#include <gtest/gtest.h>

#include <iterator>
#include <string>

#include "ledger/api_call.h"
#include "report/findings_json.h"
#include "report/json.h"
#include "report/json_fields.h"
#include "report/json_reader.h"
#include "report/json_writer.h"
#include "report/units.h"
#include "timeline/timeline.h"

namespace gpuslack {
namespace report {
namespace {

TEST(Labels, EveryCategoryAndIdleCauseWithItsNameAndTheLostRule) {
  JsonValue doc;
  std::string error;
  ASSERT_TRUE(parse_json(labels_json(), &doc, &error)) << error;
  const JsonValue* categories = doc.find("categories");
  ASSERT_TRUE(categories && categories->is_array());
  ASSERT_EQ(static_cast<size_t>(kCategoryCount), categories->items().size());
  for (int i = 0; i < kCategoryCount; ++i) {
    const Category c = static_cast<Category>(i);
    detail::Fields row(categories->items()[i], "categories");
    EXPECT_EQ(category_key(c), row.text("key"));
    EXPECT_EQ(category_name(c), row.text("name"));
    EXPECT_EQ(counts_as_lost(c), row.flag("lost"));
  }
  const JsonValue* idle = doc.find("idle_causes");
  ASSERT_TRUE(idle && idle->is_array());
  ASSERT_EQ(static_cast<size_t>(timeline::kIdleCount), idle->items().size());
  detail::Fields sync(idle->items()[static_cast<int>(timeline::Idle::kSync)], "idle_causes");
  EXPECT_EQ("sync", sync.text("key"));
  EXPECT_EQ("synchronization", sync.text("name"));
  ASSERT_TRUE(doc.find("busy_kinds") && doc.find("units"));
  EXPECT_EQ(std::size(kUnitNames), doc.find("units")->items().size());
}

Finding sample() {
  Finding f;
  f.rule = "allocator_sync";
  f.title = "cudaFree synchronizes the device";
  f.cost_s = 1.2;
  f.cost_share = 0.4;
  f.gpu_idle_s = 0.0004;
  f.evidence = {{"cudaFree calls", "96"}};
  f.where = {{"train_step(int)+0x1a (/app/train)", "main+0x2 (train)"}};
  f.fix = "GPUSLACK_CONF=allocator:vmm";
  return f;
}

std::string as_json(const std::vector<Finding>& findings) {
  json_detail::Writer w;
  w.begin_object();
  w.key("findings");
  write_findings(findings, &w);
  w.end_object();
  return w.take();
}

TEST(Labels, TheCallsThatSynchronizeTheDeviceByKind) {
  // Names are interpose/'s (hooks.cc); these stand in for its table.
  const ApiCall sync{0, "cudaDeviceSynchronize", Category::kSync, false, false, true};
  const ApiCall stream{1, "cudaStreamSynchronize", Category::kSync};
  const ApiCall free_call{2, "cudaFree", Category::kAllocation, false, false, true};
  const ApiCall malloc_call{3, "cudaMalloc", Category::kAllocation};
  const ApiCall* const calls[] = {&free_call, &stream, &sync, &malloc_call};
  JsonValue doc;
  std::string why;
  ASSERT_TRUE(parse_json(labels_json(calls, 4), &doc, &why)) << why;
  const JsonValue* syncs = doc.find("device_syncs");
  ASSERT_TRUE(syncs && syncs->find("explicit") && syncs->find("frees"));
  ASSERT_EQ(1u, syncs->find("explicit")->items().size());
  EXPECT_EQ("cudaDeviceSynchronize", syncs->find("explicit")->items()[0].text());
  ASSERT_EQ(1u, syncs->find("frees")->items().size());
  EXPECT_EQ("cudaFree", syncs->find("frees")->items()[0].text());
  ASSERT_TRUE(parse_json(labels_json(), &doc, &why)) << why;   // none given: empty lists
  EXPECT_TRUE(doc.find("device_syncs")->find("explicit")->items().empty());
}

TEST(Labels, FindingsFromTheirJsonReadAsTheTextSummarysLines) {
  const std::vector<Finding> findings = {sample()};
  std::string text, error;
  ASSERT_TRUE(render_findings_json(as_json(findings), FindingsLayout{}, &text, &error)) << error;
  std::string want;
  for (const std::string& line : findings_lines(findings)) want += line + '\n';
  EXPECT_EQ(want, text);
  EXPECT_NE(std::string::npos, text.find("   cost: 1.20 s (40.0% of wall), GPU idle 400.0 us\n")) << text;
}

TEST(Labels, TheLayoutsPartsAndIndent) {
  const std::string json = as_json({sample()});
  std::string text, error;
  FindingsLayout body;
  body.heading = false;
  body.body_only = true;
  body.indent = 5;
  ASSERT_TRUE(render_findings_json(json, body, &text, &error)) << error;
  EXPECT_EQ("     evidence: cudaFree calls 96\n     where: train_step+0x1a (train) < main+0x2 (train)\n"
            "     fix: GPUSLACK_CONF=allocator:vmm\n", text);
  FindingsLayout brief;
  brief.heading = false;
  brief.brief = true;
  ASSERT_TRUE(render_findings_json(json, brief, &text, &error)) << error;
  EXPECT_EQ("1. cudaFree synchronizes the device\n   cost: 1.20 s (40.0% of wall), GPU idle 400.0 us\n", text);
}

TEST(Labels, FindingsThatAreNotSuchJsonGetOneLine) {
  std::string text = "unchanged", error;
  EXPECT_FALSE(render_findings_json("{\"findings\": [{\"cost_s\": \"soon\"}]}", FindingsLayout{}, &text, &error));
  EXPECT_EQ("findings: findings[0].cost_s: expected a finite number", error);
  EXPECT_FALSE(render_findings_json("[1", FindingsLayout{}, &text, &error));
  EXPECT_EQ(0u, error.find("findings are not a JSON document: ")) << error;
  EXPECT_EQ(std::string::npos, error.find('\n'));
}

}  // namespace
}  // namespace report
}  // namespace gpuslack

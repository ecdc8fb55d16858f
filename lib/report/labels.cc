// See labels.h.
#include "report/labels.h"

#include "ledger/api_call.h"
#include "report/findings_json.h"
#include "report/json_fields.h"
#include "report/json_reader.h"
#include "report/units.h"
#include "timeline/timeline.h"

namespace gpuslack {
namespace report {
namespace {

// The names are constants of this library, plain ASCII without quotes or
// backslashes: no escaping needed.
std::string quoted(const char* s) { return std::string("\"") + s + "\""; }

}  // namespace

std::string labels_json(const ApiCall* const* calls, int count) {
  std::string out = "{\"categories\": [";
  for (int i = 0; i < kCategoryCount; ++i) {
    const Category c = static_cast<Category>(i);
    out += std::string(i ? ", " : "") + "{\"key\": " + quoted(category_key(c)) + ", \"name\": " +
           quoted(category_name(c)) + ", \"lost\": " + (counts_as_lost(c) ? "true" : "false") + "}";
  }
  out += "], \"idle_causes\": [";
  for (int i = 0; i < timeline::kIdleCount; ++i) {
    const timeline::Idle c = static_cast<timeline::Idle>(i);
    out += std::string(i ? ", " : "") + "{\"key\": " + quoted(timeline::idle_key(c)) + ", \"name\": " +
           quoted(timeline::idle_name(c)) + "}";
  }
  out += "], \"busy_kinds\": [";
  for (int i = 0; i < timeline::kBusyCount; ++i) {
    const timeline::Busy b = static_cast<timeline::Busy>(i);
    out += std::string(i ? ", " : "") + "{\"key\": " + quoted(timeline::busy_key(b)) + ", \"name\": " +
           quoted(timeline::busy_name(b)) + "}";
  }
  out += "], \"units\": [";
  bool first = true;
  for (const char* unit : kUnitNames) {
    out += std::string(first ? "" : ", ") + quoted(unit);
    first = false;
  }
  for (const Category kind : {Category::kSync, Category::kAllocation}) {
    out += kind == Category::kSync ? "], \"device_syncs\": {\"explicit\": [" : "], \"frees\": [";
    first = true;
    for (int i = 0; i < count; ++i) {
      if (!calls[i]->synchronizes_device || calls[i]->category != kind) continue;
      out += std::string(first ? "" : ", ") + quoted(calls[i]->name);
      first = false;
    }
  }
  return out + "]}}";
}

bool render_findings_json(std::string_view json, const FindingsLayout& layout, std::string* text, std::string* error) {
  JsonValue doc;
  std::string why;
  if (!parse_json(json, &doc, &why)) {
    *error = "findings are not a JSON document: " + why;
    return false;
  }
  std::vector<Finding> findings;
  try {
    findings = read_findings(detail::Fields(doc, ""));
  } catch (const detail::Malformed& m) {
    *error = "findings: " + m.what;
    return false;
  }
  text->clear();
  for (const std::string& line : findings_lines(findings, layout)) *text += line + '\n';
  return true;
}

}  // namespace report
}  // namespace gpuslack

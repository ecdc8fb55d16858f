// See findings_json.h.
#include "report/findings_json.h"

namespace gpuslack {
namespace report {

using detail::Fields;
using detail::Malformed;

std::vector<Finding> read_findings(const Fields& doc) {
  std::vector<Finding> out;
  doc.each("findings", [&](const JsonValue& item, const std::string& at) {
    Fields f(item, at);
    Finding x;
    x.rule = f.text("rule");
    x.title = f.text("title");
    x.cost_s = f.number("cost_s");
    x.cost_share = f.number("cost_share");
    const JsonValue* idle = f.get("gpu_idle_s");
    x.gpu_idle_s = idle == nullptr || idle->is_null() ? -1 : f.number("gpu_idle_s");
    f.each("evidence", [&](const JsonValue& e, const std::string& e_at) {
      Fields pair(e, e_at);
      x.evidence.emplace_back(pair.text("name"), pair.text("value"));
    });
    f.each("where", [&](const JsonValue& site, const std::string& site_at) {
      if (!site.is_array()) throw Malformed{site_at + ": expected an array"};
      std::vector<std::string> frames;
      for (size_t i = 0; i < site.items().size(); ++i) {
        const JsonValue& frame = site.items()[i];
        if (!frame.is_string()) throw Malformed{site_at + "[" + std::to_string(i) + "]: expected a string"};
        frames.push_back(frame.text());
      }
      x.where.push_back(std::move(frames));
    });
    x.fix = f.text("fix");
    out.push_back(std::move(x));
  });
  return out;
}

}  // namespace report
}  // namespace gpuslack

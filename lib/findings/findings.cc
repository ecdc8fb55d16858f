// evaluate(): every rule family, then the findings ranked by cost.
#include "findings/findings.h"

#include <algorithm>

namespace gpuslack {
namespace findings {

std::vector<report::Finding> evaluate(const report::Summary& summary, const Context& context) {
  std::vector<report::Finding> out;
  // See Note [Each idle second charged once]: this order is the rule's.
  IdleLedger idle(summary);
  allocator_rules(summary, context, &idle, &out);
  copy_rules(summary, context, &idle, &out);
  timeline_rules(summary, context, &idle, &out);
  kernel_rules(summary, context, &out);
  collective_rules(summary, context, &out);
  // Most costly first; ties by rule name, so the order is stable.
  std::stable_sort(out.begin(), out.end(), [](const report::Finding& a, const report::Finding& b) {
    if (a.cost_s != b.cost_s) return a.cost_s > b.cost_s;
    return a.rule < b.rule;
  });
  return out;
}

}  // namespace findings
}  // namespace gpuslack

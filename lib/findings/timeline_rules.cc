// The timeline rules (lib/findings/findings.h). Filled in by issue 17's work.
#include "findings/findings.h"

namespace gpuslack {
namespace findings {

void timeline_rules(const report::Summary&, const Context&, std::vector<report::Finding>*) {}

}  // namespace findings
}  // namespace gpuslack

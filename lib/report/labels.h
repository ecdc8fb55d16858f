// Every name a reader sees, for the renderers outside the library (the
// Python package: python_shim/gpuslack/labels.py), and the findings
// renderer they call (Note [One formatter per unit]; docs/design.md, "Where
// rendering lives").
//
// labels_json(): one JSON object, the names as C++ defines them once:
//   "categories":  [{"key": "allocation", "name": "allocation", "lost": true}, ...]
//                  in ledger/api_call.h's order (category_key, category_name,
//                  counts_as_lost: the rule for what counts as lost);
//   "idle_causes": [{"key": "host_bound", "name": "host-bound"}, ...]
//   "busy_kinds":  [{"key": "compute", "name": "compute"}, ...]
//                  (timeline/timeline.h: idle_key/idle_name, busy_key/busy_name);
//   "units":       ["seconds", "percent", "bytes", ...]: units.h's kUnitNames;
//   "device_syncs": {"explicit": ["cudaDeviceSynchronize", ...],
//                   "frees": ["cudaFree", ...]}: the hooked calls that
//                  wait for the whole device (ApiCall::synchronizes_device),
//                  explicitly (category sync) or as a free (allocation);
//                  names known only to interpose/, so passed in (calls,
//                  count; none: both lists empty).
// Finding rules and their titles need no table: the summary's "findings"
// carry each finding's rule and title as lib/findings wrote them, and the
// job report renders them through render_findings_json.
//
// render_findings_json(): a JSON object {"findings": [...]} (the summary's
// member, docs/summary.schema.json $defs/finding; extra members ignored)
// read as the summary reader reads it and rendered by findings_text.h.
//
// Thread safety: pure.
#pragma once

#include <string>
#include <string_view>

#include "ledger/api_call.h"
#include "report/findings_text.h"

namespace gpuslack {
namespace report {

std::string labels_json(const ApiCall* const* calls = nullptr, int count = 0);

// The lines, each ending in '\n', into *text; false with one line in
// *error when the JSON is not such an object.
bool render_findings_json(std::string_view json, const FindingsLayout& layout, std::string* text, std::string* error);

}  // namespace report
}  // namespace gpuslack

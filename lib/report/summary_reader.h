// Reading a summary back: the JSON document json.h writes, as the Summary
// it was written from, so that text.h renders a file exactly as the process
// rendered it at exit (`python -m gpuslack report`, gpuslack_render_summary
// in the C API; output.cc renders the process's own text from the same
// read-back, so the two cannot differ).
//
// Round trip: for any Summary s, format_json(read(format_json(s))) ==
// format_json(s), byte for byte. The read-back holds the figures as
// written (seconds to 9 significant digits, shares to 6), into the
// report's own types (report/feature_counters.h), never a feature's.
//
// Compatibility: documents of schema_version kSchemaVersion. The members
// every version 1 document has (schema_version, pid, wall_s, lost_share,
// categories, threads, calls, copies, call_sites) are required; any other
// member may be missing (an older writer) and reads as its default, and
// unknown members are ignored (a newer one). A member that is present
// must have its type: no number is clamped or rounded to fit.
//
// Errors: `*error` is one line that reads after the document's name, so
// that the caller can say "<file> is not a JSON document: line 3, column 7:
// ..."; the forms are "is not a JSON document: ...", "is not a gpuslack
// summary: ...", "has schema_version N; this gpuslack reads version 1" and
// "is not a valid gpuslack summary: <member>: ...". No input crashes it.
//
// Thread safety: pure functions (read_summary_file reads the file).
#pragma once

#include <string>
#include <string_view>

#include "report/summary.h"

namespace gpuslack {
namespace report {

// Reads the document in `json` into `*out`; false with `*error` if it is
// not a summary this version can read.
bool summary_from_json(std::string_view json, Summary* out, std::string* error);

// Reads the summary file at `path`. On failure `*error` is one whole line
// naming the file: "cannot read <path>: <reason>" or "<path> " + the
// forms above. Files over kMaxSummaryFileBytes are refused.
inline constexpr size_t kMaxSummaryFileBytes = size_t{1} << 30;
bool read_summary_file(const std::string& path, Summary* out, std::string* error);

}  // namespace report
}  // namespace gpuslack

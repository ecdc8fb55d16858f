// The JSON summary: the stable, machine-readable form of Summary, for
// scripts and dashboards that gather the files of many ranks.
//
// The document is described field by field in docs/summary.schema.json
// (JSON Schema 2020-12, "schema_version": 1) and, for readers, in
// docs/summary.md. In short: the Summary's fields under the same names;
// categories as an object keyed by category_key() ("allocation", "copy",
// "collective", "sync", "other"), each {"seconds", "share"}; copy kinds by
// copy_kind_name() ("H2D", ...) and host memory as "pageable", "pinned" or
// "none"; "worst_thread" is null when no thread made a hooked call; ranks
// are -1 when unknown.
//
// Guarantees: valid UTF-8 JSON whatever the inputs hold (control
// characters escaped, invalid UTF-8 bytes become \ufffd, as does U+FFFD
// itself, so that a document read back writes the same bytes); seconds written
// with 9 significant digits, shares and GB/s with 6; never NaN or Inf (a
// non-finite or negative figure is written as 0); numbers do not depend on the
// process's locale. Pretty-printed, two-space indent, ends with a newline.
//
// Thread safety: a pure function of its argument.
#pragma once

#include <string>

#include "report/summary.h"

namespace gpuslack {
namespace report {

std::string format_json(const Summary& summary);

// `text` as a JSON string literal, quotes included (exposed for tests).
std::string json_string(const std::string& text);

}  // namespace report
}  // namespace gpuslack

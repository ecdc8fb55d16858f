// The summary's calls section (calls.h) as JSON, and read back: "lost_s",
// "lost_share" and "categories", then (after the findings) "worst_thread",
// "threads", "other_threads", "calls", "copies" and "call_sites"
// (docs/summary.schema.json).
//
// Categories are an object keyed by category_key(), every category in enum
// order even when the vector lacks it, each {"seconds", "share"}; copy
// kinds by copy_kind_name() and host memory as "pageable", "pinned" or
// "none"; "worst_thread" is null when no thread made a hooked call,
// "other_threads" when no exited thread was summed. The reader follows
// summary_reader.h's rules (a missing member reads as its default, one of
// another type is Malformed). Round trip: write(read(write(s))) ==
// write(s), held by tests/lib/report/sections_json_test.cc.
//
// Thread safety: pure.
#pragma once

#include "report/calls.h"
#include "report/section_json.h"

namespace gpuslack {
namespace report {

// "lost_s", "lost_share", "categories".
void write_calls_totals(const Summary& s, json_detail::Writer* w);
// "worst_thread" .. "call_sites".
void write_calls_rows(const Summary& s, json_detail::Writer* w);

// Every member of the section from the document's top-level object.
void read_calls(const detail::Fields& doc, Summary* s);

}  // namespace report
}  // namespace gpuslack

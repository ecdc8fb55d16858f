// The summary's "findings" (report/finding.h, Summary::findings;
// docs/summary.schema.json, $defs/finding) as JSON, and read back.
//
// The writer is a template over json.cc's Writer, so that json.cc only
// calls it; the reader follows summary_reader.h's
// rules (a missing member reads as its default, one of another type is
// Malformed). gpu_idle_s is null when not measured (-1 in the struct).
// Round trip: write(read(write(f))) == write(f). The field names are a
// contract with the job report's merge (python_shim/gpuslack/job).
//
// Thread safety: pure.
#pragma once

#include <string>
#include <vector>

#include "report/finding.h"
#include "report/json_fields.h"

namespace gpuslack {
namespace report {

template <typename Writer>
void write_findings(const std::vector<Finding>& findings, Writer* w) {
  w->begin_array();
  for (const Finding& f : findings) {
    w->begin_object();
    w->key("rule").string(f.rule);
    w->key("title").string(f.title);
    w->key("cost_s").seconds(f.cost_s);
    w->key("cost_share").share(f.cost_share);
    w->key("gpu_idle_s");
    if (f.gpu_idle_s < 0) {
      w->null();
    } else {
      w->seconds(f.gpu_idle_s);
    }
    w->key("evidence").begin_array();
    for (const auto& [name, value] : f.evidence) {
      w->begin_object(/*on_one_line=*/true);
      w->key("name").string(name);
      w->key("value").string(value);
      w->end_object();
    }
    w->end_array();
    w->key("where").begin_array();
    for (const std::vector<std::string>& site : f.where) {
      w->begin_array();
      for (const std::string& frame : site) w->string(frame);
      w->end_array();
    }
    w->end_array();
    w->key("fix").string(f.fix);
    w->end_object();
  }
  w->end_array();
}

// The "findings" member of the document `f` ([] when missing).
std::vector<Finding> read_findings(const detail::Fields& f);

}  // namespace report
}  // namespace gpuslack

// See json.h. The document itself: its top-level members in
// kSummaryMembers' order (sections.h), each section written by its own
// writer (the section's _json.h; the writer is json_writer.h). The run's
// members are the document's own, written here. Changing a field's name or
// meaning means changing docs/summary.schema.json and bumping
// kSchemaVersion (summary.h); the ctest report.json_validates_against_schema
// holds the two together, and SummarySections.* the order to the table.
#include "report/json.h"

#include <string>

#include "report/allocator_json.h"
#include "report/calls_json.h"
#include "report/collectives_json.h"
#include "report/device_health_json.h"
#include "report/findings_json.h"
#include "report/gpu_timeline_json.h"
#include "report/idle_explained.h"
#include "report/job_json.h"
#include "report/json_writer.h"
#include "report/pinned_json.h"
#include "report/series_json.h"
#include "report/staging_json.h"
#include "report/topology_json.h"

namespace gpuslack {
namespace report {

using json_detail::Writer;

std::string json_string(const std::string& text) {
  std::string out = "\"";
  json_detail::append_escaped(text, &out);
  out += '"';
  return out;
}

std::string format_json(const Summary& s) {
  Writer w;
  w.begin_object();
  // The run.
  w.key("schema_version").integer(s.schema_version);
  w.key("gpuslack_version").string(s.gpuslack_version);
  w.key("build_info").string(s.build_info);
  w.key("reason").string(s.reason);
  w.key("host").string(s.host);
  w.key("pid").integer(s.pid);
  w.key("rank").integer(s.rank < 0 ? -1 : s.rank);
  w.key("local_rank").integer(s.local_rank < 0 ? -1 : s.local_rank);
  w.key("job");
  write_job(s.job, &w);
  w.key("started_utc").string(s.started_utc);
  w.key("wall_s").seconds(s.wall_s);
  write_calls_totals(s, &w);
  w.key("findings");
  write_findings(s.findings, &w);
  w.key("findings_explain");
  write_idle_explained(s, &w);
  write_calls_rows(s, &w);
  w.key("collectives");
  if (s.collectives.present) {
    write_collectives(s.collectives, &w);
  } else {
    w.null();
  }
  write_allocator(s.allocator, s.allocator_status, &w);
  w.key("staging");
  if (s.staging.present) {
    write_staging(s.staging, &w);
  } else {
    w.null();
  }
  // Written once the session decided (measured, off, held by another
  // tool, unavailable); absent in a summary made before, as in older files.
  if (s.gpu_timeline.status != timeline::Status::kNotStarted) {
    w.key("gpu_timeline");
    write_gpu_timeline(s.gpu_timeline, &w);
  }
  if (s.pinned.present) {
    w.key("pinned");
    write_pinned(s.pinned, &w);
  }
  w.key("device_health");
  write_device_health(s.device_health, &w);
  w.key("topology");
  if (s.topology.present) {
    write_topology(s.topology, &w);
  } else {
    w.null();
  }
  w.key("series");
  write_series(s.series, &w);
  w.end_object();
  return w.take();
}

}  // namespace report
}  // namespace gpuslack

// The summary's sections, in one table: for each, its members in the JSON
// (docs/summary.schema.json), its report-side type, and the functions that
// build it, write it, read it back and render it as text.
//
// The rule for which file does what: a section X has
//   X.{h,cc}       its report-side types, its builder (from RunInfo and the
//                  ledger's figures, copying a feature's counters at the
//                  boundary) and its text (lines appended in text.h's
//                  layout, with text_parts.h's pieces);
//   X_json.{h,cc}  its JSON writer (over json_writer.h's Writer) and reader
//                  (over json_fields.h's Fields; summary_reader.h's rules).
// The assemblies call them in the document's order and hold nothing of a
// section's: summary.h's Summary holds one member per section and
// build_summary (summary.cc) calls each builder; format_json (json.cc)
// writes kSummaryMembers in order, summary() (summary_reader.cc) reads
// them, format_text (text.cc) lays out the text. The run is the document's
// own fields: it is written and read in the assemblies themselves, and its
// headline is text.cc's. Adding a field is one section's change (its type,
// builder, writer, reader and text, in its two file pairs) plus the schema
// and docs/summary.md.
//
// Where a section's files are named otherwise (older than the rule), the
// table says so:
//
// | section      | JSON members                  | type                          | builder                                   | writer                      | reader                                | text |
// |--------------|-------------------------------|-------------------------------|-------------------------------------------|-----------------------------|---------------------------------------|------|
// | run          | schema_version .. local_rank, started_utc, wall_s | Summary's own fields (summary.h) | build_summary (summary.cc) | format_json (json.cc)   | summary() (summary_reader.cc)         | headline (text.cc) |
// | job          | job                           | JobIdentity (job.h)           | job_from_environment (job.cc)             | write_job (job_json.h)      | read_job (job_json.h)                 | in the run's headline (text.cc) |
// | calls        | lost_s, lost_share, categories, worst_thread, threads, other_threads, calls, copies, call_sites | CategoryTime, ThreadRow, OtherThreadsRow, CallRow, CopyRow, CallSiteRow (calls.h) | build_calls (calls.h) | write_calls_totals, write_calls_rows (calls_json.h) | read_calls (calls_json.h) | category_part, call_tables_text, copy_table_text, worst_thread_text, call_sites_text (calls.h) |
// | findings     | findings, findings_explain    | Finding (finding.h), IdleExplained (idle_explained.h) | lib/findings (the session, after build_summary) | write_findings (findings_json.h), write_idle_explained (idle_explained.h) | read_findings (findings_json.h); findings_explain is derived, not read | findings_lines (findings_text.h), idle_explained_line (idle_explained.h) |
// | collectives  | collectives                   | CollectivesSection, CollectiveRow, AlgoProtoRow, CommunicatorRow (collectives.h) | build_collectives (collectives.h), add_algorithms (algorithms.cc), apply_collective_expectations (collective_expectations.h) | write_collectives (collectives_json.h) | read_collectives (collectives_json.h) | collectives_text (collectives.h), algorithm_lines (algorithms_text.h) |
// | allocator    | allocator, allocator_status   | AllocatorRow, AllocatorStatus (allocator.h; AllocatorCounters, AllocatorSamples: feature_counters.h) | build_allocator (allocator.h) | write_allocator (allocator_json.h) | read_allocator (allocator_json.h) | allocator_text (allocator.h) |
// | staging      | staging                       | StagingSection, PageableSiteRow (staging.h; StagingCounters: feature_counters.h) | build_staging (staging.h) | write_staging (staging_json.h) | read_staging (staging_json.h) | staging_text (staging.h) |
// | GPU timeline | gpu_timeline                  | GpuTimelineSection, GpuDeviceRow, KernelRow, Steps, ... (gpu_timeline.h) | build_gpu_timeline (gpu_timeline.h) | write_gpu_timeline (gpu_timeline_json.h) | read_gpu_timeline (gpu_timeline_json.h) | gpu_timeline_headline, gpu_timeline_text (gpu_timeline.h) |
// | pinned heap  | pinned                        | PinnedSection (pinned.h; PinnedCounters: feature_counters.h) | build_pinned (pinned.h) | write_pinned (pinned_json.h) | read_pinned (pinned_json.h) | pinned_text (pinned.h) |
// | health       | device_health                 | DeviceHealthSection (device_health.h; DeviceHealthRow: feature_counters.h) | build_device_health (device_health.h) | write_device_health (device_health_json.h) | read_device_health (device_health_json.h) | device_health_lines (device_health.h) |
// | topology     | topology                      | TopologySection, TopologyLinks, TopologyNode (topology.h) | build_topology_section (topology.h)       | write_topology (topology_json.h) | read_topology (topology_json.h) | topology_lines, topology_short_line (topology.h) |
// | series       | series                        | SeriesSection, SeriesDevice (series.h) | build_series (series.h)          | write_series (series_json.h) | read_series (series_json.h)      | none (the job report draws it) |
//
// Every section's counters are the report's own types: a feature's live
// struct is copied at the boundary (Note [Counters copied at the boundary]
// in feature_counters.h; the GPU timeline's kernels and steps in
// gpu_timeline.h). What is still spread is said in docs/design.md's report
// room entry.
//
// kSummaryMembers: the top-level JSON members, in the order format_json
// writes them, each with its section. Every member is always written (null
// or empty when its section is absent) but "gpu_timeline" and
// "pinned": see only_when_present. tests/lib/report/sections_test.cc
// holds the writer to this list, and docs/summary.schema.json to its
// members.
#pragma once

namespace gpuslack {
namespace report {

struct SummaryMember {
  const char* key;      // the JSON member
  const char* section;  // its row in the table above
  // Left out, not null, when absent: gpu_timeline until the session decided
  // (measured, off, unavailable), pinned until the heap was made.
  bool only_when_present = false;
};

inline constexpr SummaryMember kSummaryMembers[] = {
    {"schema_version", "run"},   {"gpuslack_version", "run"}, {"build_info", "run"},
    {"reason", "run"},           {"host", "run"},             {"pid", "run"},
    {"rank", "run"},             {"local_rank", "run"},       {"job", "job"},
    {"started_utc", "run"},      {"wall_s", "run"},           {"lost_s", "calls"},
    {"lost_share", "calls"},     {"categories", "calls"},     {"findings", "findings"},
    {"findings_explain", "findings"},
    {"worst_thread", "calls"},   {"threads", "calls"},        {"other_threads", "calls"},
    {"calls", "calls"},          {"copies", "calls"},         {"call_sites", "calls"},
    {"collectives", "collectives"}, {"allocator", "allocator"}, {"allocator_status", "allocator"},
    {"staging", "staging"},      {"gpu_timeline", "GPU timeline", true}, {"pinned", "pinned heap", true},
    {"device_health", "health"}, {"topology", "topology"},    {"series", "series"},
};

}  // namespace report
}  // namespace gpuslack

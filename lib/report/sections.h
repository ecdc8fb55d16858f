// The summary's sections, in one table: for each, its members in the JSON
// (docs/summary.schema.json), its report-side type, and the functions that
// build it, write it, read it back and render it as text. Adding a field
// is one section's change (its type, and its row's builder, writer, reader
// and text) plus the schema and docs/summary.md.
//
// | section      | JSON members                  | type (summary.h unless named) | builder                                   | writer                      | reader                                | text |
// |--------------|-------------------------------|-------------------------------|-------------------------------------------|-----------------------------|---------------------------------------|------|
// | run          | schema_version .. local_rank, started_utc, wall_s | Summary's own fields | build_summary (summary.cc)        | format_json (json.cc)       | summary() (summary_reader.cc)         | headline (text.cc) |
// | job          | job                           | JobIdentity (job.h)           | job_from_environment (job.cc)             | job (json.cc)               | job (summary_reader.cc)               | headline (text.cc) |
// | calls        | lost_s, lost_share, categories, worst_thread, threads, other_threads, calls, copies, call_sites | CategoryTime, ThreadRow, OtherThreadsRow, CallRow, CopyRow, CallSiteRow | summary.cc | categories, thread, call, copy, call_site (json.cc) | the same names (summary_reader.cc) | headline, call_tables, copy_table, worst_thread, call_sites (text.cc) |
// | findings     | findings, findings_explain    | Finding (finding.h), IdleExplained (idle_explained.h) | lib/findings (the session, after build_summary) | write_findings (findings_json.h), write_idle_explained (idle_explained.h) | read_findings (findings_json.cc); findings_explain is derived, not read | findings_lines (findings_text.h), idle_explained_line (idle_explained.h) |
// | collectives  | collectives                   | CollectivesSection            | build_collectives (collectives.cc), add_algorithms (algorithms.cc), apply_collective_expectations (collective_expectations.cc) | write_collectives (collectives_json.h) | read_collectives (collectives_json.cc) | collective_table (text.cc), algorithm_lines (algorithms_text.h) |
// | allocator    | allocator, allocator_status   | AllocatorRow (AllocatorCounters, AllocatorSamples: feature_counters.h), AllocatorStatus | build_summary (summary.cc) | format_json (json.cc) | allocator (summary_reader.cc) | allocator_lines (text.cc) |
// | staging      | staging                       | StagingSection (StagingCounters: feature_counters.h) | build_staging (staging.cc) | staging (json.cc)           | staging (summary_reader.cc)           | staging_lines (text.cc) |
// | GPU timeline | gpu_timeline                  | GpuTimelineSection            | build_gpu_timeline (gpu_timeline.cc)      | gpu_timeline (json.cc)      | read_gpu_timeline (gpu_timeline.cc)   | gpu_headline, gpu_details (text.cc) |
// | pinned heap  | pinned                        | PinnedSection (PinnedCounters: feature_counters.h) | build_summary (summary.cc) | pinned (json.cc)              | pinned (summary_reader.cc)            | pinned_line (text.cc) |
// | health       | device_health                 | DeviceHealthSection (DeviceHealthRow: feature_counters.h) | build_summary (summary.cc) | write_device_health (health_series.h) | read_device_health (health_series.cc) | device_health_lines (health_series.cc) |
// | topology     | topology                      | TopologySection               | build_topology_section (topology.cc)      | write_topology (topology_json.h) | read_topology (topology_json.cc) | topology_lines, topology_short_line (topology.cc) |
// | series       | series                        | SeriesSection                 | build_series (series.cc)                  | write_series (health_series.h) | read_series (health_series.cc)    | none (the job report draws it) |
//
// Every section's counters are the report's own types: a feature's live
// struct is copied at the boundary (Note [Counters copied at the boundary]
// in feature_counters.h). What is still spread is said in docs/design.md's
// report room entry.
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

// The summary's "collectives" (summary.h: CollectivesSection, built by
// collectives.h; docs/summary.schema.json) as JSON, and read back.
//
// The writer is a template over json.cc's Writer, as findings_json.h's and
// topology_json.h's are, so that json.cc only calls it; the reader follows
// summary_reader.h's rules (a missing member reads as its default, one of
// another type is Malformed; older summaries' figures as the comments at
// each say). Round trip: write(read(write(c))) == write(c), held by
// tests/lib/report/collectives_json_test.cc. json.cc writes null when the
// section is absent.
//
// Thread safety: pure.
#pragma once

#include <cstdint>
#include <string>

#include "report/json_fields.h"
#include "report/summary.h"

namespace gpuslack {
namespace report {

// A communicator's hash as 16 hex digits: JSON numbers lose 64-bit integers.
std::string comm_hash_hex(uint64_t h);

template <typename Writer>
void write_collectives(const CollectivesSection& c, Writer* w) {
  w->begin_object();
  w->key("nccl_version").integer(c.nccl_version);
  w->key("timing_every").integer(c.timing_every);
  w->key("host_s").seconds(c.host_s);
  w->key("host_share").share(c.host_share);
  w->key("gpu_s_estimated").seconds(c.gpu_s_estimated);
  w->key("gpu_share").share(c.gpu_share);
  w->key("gpu_estimate_timed").unsigned_integer(c.gpu_estimate_timed);
  w->key("gpu_estimate_devices").integer(c.gpu_estimate_devices);
  w->key("gpu_estimate_capped").boolean(c.gpu_estimate_capped);
  w->key("pending").unsigned_integer(c.pending);
  w->key("dropped").unsigned_integer(c.dropped);
  w->key("rows").begin_array();
  for (const CollectiveRow& r : c.rows) {
    w->begin_object();
    w->key("op").string(r.op);
    w->key("datatype").string(r.datatype);
    w->key("size_bucket").integer(r.bucket);
    w->key("nranks").integer(r.nranks);
    w->key("count").unsigned_integer(r.count);
    w->key("captured").unsigned_integer(r.captured);
    w->key("timed").unsigned_integer(r.timed);
    w->key("mostly_captured").boolean(r.mostly_captured);
    w->key("bytes").unsigned_integer(r.bytes);
    w->key("host_s").seconds(r.host_s);
    w->key("gpu_s").seconds(r.gpu_s);
    w->key("gpu_s_estimated").seconds(r.gpu_s_estimated);
    w->key("gpu_typical_s").seconds(r.gpu_typical_s);
    w->key("gpu_p50_s").seconds(r.gpu_p50_s);
    w->key("gpu_p99_s").seconds(r.gpu_p99_s);
    w->key("algbw_gbps").share(r.algbw_gbps);
    w->key("busbw_gbps").share(r.busbw_gbps);
    // The cost model's (report/collective_expectations.h).
    w->key("expected_busbw_gbps").share(r.expected_busbw_gbps);
    w->key("expected_from").string(r.expected_from);
    w->key("best_algo").string(r.best_algo);
    w->key("best_proto").string(r.best_proto);
    w->key("best_channels").integer(r.best_channels);
    w->key("best_time_s").seconds(r.best_time_s);
    w->key("chosen_time_s").seconds(r.chosen_time_s);
    w->key("algo").string(r.algo);
    w->key("proto").string(r.proto);
    w->key("channels").share(r.channels);
    w->key("nnodes").integer(r.nnodes);
    w->end_object();
  }
  w->end_array();
  w->key("profiler").string(c.profiler);
  w->key("profiler_records").unsigned_integer(c.profiler_records);
  w->key("profiler_dropped").unsigned_integer(c.profiler_dropped);
  w->key("algorithms").begin_array();
  for (const AlgoProtoRow& a : c.algorithms) {
    w->begin_object();
    w->key("comm_hash").string(comm_hash_hex(a.comm_hash));
    w->key("nranks").integer(a.nranks);
    w->key("nnodes").integer(a.nnodes);
    w->key("op").string(a.op);
    w->key("size_bucket").integer(a.bucket);
    w->key("algo").string(a.algo);
    w->key("proto").string(a.proto);
    w->key("calls").unsigned_integer(a.calls);
    w->key("channels").share(a.channels);
    w->key("gpu_s").seconds(a.gpu_s);
    w->key("busbw_gbps").share(a.busbw_gbps);
    w->end_object();
  }
  w->end_array();
  w->key("communicators").begin_array();
  for (const CommunicatorRow& m : c.communicators) {
    w->begin_object();
    w->key("nranks").integer(m.nranks);
    w->key("rank").integer(m.rank);
    w->key("device").integer(m.device);
    w->key("alive").boolean(m.alive);
    w->key("aborted").boolean(m.aborted);
    w->end_object();
  }
  w->end_array();
  w->key("env").begin_object();
  for (const auto& [k, v] : c.env) w->key(k.c_str()).string(v);
  w->end_object();
  w->key("warnings").begin_array();
  for (const std::string& s : c.warnings) w->string(s);
  w->end_array();
  w->end_object();
}

// The "collectives" member's object `f` (present: true).
CollectivesSection read_collectives(const detail::Fields& f);

}  // namespace report
}  // namespace gpuslack

// See collectives_json.h.
#include "report/collectives_json.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "report/json_reader.h"

namespace gpuslack {
namespace report {

using detail::Fields;

std::string comm_hash_hex(uint64_t h) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) out[static_cast<size_t>(i)] = kDigits[h & 0xF];
  return out;
}

CollectivesSection read_collectives(const Fields& f) {
  CollectivesSection c;
  c.present = true;
  c.nccl_version = f.whole("nccl_version");
  c.timing_every = f.whole("timing_every", 1);
  c.host_s = f.number("host_s");
  c.host_share = f.number("host_share");
  c.gpu_s_estimated = f.number("gpu_s_estimated");
  c.gpu_share = f.number("gpu_share");
  c.gpu_estimate_timed = f.count("gpu_estimate_timed");
  c.gpu_estimate_devices = f.whole("gpu_estimate_devices", 1);
  c.gpu_estimate_capped = f.flag("gpu_estimate_capped");
  c.pending = f.count("pending");
  c.dropped = f.count("dropped");
  f.each("rows", [&](const JsonValue& item, const std::string& at) {
    Fields r(item, at);
    CollectiveRow row;
    row.op = r.text("op");
    row.datatype = r.text("datatype");
    row.bucket = r.whole("size_bucket");
    if (row.bucket < 0 || row.bucket > 63) r.bad("size_bucket", "an integer in [0, 63]");
    row.nranks = r.whole("nranks");
    row.count = r.count("count");
    row.captured = r.count("captured");
    row.timed = r.count("timed");
    // Older summaries lack the flag: the same rule (Note [Captured collectives]).
    row.mostly_captured = r.flag("mostly_captured") || (row.captured > 0 && row.captured * 2 > row.count);
    row.bytes = r.count("bytes");
    row.host_s = r.number("host_s");
    row.gpu_s = r.number("gpu_s");
    if (r.get("gpu_s_estimated")) {
      row.gpu_s_estimated = r.number("gpu_s_estimated");
    } else if (row.timed > 0) {  // older summaries: the figure they scaled their total from
      uint64_t timeable = row.count - std::min(row.count, row.captured);
      row.gpu_s_estimated = row.gpu_s * static_cast<double>(timeable) / static_cast<double>(row.timed);
    }
    row.gpu_typical_s = r.number("gpu_typical_s");  // 0 in older summaries: unknown
    row.gpu_p50_s = r.number("gpu_p50_s");
    row.gpu_p99_s = r.number("gpu_p99_s");
    row.algbw_gbps = r.number("algbw_gbps");
    row.busbw_gbps = r.number("busbw_gbps");
    row.expected_busbw_gbps = r.number("expected_busbw_gbps");
    row.expected_from = r.text("expected_from");
    row.best_algo = r.text("best_algo");
    row.best_proto = r.text("best_proto");
    row.best_channels = r.whole("best_channels");
    row.best_time_s = r.number("best_time_s");
    row.chosen_time_s = r.number("chosen_time_s");
    // Summaries before NCCL's profiler plugin lack these: unknown.
    row.algo = r.get("algo") ? r.text("algo") : "";
    row.proto = r.get("proto") ? r.text("proto") : "";
    row.channels = r.number("channels");
    row.nnodes = r.whole("nnodes");
    c.rows.push_back(std::move(row));
  });
  c.profiler = f.get("profiler") ? f.text("profiler") : "";
  c.profiler_records = f.count("profiler_records");
  c.profiler_dropped = f.count("profiler_dropped");
  f.each("algorithms", [&](const JsonValue& item, const std::string& at) {
    Fields a(item, at);
    AlgoProtoRow row;
    const std::string hash = a.text("comm_hash");
    row.comm_hash = std::strtoull(hash.c_str(), nullptr, 16);
    row.nranks = a.whole("nranks");
    row.nnodes = a.whole("nnodes");
    row.op = a.text("op");
    row.bucket = a.whole("size_bucket");
    if (row.bucket < 0 || row.bucket > 63) a.bad("size_bucket", "an integer in [0, 63]");
    row.algo = a.text("algo");
    row.proto = a.text("proto");
    row.calls = a.count("calls");
    row.channels = a.number("channels");
    row.gpu_s = a.number("gpu_s");
    row.busbw_gbps = a.number("busbw_gbps");
    c.algorithms.push_back(std::move(row));
  });
  f.each("communicators", [&](const JsonValue& item, const std::string& at) {
    Fields m(item, at);
    CommunicatorRow row;
    row.nranks = m.whole("nranks");
    row.rank = m.whole("rank", -1);
    row.device = m.whole("device", -1);
    row.alive = m.get("alive") ? m.flag("alive") : true;
    row.aborted = m.flag("aborted");
    c.communicators.push_back(row);
  });
  const JsonValue* env = nullptr;
  if (f.object("env", &env)) {
    Fields e(*env, f.where("env"));
    for (size_t i = 0; i < env->keys().size(); ++i) {
      if (!env->items()[i].is_string()) e.bad(env->keys()[i].c_str(), "a string");
      c.env.emplace_back(env->keys()[i], env->items()[i].text());
    }
  }
  c.warnings = f.strings("warnings");
  return c;
}

}  // namespace report
}  // namespace gpuslack

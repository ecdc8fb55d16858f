// The collectives rows' expectations (collective_expectations.h).
#include "report/collective_expectations.h"

#include <cmath>
#include <string_view>

#include "absl/strings/str_format.h"

namespace gpuslack {
namespace report {
namespace {

// The knob's value, split at '+': the link within a node and the network's
// (either null). Unknown words name nothing (config/options.cc refuses them
// with its own line before a summary is made).
void fabric_links(std::string_view knob, const nccl::LinkKind** node, const nccl::LinkKind** network) {
  *node = *network = nullptr;
  if (knob.empty() || knob == "auto") return;
  while (!knob.empty()) {
    size_t plus = knob.find('+');
    const nccl::LinkKind* k = nccl::find_link_kind(knob.substr(0, plus));
    if (k) (k->network ? *network : *node) = k;
    knob = plus == std::string_view::npos ? std::string_view() : knob.substr(plus + 1);
  }
}

std::string env_value(const CollectivesSection& c, const char* name) {
  for (const auto& kv : c.env)
    if (kv.first == name) return kv.second;
  return std::string();
}

// The links the shape needs, each from the knob or the topology; false with
// *why when one it needs is unknown.
bool links_for(const Summary& s, const ExpectationKnobs& knobs, const nccl::Shape& shape, nccl::Links* out,
               std::string* from, std::string* why) {
  const nccl::LinkKind *node = nullptr, *network = nullptr;
  fabric_links(knobs.fabric, &node, &network);
  const TopologyLinks& t = s.topology.links;
  nccl::Links l;
  std::string parts;
  if (shape.ranks_per_node > 1) {
    if (node) {
      l.intra_gbps = node->line_gbps;
      l.intra_is_nvlink = node->nvlink;
      parts = "within a node: knob: fabric=" + knobs.fabric;
    } else if (t.intra_gbps > 0) {
      l.intra_gbps = t.intra_gbps;
      l.intra_is_nvlink = t.intra_is_nvlink;
      parts = "within a node: " + (t.intra_from.empty() ? std::string("measured") : t.intra_from);
    } else {
      *why = "unknown: the link within a node (" + (t.intra_from.empty() ? std::string("no topology") : t.intra_from) +
             ")";
      return false;
    }
  }
  if (shape.nodes > 1) {
    if (!parts.empty()) parts += "; ";
    if (network) {
      l.inter_gbps = network->line_gbps;
      parts += "between nodes: knob: fabric=" + knobs.fabric;
    } else if (t.inter_gbps > 0) {
      l.inter_gbps = t.inter_gbps;
      parts += "between nodes: " + (t.inter_from.empty() ? std::string("measured") : t.inter_from);
    } else {
      *why = "unknown: the network between nodes (" +
             (t.inter_from.empty() ? std::string("no topology") : t.inter_from) + ")";
      return false;
    }
  }
  *out = l;
  *from = parts;
  return true;
}

// What NCCL chose for the row: the row's own (the profiler plugin), else
// NCCL_ALGO / NCCL_PROTO when each names one choice.
bool chosen_of(const CollectivesSection& c, const CollectiveRow& r, nccl::Algo* algo, nccl::Proto* proto,
               std::string* how) {
  if (!r.algo.empty() && !r.proto.empty()) {
    if (!nccl::parse_algo(r.algo.c_str(), algo) || !nccl::parse_proto(r.proto.c_str(), proto)) return false;
    *how = "NCCL's choice " + r.algo + "/" + r.proto;
    return true;
  }
  std::string a = env_value(c, "NCCL_ALGO"), p = env_value(c, "NCCL_PROTO");
  if (a.empty() || p.empty() || !nccl::parse_algo(a.c_str(), algo) || !nccl::parse_proto(p.c_str(), proto))
    return false;
  *how = "NCCL_ALGO=" + a + ", NCCL_PROTO=" + p + " in force";
  return true;
}

}  // namespace

bool collective_op_of(const std::string& name, nccl::CollectiveOp* out) {
  for (int i = 0; i < nccl::kCollectiveOpCount; ++i) {
    auto op = static_cast<nccl::CollectiveOp>(i);
    if (name == nccl::collective_op_name(op)) return *out = op, true;
  }
  return false;
}

bool communicator_shape(const Summary& s, const CollectiveRow& r, nccl::Shape* out, std::string* from) {
  const int n = r.nranks;
  if (n <= 1) {
    *from = "unknown: the communicator's size";
    return false;
  }
  if (r.nnodes > 0 && n % r.nnodes == 0) {
    *out = {r.nnodes, n / r.nnodes};
    *from = "NCCL";
    return true;
  }
  const TopologyLinks& t = s.topology.links;
  if (t.nodes > 0 && t.ranks_per_node > 0) {
    std::string how = t.shape_from.empty() ? std::string("topology") : t.shape_from;
    if (n == t.nodes * t.ranks_per_node) {
      *out = {t.nodes, t.ranks_per_node};
      *from = how;
      return true;
    }
    if (t.nodes == 1 && n <= t.ranks_per_node) {
      *out = {1, n};
      *from = how;
      return true;
    }
  }
  int here = 0;
  for (const CommunicatorRow& c : s.collectives.communicators)
    if (c.nranks == n) ++here;
  if (here >= n) {
    *out = {1, n};
    *from = "this process holds every rank";
    return true;
  }
  *from = "unknown: the communicator's nodes";
  return false;
}

void apply_collective_expectations(Summary* s, const ExpectationKnobs& knobs) {
  for (CollectiveRow& r : s->collectives.rows) {
    r.expected_busbw_gbps = r.best_time_s = r.chosen_time_s = 0;
    r.best_channels = 0;
    r.best_algo.clear();
    r.best_proto.clear();
    if (knobs.expected_busbw_gbps > 0) {
      r.expected_busbw_gbps = knobs.expected_busbw_gbps;
      r.expected_from = "knob: expected_busbw_gbps";
      continue;
    }
    nccl::CollectiveOp op;
    nccl::Shape shape;
    nccl::Links links;
    std::string shape_from, links_from;
    if (!collective_op_of(r.op, &op)) {
      r.expected_from = "unknown: the operation";
      continue;
    }
    if (!communicator_shape(*s, r, &shape, &shape_from)) {
      r.expected_from = shape_from;
      continue;
    }
    if (!links_for(*s, knobs, shape, &links, &links_from, &r.expected_from)) continue;
    const uint64_t bytes = r.count > 0 ? r.bytes / r.count : uint64_t{1} << r.bucket;
    nccl::Choice best = nccl::best_choice(op, bytes, shape, links);
    std::string where = absl::StrFormat("%s; %d node%s x %d ranks (%s)", links_from, shape.nodes,
                                        shape.nodes == 1 ? "" : "s", shape.ranks_per_node, shape_from);
    if (!best.cost.valid) {
      r.expected_from = "unknown: not modeled (" + where + ")";
      continue;
    }
    r.best_algo = nccl::algo_name(best.algo);
    r.best_proto = nccl::proto_name(best.proto);
    r.best_time_s = best.cost.time_s;
    r.best_channels = best.cost.channels;
    nccl::Algo algo;
    nccl::Proto proto;
    std::string how;
    nccl::Cost chosen;
    if (chosen_of(s->collectives, r, &algo, &proto, &how)) {
      chosen = nccl::collective_cost(op, bytes, algo, proto, shape, links, static_cast<int>(std::lround(r.channels)));
    }
    if (chosen.valid) {
      r.expected_busbw_gbps = chosen.busbw_gbps;
      r.chosen_time_s = chosen.time_s;
      r.expected_from = where + "; for " + how;
    } else {
      r.expected_busbw_gbps = best.cost.busbw_gbps;
      r.expected_from = where + "; NCCL's choice unknown: for the model's own, " + r.best_algo + "/" + r.best_proto;
    }
  }
}

}  // namespace report
}  // namespace gpuslack

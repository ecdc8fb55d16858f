// libnccl.so.2 of the simulated device: the fabric a communicator runs on
// (README.md, "NCCL", "Fabric") and NCCL's choice of algorithm and
// protocol for each call, timed by the product's own cost model
// (lib/nccl/cost_model.h, compiled into this library).
//
// The links come from the GPUSIM_* fabric knobs (sim.h Config), the shape
// from the nodes of the communicator's ranks, the choice from NCCL_ALGO,
// NCCL_PROTO and GPUSIM_NCCL_ALGO_DEFAULT (nccl_tuning.h): all read once,
// so every rank of a collective, in any process of one job, decides alike.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "nccl_internal.h"
#include "nccl_tuning.h"

namespace ncclsim {

namespace gn = gpuslack::nccl;

namespace {

struct Tuning {
  tuning::Enabled enabled;
  std::string error;
};

const Tuning& tuning_state() {
  static const Tuning* t = [] {
    auto* s = new Tuning();
    for (const char* var : {"NCCL_PROTO", "NCCL_ALGO"}) {
      const char* v = std::getenv(var);
      if (!v || s->error.size()) continue;
      if (!tuning::parse_list(v, var[5] == 'A', &s->enabled, &s->error))
        std::fprintf(stderr, "gpusim: nccl: %s\n", s->error.c_str());
    }
    return s;
  }();
  return *t;
}

// The links one rank uses, per direction (cost_model.h, Links). Without
// NVLink the intra-node link is PCIe at nccl_gbps, as the one-link model
// has it; the network defaults to the same figure.
gn::Links fabric_links() {
  const gpusim::Config& cfg = gpusim::config();
  gn::Links l;
  l.intra_is_nvlink = cfg.nvlink_links > 0;
  l.intra_gbps = l.intra_is_nvlink ? cfg.nvlink_links * gpusim::nvlink_link_gbps(cfg.nvlink_version) : cfg.nccl_gbps;
  l.inter_gbps = cfg.net_gbps > 0 ? cfg.net_gbps : cfg.nccl_gbps;
  l.inter_latency_us = cfg.net_latency_us;
  return l;
}

gn::CollectiveOp op_of(Kind k) {
  switch (k) {
    case Kind::kAllReduce: return gn::CollectiveOp::kAllReduce;
    case Kind::kBroadcast: return gn::CollectiveOp::kBroadcast;
    case Kind::kReduce: return gn::CollectiveOp::kReduce;
    case Kind::kAllGather: return gn::CollectiveOp::kAllGather;
    case Kind::kReduceScatter: return gn::CollectiveOp::kReduceScatter;
    case Kind::kAlltoAll: return gn::CollectiveOp::kAlltoAll;
    case Kind::kGather: return gn::CollectiveOp::kGather;
    case Kind::kScatter: return gn::CollectiveOp::kScatter;
    case Kind::kSend: return gn::CollectiveOp::kSend;
    case Kind::kRecv: return gn::CollectiveOp::kRecv;
  }
  return gn::CollectiveOp::kAllReduce;
}

// One stderr line per function and kind of fallback (nccl_tuning.h).
void say_fallback(int func, bool algo, const tuning::Decision& d) {
  static std::atomic<unsigned> said{0};
  if (func < 0) return;
  const unsigned bit = 1u << (func * 2 + (algo ? 0 : 1));
  if (said.fetch_or(bit) & bit) return;
  std::fprintf(stderr,
               "gpusim: nccl: %s leaves %s no modeled %s; running %s/%s (real NCCL fails such a call: "
               "\"no algorithm/protocol available\")\n",
               algo ? "NCCL_ALGO" : "NCCL_PROTO", tuning::kFuncNames[func], algo ? "algorithm" : "protocol",
               gn::algo_name(d.algo), gn::proto_name(d.proto));
}

}  // namespace

const std::string& tuning_error() { return tuning_state().error; }

bool debug() {
  static const bool on = [] {
    const char* v = std::getenv("GPUSIM_NCCL_DEBUG");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

gn::Shape shape_of(const std::vector<int>& nodes) {
  std::map<int, int> per_node;
  for (int n : nodes) ++per_node[n];
  gn::Shape s;
  s.nodes = std::max<int>(1, static_cast<int>(per_node.size()));
  s.ranks_per_node = 1;
  for (const auto& [node, ranks] : per_node) s.ranks_per_node = std::max(s.ranks_per_node, ranks);
  return s;
}

void choose(Work* w, const gn::Shape& shape) {
  const gpusim::Config& cfg = gpusim::config();
  const gn::CollectiveOp op = op_of(w->kind);
  const uint64_t bytes = gn::collective_bytes(op, w->count, type_size(w->type), shape.nranks());
  const tuning::Decision d =
      tuning::choose(op, bytes, shape, fabric_links(), tuning_state().enabled, cfg.nccl_ring_default);
  const int func = tuning::func_of(op);
  if (d.algo_fallback) say_fallback(func, true, d);
  if (d.proto_fallback) say_fallback(func, false, d);
  w->algo = gn::algo_name(d.algo);
  w->proto = gn::proto_name(d.proto);
  w->channels = std::max(1, d.cost.channels);
  w->fabric_us = cfg.fabric && d.cost.valid && func >= 0 ? d.cost.time_s * 1e6 : 0;
}

}  // namespace ncclsim

// A stand-in for lib/nccl/cost_model.cc while that file is not in this tree
// (engineer M writes it; tests/simcuda/CMakeLists.txt compiles this only
// when it is absent). The same shape of model, from NCCL's tuning.cc
// (ncclTopoTuneModel, NCCL 2.28): per-algorithm and per-protocol bandwidth
// factors and latencies; no link-efficiency calibration. Delete once
// cost_model.cc lands.
#include <algorithm>
#include <cmath>
#include <strings.h>

#include "nccl/cost_model.h"

namespace gpuslack {
namespace nccl {

const char* algo_name(Algo a) { return a == Algo::kTree ? "Tree" : "Ring"; }
const char* proto_name(Proto p) { return p == Proto::kLL ? "LL" : p == Proto::kLL128 ? "LL128" : "Simple"; }

bool parse_algo(const char* name, Algo* out) {
  if (!name) return false;
  if (strcasecmp(name, "Ring") == 0) return *out = Algo::kRing, true;
  if (strcasecmp(name, "Tree") == 0) return *out = Algo::kTree, true;
  return false;
}

bool parse_proto(const char* name, Proto* out) {
  if (!name) return false;
  if (strcasecmp(name, "LL") == 0) return *out = Proto::kLL, true;
  if (strcasecmp(name, "LL128") == 0) return *out = Proto::kLL128, true;
  if (strcasecmp(name, "Simple") == 0) return *out = Proto::kSimple, true;
  return false;
}

Cost collective_cost(CollectiveOp op, uint64_t bytes, Algo algo, Proto proto, const Shape& shape, const Links& links,
                     int channels) {
  Cost c;
  const int n = shape.nranks(), nodes = std::max(1, shape.nodes), ppn = std::max(1, shape.ranks_per_node);
  if (n < 1 || links.intra_gbps <= 0 || (nodes > 1 && links.inter_gbps <= 0)) return c;
  if (algo == Algo::kTree && op != CollectiveOp::kAllReduce) return c;
  const int p = static_cast<int>(proto);
  // hwLat (µs) per link kind [NVLink, PCI, NET] per protocol, and baseLat.
  static constexpr double kRingLat[3][3] = {{.6, 1.9, 3.4}, {1.0, 2.5, 5.7}, {2.7, 4.0, 14.0}};
  static constexpr double kTreeLat[3][3] = {{.6, 1.25, 4.0}, {1.0, 1.9, 4.0}, {5.0, 8.5, 14.0}};
  static constexpr double kBase[2][3] = {{6.6, 14.0, 8.4}, {6.8, 14.0, 8.4}};
  const int intra_hw = links.intra_is_nvlink ? 0 : 1;
  double intra_lat = links.intra_latency_us > 0 ? links.intra_latency_us
                                                : (algo == Algo::kRing ? kRingLat : kTreeLat)[intra_hw][p];
  double inter_lat = links.inter_latency_us > 0 ? links.inter_latency_us
                                                : (algo == Algo::kRing ? kRingLat : kTreeLat)[2][p];
  const double factor = bus_factor(op, n);
  double bus;  // GB/s
  double lat = kBase[algo == Algo::kTree][p];
  if (algo == Algo::kRing) {
    bus = nodes > 1 ? std::min(links.intra_gbps, links.inter_gbps) : links.intra_gbps;
    if (proto == Proto::kLL) bus *= 0.5;
    if (proto == Proto::kLL128) bus *= 0.92;
    const int steps = op == CollectiveOp::kAllReduce ? 2 * (n - 1) : n - 1;
    const int inter_steps = nodes == 1 ? 0 : op == CollectiveOp::kAllReduce ? 2 * (nodes - 1) : nodes - 1;
    lat += (steps - inter_steps) * intra_lat + inter_steps * inter_lat;
  } else {
    bus = nodes > 1 ? std::min(links.intra_gbps, links.inter_gbps * ppn) : links.intra_gbps;
    bus *= 0.92;
    if (proto == Proto::kLL) bus /= 3.8;
    if (proto == Proto::kLL128) bus *= nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0;
    lat += 2 * ((ppn - 1) * intra_lat + std::log2(static_cast<double>(nodes)) * inter_lat);
  }
  c.time_s = lat * 1e-6 + static_cast<double>(bytes) * (factor > 0 ? factor : 1) / (bus * 1e9);
  if (algo == Algo::kTree) c.time_s = lat * 1e-6 + static_cast<double>(bytes) * 2 / (bus * 1e9);
  c.busbw_gbps = c.time_s > 0 ? static_cast<double>(bytes) * factor / c.time_s / 1e9 : 0;
  c.channels = channels > 0 ? channels : 8;
  c.valid = true;
  return c;
}

Choice best_choice(CollectiveOp op, uint64_t bytes, const Shape& shape, const Links& links) {
  Choice best;
  bool found = false;
  for (Algo a : {Algo::kRing, Algo::kTree})
    for (Proto p : {Proto::kLL, Proto::kLL128, Proto::kSimple}) {
      Cost c = collective_cost(op, bytes, a, p, shape, links);
      if (!c.valid || (found && !(c.time_s < best.cost.time_s))) continue;
      found = true;
      best.algo = a;
      best.proto = p;
      best.cost = c;
    }
  return best;
}

}  // namespace nccl
}  // namespace gpuslack

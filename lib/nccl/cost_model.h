// What a collective should cost: NCCL's own tuning model (src/graph/tuning.cc,
// ncclTopoTuneModel: a latency and a bandwidth per collective, algorithm and
// protocol), on the links of a communicator of `nodes` × `ranks_per_node`.
// The simulated NCCL times its collectives with the same functions
// (tests/simcuda/README.md, "NCCL"), so the product's expectation and the
// simulated device agree by construction there; on a real GPU the model is
// what NCCL itself believes, calibrated per link from published nccl-tests
// figures (cost_model.cc, Note [Link efficiency]).
//
//   time(op, S, algo, proto) = latency(algo, proto, shape)
//                              + S / algbw(op, algo, proto, shape, links)
//
// Ring: 2(n−1)/n · S over its slowest link (the network once the ring leaves
// the node) plus (2(n−1) steps) × the per-hop latency. Tree: a chain within
// each node and a double binary tree across nodes; its bandwidth is the
// node's share of the network (ranks_per_node NICs) against NVLink. LL, LL128
// and Simple scale bandwidth and latency as NCCL's model does.
//
// Names are NCCL's own spellings, as NCCL_ALGO / NCCL_PROTO take them and as
// its profiler plugin reports them: "Ring", "Tree"; "LL", "LL128", "Simple".
//
// Thread safety: pure functions; no allocation, no I/O. Depends on nothing of
// gpuslack but collectives.h's CollectiveOp, so the simulated NCCL may
// compile it.
#pragma once

#include <cstdint>
#include <string_view>

#include "nccl/collectives.h"

namespace gpuslack {
namespace nccl {

enum class Algo : uint8_t { kRing, kTree };
enum class Proto : uint8_t { kLL, kLL128, kSimple };
inline constexpr int kAlgoCount = 2;
inline constexpr int kProtoCount = 3;

const char* algo_name(Algo a);    // "Ring", "Tree"
const char* proto_name(Proto p);  // "LL", "LL128", "Simple"
// By NCCL's spelling, case-insensitive; false for anything else (CollNet,
// NVLS, PAT: not modeled).
bool parse_algo(const char* name, Algo* out);
bool parse_proto(const char* name, Proto* out);

// The raw links one rank can use, per direction, GB/s (1e9 bytes/s): within
// its node (NVLink: links × per-link rate; PCIe otherwise) and to the network
// (the NICs' rate shared by the node's GPUs: one 400 Gb/s NIC per GPU is 50).
// Latencies per hop in µs; 0 takes NCCL's hwLat for the link kind.
struct Links {
  double intra_gbps = 0;
  double inter_gbps = 0;
  double intra_latency_us = 0;
  double inter_latency_us = 0;
  bool intra_is_nvlink = true;  // NVLink's latencies, else PCIe's
};

// Note [Link efficiency] (cost_model.cc): the links the model knows, with
// their line rate and the bus bandwidth nccl-tests reaches over them; the
// `fabric` knob names them (findings/fabric.h), and a link the topology
// measured takes the efficiency (busbw / line rate) of the nearest of its
// kind. One table for both, so the knob and the topology judge alike.
struct LinkKind {
  const char* name;    // the knob's word: "nvlink4"; nullptr ends the table
  bool network;        // between nodes (ib*, roce*); else within a node
  bool nvlink;         // NVLink (its latencies, LL128); else PCIe or a NIC
  double line_gbps;    // one GPU's line rate (its share of the NICs), per direction, GB/s
  double busbw_gbps;   // nccl-tests' bus bandwidth a healthy link sustains at large sizes
  const char* what;    // "NVLink 4 (H100/H200 SXM, NVSwitch)"
};
const LinkKind* link_kinds();                           // the table
const LinkKind* find_link_kind(std::string_view name);  // nullptr: not in it
// busbw / line rate of the table's link nearest to `line_gbps` of that kind
// (network; NVLink or PCIe within a node): what fraction a link sustains.
double link_efficiency(bool network, bool nvlink, double line_gbps);
// The Links a knob's pair names (either may be null): line rates.
Links links_of(const LinkKind* node, const LinkKind* network);

struct Shape {
  int nodes = 1;
  int ranks_per_node = 1;
  int nranks() const { return nodes * ranks_per_node; }
};

struct Cost {
  double time_s = 0;      // one call
  double busbw_gbps = 0;  // nccl-tests' bus bandwidth the call would reach
  int channels = 0;       // channels the model assumed
  bool valid = false;     // false: the op, algorithm or shape is not modeled
};

// One call of `bytes` (nccl-tests' S, collectives.h) of `op` by `algo` and
// `proto` on `shape` over `links`. Tree is modeled for all-reduce only (as
// NCCL uses it); other ops are Ring's. `channels` 0 takes the model's own
// count (NCCL's: enough to fill the links).
Cost collective_cost(CollectiveOp op, uint64_t bytes, Algo algo, Proto proto, const Shape& shape, const Links& links,
                     int channels = 0);

// nccl-tests' bus bandwidth a healthy link sustains for Ring/Simple on
// `shape`: the node's link within one node, the slower of the two across
// nodes; 0 when a link it needs is unknown. (Point-to-point ops are judged
// against it.)
double link_busbw(const Shape& shape, const Links& links);

struct Choice {
  Algo algo = Algo::kRing;
  Proto proto = Proto::kSimple;
  Cost cost;
};

// The algorithm and protocol with the least time for this call, as NCCL's
// tuner picks among the modeled ones (ties: Ring before Tree, Simple last).
Choice best_choice(CollectiveOp op, uint64_t bytes, const Shape& shape, const Links& links);

}  // namespace nccl
}  // namespace gpuslack

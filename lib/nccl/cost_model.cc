// NCCL's tuning model on a communicator's links (cost_model.h).
//
// The reference is NCCL's src/graph/tuning.cc (ncclTopoTuneModel and
// ncclTopoGetAlgoTime, NCCL 2.19-2.28; the constants are those of
// ncclTunerConstantsDefaults in 2.27+): a latency per (collective,
// algorithm, protocol) from baseLat + per-hop hwLat, and a bandwidth from the
// links' bandwidth times the channels, refined per algorithm and protocol.
// Where NCCL reads the link bandwidth its topology search found per channel
// (graphs[a]->bwIntra/bwInter × nChannels), this model takes the links the
// topology measured (Links), times the efficiency nccl-tests reaches over
// them (Note [Link efficiency]).
//
// Two departures, both where NCCL reads a figure this model cannot see:
//   - Ring across nodes runs at one rank's share of the network (the ring
//     leaves the node over the NIC of the GPU at its edge), Tree at the
//     node's NICs together (ranks_per_node × inter: the double binary tree
//     sends each node's data once up and once down, NCCL's 0.5 ratio),
//     against the node's own link for the chain within it. NCCL 2.2x
//     computes both from the graph search's per-channel figures, which for
//     2 nodes are the intra-node ones (tuning.cc: "nNodes <= 2 ?
//     bwIntra : bwInter"); here the network bounds both, as the field
//     reports of issue 26 show it does.
//   - The GPU generation (NCCL's compCapIndex for its per-channel caps) is
//     inferred from the NVLink rate: 900 GB/s Blackwell, 450 Hopper, less
//     Ampere; PCIe-only nodes take Hopper's (their link binds long before).
#include "nccl/cost_model.h"

#include <algorithm>
#include <cmath>
#include <strings.h>

namespace gpuslack {
namespace nccl {
namespace {

constexpr int kRing = static_cast<int>(Algo::kRing);
constexpr int kTree = static_cast<int>(Algo::kTree);
constexpr int kLL = static_cast<int>(Proto::kLL);
constexpr int kLL128 = static_cast<int>(Proto::kLL128);
constexpr int kSimple = static_cast<int>(Proto::kSimple);

// tuning.cc, baseLatencies (µs), [algo][proto]; our order Ring, Tree and
// LL, LL128, Simple. NCCL: Tree {6.8, 14.0, 8.4}, Ring {6.6, 14.0, 8.4}.
constexpr double kBaseLatUs[kAlgoCount][kProtoCount] = {{6.6, 14.0, 8.4}, {6.8, 14.0, 8.4}};

// tuning.cc, hwLatencies (µs per hop), [NVLink, PCI, NET][algo][proto].
enum Hw { kHwNvlink, kHwPci, kHwNet };
constexpr double kHwLatUs[3][kAlgoCount][kProtoCount] = {
    /* NVLink */ {{0.6, 1.9, 3.4}, {0.6, 1.25, 4.0}},
    /* PCI */ {{1.0, 2.5, 5.7}, {1.0, 1.9, 4.0}},
    /* NET */ {{2.7, 4.0, 14.0}, {5.0, 8.5, 14.0}},
};

// tuning.cc, getNetOverhead(): 1 µs per network post on x86 Intel (2 on
// AMD), three times that for Simple; a ring across nodes pays it per step.
constexpr double kNetOverheadUs = 1.0;

// Per-channel caps (GB/s) of tuning.cc, per GPU generation (NCCL's
// compCapIndex) and tuning scale (1 node, 2 nodes, more):
// perChMaxTreeBws, perChMaxRingLL128Bws, perChMaxTreeLL128Bws; llMaxBws
// (for one node by generation, across nodes by CPU: Intel's row).
enum Gen { kAmpere, kHopper, kBlackwell };
constexpr double kPerChTreeBw[3][3] = {{24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {2 * 38.7, 2 * 41.4, 2 * 36.0}};
constexpr double kPerChRingLL128Bw[3] = {20.0, 36.7, 2 * 36.7};
constexpr double kPerChTreeLL128Bw[3][3] = {{20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {2 * 36.7, 2 * 36.7, 2 * 29.0}};
constexpr double kLLMaxBwOneNode[3] = {87.7, 141.0, 2 * 141.0};
constexpr double kLLMaxBwNodes[3] = {0, 39.0, 20.4};  // by scale; [0] unused
// NCCL caps nothing for Ring/Simple: each channel gets its share of the
// links from the graph search. The model needs a channel's reach to say
// when too few channels limit a call, and takes the tree's one-node
// per-channel cap as it (assumption; it only binds when the caller gives a
// channel count below what the links need).
constexpr int kMaxChannels = 32;  // NCCL's MAXCHANNELS for collectives (2.2x)

// tuning.h, treeCorrectionFactor: trees miss the model at medium sizes; NCCL
// scales their bandwidth by this, per protocol, at log2(bytes / 64) from
// 0 (64 B) to 22 (256 MiB); larger sizes take 1.
constexpr float kTreeCorrection[kProtoCount][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7, .7, .8, .9, .9, .92, .92},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
};

// Note [Link efficiency]: what nccl-tests' all_reduce_perf reaches in bus
// bandwidth at large sizes (1 GiB and more) on a healthy system, against
// the link's line rate per direction (one GPU's share for NICs). The
// efficiency busbw / line applies to any measured link of the same kind.
//   nvlink3  230 of 300 (12 × 25): 8x A100 SXM4 (DGX A100) "should reach
//            230 GB/s" (S. Jeaugey, NVIDIA, github.com/NVIDIA/nccl-tests/
//            issues/149); 232.5 measured on 8x A100 (nccl-tests/issues/175).
//   nvlink4  370 of 450 (18 × 25): 8x H100/H200 SXM: "NCCL can get an
//            effective NVLink bandwidth of 370GB/s ... with NCCL_ALGO=RING"
//            (~20% protocol overhead); all-reduce with NVLink SHARP reaches
//            ~480 (nccl-tests/issues/212); 475 measured on 8x H200
//            (nccl-tests/issues/272). 370 is what every operation reaches.
//   nvlink5  720 of 900: B200/GB200, the same ~20% overhead; 811 measured
//            for all-reduce on a GB200 NVL72 subset of 2 nodes x 4 GPUs over
//            multi-node NVLink (lixueduan.com/posts/ai/13-gb200-mnnvl-nccl-test).
//   pcie5     35 of 64 (x16 at 32 GT/s): 8x H100 PCIe with no NVLink:
//            35-45 GB/s (docs.alayanew.com, "NCCL-tests in practice", 2026).
//   pcie4     17 of 32: half of PCIe 5's, as the link rate halves.
//   ib400     40 of 50: one NDR 400 Gb/s NIC per GPU; ~80% of line rate
//            after protocol overhead, as on NVLink; 39.9-41.5 measured at
//            16-32 MiB between two H100 nodes with NCCL_ALGO=Tree
//            (github.com/NVIDIA/nccl/issues/1357), ~45 expected for
//            400 Gb/s by the reporter of nccl/issues/307.
//   ib200     20 of 25: HDR 200 Gb/s, half of NDR's.
//   roce400   40 of 50, roce200 20 of 25: the same line rates over Ethernet.
// A node with more NICs than one per GPU's share reaches more: a check
// against these misses slow collectives there rather than calling healthy
// ones slow.
const LinkKind kLinkKinds[] = {
    {"nvlink3", false, true, 300, 230, "NVLink 3 (A100 SXM, NVSwitch)"},
    {"nvlink4", false, true, 450, 370, "NVLink 4 (H100/H200 SXM, NVSwitch)"},
    {"nvlink5", false, true, 900, 720, "NVLink 5 (B200/GB200)"},
    {"pcie4", false, false, 32, 17, "PCIe 4 between GPUs, no NVLink"},
    {"pcie5", false, false, 64, 35, "PCIe 5 between GPUs, no NVLink"},
    {"ib200", true, false, 25, 20, "InfiniBand HDR 200 Gb/s, one NIC per GPU"},
    {"ib400", true, false, 50, 40, "InfiniBand NDR 400 Gb/s, one NIC per GPU"},
    {"roce200", true, false, 25, 20, "RoCE 200 Gb/s, one NIC per GPU"},
    {"roce400", true, false, 50, 40, "RoCE 400 Gb/s, one NIC per GPU"},
    {nullptr, false, false, 0, 0, nullptr},
};

bool is_point_to_point(CollectiveOp op) {
  return op == CollectiveOp::kAlltoAll || op == CollectiveOp::kGather || op == CollectiveOp::kScatter ||
         op == CollectiveOp::kSend || op == CollectiveOp::kRecv;
}

// nccl-tests' busbw / algbw (collective_ops.cc's bus_factor, here so that
// the simulated NCCL compiles this file alone).
double bus_factor_of(CollectiveOp op, int n) {
  if (op == CollectiveOp::kAllReduce) return 2.0 * (n - 1) / n;
  if (op == CollectiveOp::kReduceScatter || op == CollectiveOp::kAllGather || op == CollectiveOp::kAlltoAll ||
      op == CollectiveOp::kGather || op == CollectiveOp::kScatter)
    return (n - 1.0) / n;
  return 1;
}

int log2_floor(uint64_t v) {
  int l = -1;
  while (v) {
    v >>= 1;
    ++l;
  }
  return l;
}

Gen generation_of(const Links& links) {
  if (!links.intra_is_nvlink) return kHopper;
  if (links.intra_gbps >= 800) return kBlackwell;
  if (links.intra_gbps >= 400) return kHopper;
  return kAmpere;
}

// What one link kind sustains: its line rate × its efficiency.
double sustained(double line_gbps, bool network, bool nvlink) {
  return line_gbps > 0 ? line_gbps * link_efficiency(network, nvlink, line_gbps) : 0;
}

}  // namespace

const char* algo_name(Algo a) { return a == Algo::kTree ? "Tree" : "Ring"; }

const char* proto_name(Proto p) {
  switch (p) {
    case Proto::kLL: return "LL";
    case Proto::kLL128: return "LL128";
    case Proto::kSimple: break;
  }
  return "Simple";
}

bool parse_algo(const char* name, Algo* out) {
  if (!name) return false;
  for (Algo a : {Algo::kRing, Algo::kTree})
    if (strcasecmp(name, algo_name(a)) == 0) return *out = a, true;
  return false;
}

bool parse_proto(const char* name, Proto* out) {
  if (!name) return false;
  for (Proto p : {Proto::kLL, Proto::kLL128, Proto::kSimple})
    if (strcasecmp(name, proto_name(p)) == 0) return *out = p, true;
  return false;
}

const LinkKind* link_kinds() { return kLinkKinds; }

const LinkKind* find_link_kind(std::string_view name) {
  for (const LinkKind* k = kLinkKinds; k->name; ++k)
    if (name == k->name) return k;
  return nullptr;
}

double link_efficiency(bool network, bool nvlink, double line_gbps) {
  const LinkKind* best = nullptr;
  double best_distance = 0;
  for (const LinkKind* k = kLinkKinds; k->name; ++k) {
    if (k->network != network || (!network && k->nvlink != nvlink)) continue;
    double d = line_gbps > 0 ? std::fabs(std::log(line_gbps / k->line_gbps)) : 0;
    if (!best || d < best_distance) best = k, best_distance = d;
  }
  return best ? best->busbw_gbps / best->line_gbps : 0;
}

Links links_of(const LinkKind* node, const LinkKind* network) {
  Links l;
  if (node) {
    l.intra_gbps = node->line_gbps;
    l.intra_is_nvlink = node->nvlink;
  }
  if (network) l.inter_gbps = network->line_gbps;
  return l;
}

double link_busbw(const Shape& shape, const Links& links) {
  if (shape.nodes < 1 || shape.ranks_per_node < 1) return 0;
  double b = 1e300;
  if (shape.ranks_per_node > 1) {
    if (links.intra_gbps <= 0) return 0;
    b = std::min(b, sustained(links.intra_gbps, false, links.intra_is_nvlink));
  }
  if (shape.nodes > 1) {
    if (links.inter_gbps <= 0) return 0;
    b = std::min(b, sustained(links.inter_gbps, true, false));
  }
  return b < 1e300 ? b : 0;
}

Cost collective_cost(CollectiveOp op, uint64_t bytes, Algo algo, Proto proto, const Shape& shape, const Links& links,
                     int channels) {
  Cost cost;
  const int n = shape.nranks();
  const int nodes = shape.nodes, rpn = shape.ranks_per_node;
  if (nodes < 1 || rpn < 1 || n < 2) return cost;  // one rank: a local copy, not modeled
  const bool p2p = is_point_to_point(op);
  if (p2p && (algo != Algo::kRing || proto != Proto::kSimple)) return cost;
  if (algo == Algo::kTree && op != CollectiveOp::kAllReduce) return cost;
  // LL128: NCCL enables it by default only over NVLink (tuning.cc, "Enable
  // LL128 by default only on Volta/Ampere/Hopper+NVLink").
  if (proto == Proto::kLL128 && !links.intra_is_nvlink) return cost;

  const int a = static_cast<int>(algo), p = static_cast<int>(proto);
  const int scale = nodes == 1 ? 0 : nodes == 2 ? 1 : 2;
  const Gen gen = generation_of(links);
  const double intra = rpn > 1 ? sustained(links.intra_gbps, false, links.intra_is_nvlink) : 1e300;
  const double inter = nodes > 1 ? sustained(links.inter_gbps, true, false) : 1e300;
  if (intra <= 0 || inter <= 0) return cost;

  // The links' bus bandwidth: Ring over its slowest link, Tree's chain
  // within the node against the node's NICs together.
  const double raw = algo == Algo::kTree ? std::min(intra, rpn * inter) : std::min(intra, inter);

  // Channels: NCCL's busBw = nChannels × per-channel bandwidth; the model's
  // own count is what fills the links under the protocol's per-channel cap.
  const double per_channel = kPerChTreeBw[gen][algo == Algo::kTree ? scale : 0];
  const double ll_max = nodes == 1 ? kLLMaxBwOneNode[gen] : kLLMaxBwNodes[scale];
  const double tree_ll128_factor = nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0;
  int nch = channels;
  if (nch <= 0) {
    double need = raw / per_channel;
    if (proto == Proto::kLL128)
      need = algo == Algo::kRing ? raw * 0.92 / kPerChRingLL128Bw[gen]
                                 : raw * 0.92 * tree_ll128_factor / kPerChTreeLL128Bw[gen][scale];
    nch = std::clamp(static_cast<int>(std::ceil(need - 1e-9)), 1, kMaxChannels);
  }

  // tuning.cc's refinements, in its order.
  double bus = std::min(raw, nch * per_channel);
  if (a == kRing && p == kLL) bus = std::min(ll_max, bus * 0.5);
  if (a == kRing && p == kLL128) bus = std::min(bus * 0.92, nch * kPerChRingLL128Bw[gen]);
  if (a == kTree) bus = std::min(bus * 0.92, nch * kPerChTreeBw[gen][scale]);
  if (a == kTree && p == kLL) bus = std::min(bus / 3.8, ll_max);
  if (a == kTree && p == kLL128) bus = std::min(bus * tree_ll128_factor, nch * kPerChTreeLL128Bw[gen][scale]);

  // Bus bandwidth to algorithm bandwidth: Ring by its steps (nccl-tests'
  // bus factor), Tree by NCCL's 0.5.
  double algbw = algo == Algo::kTree ? bus * 0.5 : bus / bus_factor_of(op, n);
  if (algo == Algo::kTree) {
    int log_size = log2_floor(bytes >> 6);
    if (log_size < 0) log_size = 0;
    if (log_size < 23) algbw *= kTreeCorrection[p][log_size];
  }

  // Latency: baseLat plus the per-hop latencies of the algorithm's steps.
  const Hw intra_hw = links.intra_is_nvlink ? kHwNvlink : kHwPci;
  double intra_lat = links.intra_latency_us > 0 ? links.intra_latency_us : kHwLatUs[intra_hw][a][p];
  // One rank per node: NCCL takes Tree's network latency for Ring too.
  const double inter_lat = links.inter_latency_us > 0 ? links.inter_latency_us
                                                      : kHwLatUs[kHwNet][rpn == 1 ? kTree : a][p];
  double lat = kBaseLatUs[a][p];
  if (p2p) {
    lat += nodes > 1 ? inter_lat : intra_lat;
  } else if (algo == Algo::kTree) {
    lat += 2 * ((rpn - 1) * intra_lat + log2_floor(static_cast<uint64_t>(nodes)) * inter_lat);
  } else {
    const int nsteps = op == CollectiveOp::kAllReduce ? 2 * (n - 1)
                       : op == CollectiveOp::kReduceScatter || op == CollectiveOp::kAllGather ? n - 1
                                                                                              : n;
    if (op == CollectiveOp::kBroadcast || op == CollectiveOp::kReduce) {
      // A pipeline of n steps over the slowest hop (tuning.cc's branch for
      // rings whose channels differ; Simple takes Tree's hop latency).
      const double hop = nodes > 1 ? kHwLatUs[kHwNet][p == kSimple ? kTree : kRing][p] : intra_lat;
      lat += nsteps * (nodes > 1 && links.inter_latency_us > 0 ? links.inter_latency_us : hop);
    } else {
      if (nodes > 1) intra_lat = std::max(intra_lat, kNetOverheadUs * (p == kSimple ? 3 : 1));
      const int inter_steps = nodes == 1 ? 0 : op == CollectiveOp::kAllReduce ? 2 * (nodes - 1) : nodes - 1;
      lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
    }
    // ncclTopoGetAlgoTime: the plateau of Ring/Simple all-reduce across
    // nodes once each rank's share of a channel passes 64 bytes (×1.4 on
    // Ampere and later).
    if (p == kSimple && nodes > 1 && op == CollectiveOp::kAllReduce &&
        static_cast<double>(bytes) / (static_cast<double>(nch) * n) >= 64)
      lat *= 1.4;
  }

  cost.time_s = lat * 1e-6 + static_cast<double>(bytes) / (algbw * 1e9);
  cost.busbw_gbps = static_cast<double>(bytes) / cost.time_s / 1e9 * bus_factor_of(op, n);
  cost.channels = nch;
  cost.valid = true;
  return cost;
}

Choice best_choice(CollectiveOp op, uint64_t bytes, const Shape& shape, const Links& links) {
  Choice best;
  for (Algo a : {Algo::kRing, Algo::kTree})
    for (Proto p : {Proto::kLL, Proto::kLL128, Proto::kSimple}) {
      Cost c = collective_cost(op, bytes, a, p, shape, links);
      if (!c.valid) continue;
      if (!best.cost.valid || c.time_s < best.cost.time_s) best = {a, p, c};
    }
  return best;
}

}  // namespace nccl
}  // namespace gpuslack

// The fabric table and the communicator's shape (fabric.h).
#include "findings/fabric.h"

#include <cstring>

namespace gpuslack {
namespace findings {
namespace {

// Note [Fabric figures]: nccl-tests' all_reduce_perf bus bandwidth at large
// sizes (1 GiB and more) on a healthy system, rounded down:
//   nvlink3  230: 8x A100 SXM4 (DGX A100): "should reach 230 GB/s"
//            (S. Jeaugey, NVIDIA, github.com/NVIDIA/nccl-tests/issues/149);
//            232.5 measured on 8x A100 (nccl-tests/issues/175).
//   nvlink4  370: 8x H100/H200 SXM: "NCCL can get an effective NVLink
//            bandwidth of 370GB/s ... with NCCL_ALGO=RING" (line rate 450,
//            ~20% protocol overhead); all-reduce with NVLink SHARP reaches
//            ~480 (nccl-tests/issues/212); 475 measured on 8x H200
//            (nccl-tests/issues/272). 370 is what every operation reaches.
//   nvlink5  720: B200/GB200: line rate 900 GB/s per direction, less the
//            same ~20% protocol overhead; 811 measured for all-reduce on a
//            GB200 NVL72 subset of 2 nodes x 4 GPUs over multi-node NVLink
//            (lixueduan.com/posts/ai/13-gb200-mnnvl-nccl-test).
//   pcie5     35: 8x H100 PCIe with no NVLink: 35-45 GB/s
//            (docs.alayanew.com, "NCCL-tests in practice", 2026).
//   pcie4     17: half of PCIe 5's, as the link rate halves (16 against 32
//            GT/s per lane).
//   ib400     40: one NDR 400 Gb/s NIC (50 GB/s line rate) per GPU; ~80% of
//            line rate after protocol overhead, as on NVLink; 39.9-41.5
//            measured at 16-32 MiB between two H100 nodes with NCCL_ALGO=Tree
//            (github.com/NVIDIA/nccl/issues/1357), ~45 expected for
//            400 Gb/s by the reporter of nccl/issues/307.
//   ib200     20: HDR 200 Gb/s, half of NDR's.
//   roce400   40, roce200 20: the same line rates over Ethernet (RDMA).
// A node with more NICs than one per GPU's share reaches more: the check
// misses slow collectives there rather than calling healthy ones slow.
const Link kLinks[] = {
    {"nvlink3", false, 230, "NVLink 3 (A100 SXM, NVSwitch)"},
    {"nvlink4", false, 370, "NVLink 4 (H100/H200 SXM, NVSwitch)"},
    {"nvlink5", false, 720, "NVLink 5 (B200/GB200)"},
    {"pcie4", false, 17, "PCIe 4 between GPUs, no NVLink"},
    {"pcie5", false, 35, "PCIe 5 between GPUs, no NVLink"},
    {"ib200", true, 20, "InfiniBand HDR 200 Gb/s, one NIC per GPU"},
    {"ib400", true, 40, "InfiniBand NDR 400 Gb/s, one NIC per GPU"},
    {"roce200", true, 20, "RoCE 200 Gb/s, one NIC per GPU"},
    {"roce400", true, 40, "RoCE 400 Gb/s, one NIC per GPU"},
    {nullptr, false, 0, nullptr},
};

}  // namespace

const char* span_text(Span s) {
  switch (s) {
    case Span::kWithinNode: return "within one node";
    case Span::kAcrossNodes: return "across nodes";
    case Span::kUnknown: break;
  }
  return "shape unknown";
}

const Link* links() { return kLinks; }

const Link* find_link(std::string_view name) {
  for (const Link* l = kLinks; l->name; ++l)
    if (name == l->name) return l;
  return nullptr;
}

bool parse_fabric(std::string_view knob, Fabric* out, std::string* error) {
  *out = Fabric{};
  if (knob.empty() || knob == "auto") return true;
  Fabric f;
  for (bool more = true; more;) {
    size_t plus = knob.find('+');
    std::string_view word = knob.substr(0, plus);
    more = plus != std::string_view::npos;
    if (more) knob = knob.substr(plus + 1);
    const Link* l = find_link(word);
    if (!l) {
      *error = "fabric:" + std::string(word) + " is not one of auto, nvlink3, nvlink4, nvlink5, pcie4, pcie5, ib200, "
               "ib400, roce200, roce400 (a node's link and the network's may be joined by '+')";
      return false;
    }
    const Link*& slot = l->network ? f.network : f.node;
    if (slot) {
      *error = "fabric: names two " + std::string(l->network ? "networks" : "links within a node") + " (" +
               slot->name + ", " + l->name + ")";
      return false;
    }
    slot = l;
  }
  *out = f;
  return true;
}

Span span_of(const report::Summary& s, int nranks) {
  if (nranks <= 1) return Span::kWithinNode;
  int here = 0;
  for (const report::CommunicatorRow& c : s.collectives.communicators)
    if (c.nranks == nranks) ++here;
  if (here >= nranks) return Span::kWithinNode;
  if (s.job.node_rank > 0 && s.job.world_size == nranks) return Span::kAcrossNodes;
  return Span::kUnknown;
}

double expected_busbw(double expected_busbw_gbps, const Fabric& fabric, Span span, std::string* source) {
  if (expected_busbw_gbps > 0) {
    *source = "expected_busbw_gbps";
    return expected_busbw_gbps;
  }
  const Link* l = nullptr;
  switch (span) {
    case Span::kWithinNode: l = fabric.node; break;
    case Span::kAcrossNodes: l = fabric.network; break;
    case Span::kUnknown: l = fabric.network ? fabric.network : fabric.node; break;
  }
  if (!l) return 0;
  *source = std::string("fabric ") + l->name + ": " + l->what;
  return l->busbw_gbps;
}

}  // namespace findings
}  // namespace gpuslack

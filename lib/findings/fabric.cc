// The fabric table and the communicator's shape (fabric.h).
#include "findings/fabric.h"

#include <cstring>

namespace gpuslack {
namespace findings {

const char* span_text(Span s) {
  switch (s) {
    case Span::kWithinNode: return "within one node";
    case Span::kAcrossNodes: return "across nodes";
    case Span::kUnknown: break;
  }
  return "shape unknown";
}

const Link* links() { return nccl::link_kinds(); }

const Link* find_link(std::string_view name) { return nccl::find_link_kind(name); }

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

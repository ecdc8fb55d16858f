// The bus bandwidth a communicator should reach: the `fabric` knob's table
// of links (published nccl-tests figures, sources in nccl/cost_model.cc) and the
// shape of a communicator as far as the summary tells it.
//
// Note [Where the expected bandwidth comes from] (report/collective_expectations.h)
// gives each collectives row its own expectation; this is the fallback for
// rows without one (the shape unknown), in this order:
//   1. expected_busbw_gbps, when set: for every communicator;
//   2. the `fabric` knob: one link ("nvlink4", "ib400", ...) or a node's
//      link and the network's joined by '+' ("nvlink4+ib400"). A
//      communicator within one node expects the node's link (nvlink*,
//      pcie*); one across nodes expects the network's (ib*, roce*); one of
//      unknown shape expects the network's when both are named (the lower
//      figure: a finding may be missed, never made up), else the one named.
//      "auto" (the default) names none: no expectation, no finding.
// The figures are what a healthy link sustains in nccl-tests' bus bandwidth
// at large sizes, on the conservative side (Ring, one NIC per GPU), and the
// rule fires only below half of them (collective_rules.cc). They live in
// the cost model's table (nccl/cost_model.cc, Note [Link efficiency]).
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "nccl/cost_model.h"
#include "report/summary.h"

namespace gpuslack {
namespace findings {

// Where a communicator's ranks are.
enum class Span { kUnknown, kWithinNode, kAcrossNodes };
const char* span_text(Span s);  // "shape unknown", "within one node", "across nodes"

// The knob's links: the cost model's one table (nccl/cost_model.h, Note
// [Link efficiency] in cost_model.cc, with the published figures): name,
// network, busbw_gbps (expected nccl-tests bus bandwidth), what, and the
// line rate the model starts from.
using Link = nccl::LinkKind;

// The table, null-terminated by a Link with name == nullptr.
const Link* links();
// The link named `name`; nullptr when the table has none.
const Link* find_link(std::string_view name);

// The knob's links: within a node and between nodes (nullptr: not named).
struct Fabric {
  const Link* node = nullptr;
  const Link* network = nullptr;
};
// Parses the knob's value ("auto", "", "nvlink4", "ib400", "nvlink4+ib400").
// False with `*error` (one line) when a name is unknown or two of a kind are
// given; `*out` then names nothing.
bool parse_fabric(std::string_view knob, Fabric* out, std::string* error);

// What the summary tells of a communicator of `nranks`: within one node when
// this process holds a rank of each (every rank in this process, as
// ncclCommInitAll makes them); across nodes when the launcher says this
// process is on a node other than the first (job.node_rank > 0) and the
// communicator spans the whole job (nranks == job.world_size) so it holds a
// rank of node 0 too; else unknown. (Summary holds no local world size.)
Span span_of(const report::Summary& s, int nranks);

// The expected bus bandwidth of a communicator (Note [Where the expected
// bandwidth comes from]); 0 when none. `*source` says where it came from:
// "expected_busbw_gbps" or the link's name and what it is.
double expected_busbw(double expected_busbw_gbps, const Fabric& fabric, Span span, std::string* source);

}  // namespace findings
}  // namespace gpuslack

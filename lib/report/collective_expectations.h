// What each collectives row should have cost: the cost model
// (nccl/cost_model.h) on the communicator's links and shape, written into
// the row (CollectiveRow::expected_busbw_gbps, expected_from, best_algo,
// best_proto, best_time_s, chosen_time_s) for the writers and the findings.
//
// Note [Where the expected bandwidth comes from]: per row, in this order,
//   1. the expected_busbw_gbps knob, when set: that figure for every row,
//      no model (expected_from "knob: expected_busbw_gbps");
//   2. the links: each of the two (within a node, between nodes) from the
//      `fabric` knob where it names one ("knob: fabric=<value>"), else from
//      the topology section's measured links (TopologyLinks, its own
//      "measured: ..." words), else unknown ("unknown: ...", and no
//      expectation when the shape needs that link);
//   3. the shape: CollectiveRow::nnodes (NCCL's own, from its profiler
//      plugin) when known, else the topology's (nodes × ranks per node)
//      when the communicator spans the whole job or lies within one node of
//      it, else within one node when this process holds every rank
//      (ncclCommInitAll); else unknown, no expectation.
// The expectation is for what NCCL chose (algo/proto, its channels) when
// the row says, else for NCCL_ALGO/NCCL_PROTO when each names one choice,
// else the model's own best choice, and expected_from says which. Times
// are per call of the row's mean size (bytes / count).
//
// Thread safety: pure functions of their arguments.
#pragma once

#include <string>

#include "nccl/cost_model.h"
#include "report/summary.h"

namespace gpuslack {
namespace report {

struct ExpectationKnobs {
  double expected_busbw_gbps = 0;  // 0: from the links
  std::string fabric = "auto";     // the fabric knob: "auto", "nvlink4", "nvlink4+ib400", ...
};

// Fills every row of s->collectives (Note [Where the expected bandwidth
// comes from]); rows with no expectation keep 0 and say why in
// expected_from.
void apply_collective_expectations(Summary* s, const ExpectationKnobs& knobs);

// The communicator shape of a row; false (and *from the reason) when unknown.
bool communicator_shape(const Summary& s, const CollectiveRow& r, nccl::Shape* out, std::string* from);

// The operation a row names ("all-reduce", ...); false for anything else.
bool collective_op_of(const std::string& name, nccl::CollectiveOp* out);

}  // namespace report
}  // namespace gpuslack

// The summary's "topology" section (summary.h: TopologySection): the node
// as this rank read it (topology/topology.h) and the figures the
// collectives' model takes from it (TopologyLinks), each saying where it
// came from: "measured: <how>" or "unknown: <reason>" (the findings put
// the `fabric` knob on top, "knob: ...", never here).
//
//   intra_gbps  within the node, per direction: the NVLink links up × their
//               rate (topology/link_rates.h) of this rank's GPU (the
//               slowest, where it uses several); with no NVLink, its PCIe
//               link at most (generation × width);
//   inter_gbps  between nodes, one rank's share: the ACTIVE RDMA ports'
//               rates summed over the node (with none, the up network
//               interfaces': NCCL's sockets) / the GPUs on the node
//               (NVML's count; else the ranks on the node), Gb/s / 8;
//   nodes, ranks_per_node  the job's shape: the launcher's variables
//               (report/job.h: local_world_size, nodes, world_size), or a
//               communicator all of whose ranks this process holds (one
//               node, every rank here).
//
// Text: topology_short_line() the links and shape in one line, which both
// texts give after the findings (the short text is the full one's first
// lines); topology_lines() the full text's block further down (GPUs, NICs,
// each GPU's nearest NIC). Both empty when the section is absent.
//
// Thread safety: pure.
#pragma once

#include <string>
#include <vector>

#include "nccl/communicators.h"
#include "report/job.h"
#include "report/summary.h"

namespace gpuslack {
namespace report {

TopologySection build_topology_section(const topology::Snapshot& snapshot, const JobIdentity& job,
                                       const std::vector<nccl::CommRow>& communicators);

// The links and shape alone (a section with `node` and `status` filled).
TopologyLinks topology_links(const TopologySection& section, const JobIdentity& job,
                             const std::vector<nccl::CommRow>& communicators);

std::vector<std::string> topology_lines(const TopologySection& t);
std::string topology_short_line(const TopologySection& t);

}  // namespace report
}  // namespace gpuslack

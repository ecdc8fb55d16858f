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
#include "topology/topology.h"

namespace gpuslack {
namespace report {

// The node as topology/node.h describes it, in the report's own types,
// copied field by field at the boundary (topology_node(); Note [Counters
// copied at the boundary] in report/feature_counters.h): the topology room
// may change its structs without changing the file. topology/node.h says
// what each field means; Closeness and Status stay the room's enums,
// written by their names (closeness_name, status_name).
struct TopologyPlace {
  std::string bus_id;
  int numa_node = -1;             // -1: unknown
  std::vector<std::string> path;  // [] unknown
  std::string unknown;            // why numa_node or path is unknown
};

struct TopologyGpu {
  int device = -1;
  std::string name;
  int nvlink_links = -1;  // -1 unknown
  int nvlink_generation = 0;
  double nvlink_gbps = 0;
  int pcie_generation = 0, pcie_width = 0;
  int pcie_max_generation = 0, pcie_max_width = 0;
  double pcie_gbps = 0;
  std::vector<int> peers;
  TopologyPlace place;
  std::string unknown;
};

struct TopologyNic {
  std::string name;
  int port = 0;
  bool rdma = true;
  std::string link_layer;
  std::string netdev;
  std::string state;
  bool active = false;
  double gbit_s = 0;
  std::string rate_from;
  TopologyPlace place;
  std::string unknown;
};

struct TopologyGpuNic {
  int device = -1;
  std::string nic;
  int port = 0;
  topology::Closeness closeness = topology::Closeness::kUnknown;
};

struct TopologyNode {
  std::vector<TopologyGpu> gpus;
  std::string gpus_unknown;
  int gpus_on_node = 0;
  std::vector<TopologyNic> nics;
  std::string nics_unknown;
  std::vector<TopologyGpuNic> affinity;
  std::string sysfs_root;
  std::vector<std::string> corrupt;
};

// What the links carry for one rank, for the collectives' model
// (nccl/cost_model.h) and findings: each figure says where it came from,
// "measured: <how>" (the topology read), "knob: fabric=<v>" (the findings
// apply the knob on top) or "unknown: <reason>". report/topology.h fills it.
struct TopologyLinks {
  double intra_gbps = 0;       // one rank's link within its node, per direction, GB/s; 0 unknown
  bool intra_is_nvlink = false;
  std::string intra_from;      // "measured: <how>", "knob: fabric=<v>", "unknown: <reason>"
  double inter_gbps = 0;       // one rank's share of the node's NICs, per direction, GB/s; 0 unknown
  std::string inter_from;
  int nodes = 0, ranks_per_node = 0;  // the job's shape; 0 unknown
  std::string shape_from;
};

// The node as this rank read it (topology/topology.h) and what its links
// carry: "topology" (null when not read: device_health:off, a secure
// process).
struct TopologySection {
  bool present = false;
  topology::Status status = topology::Status::kOff;  // kRead or kNotRead when present
  std::string detail;                                // why not read
  TopologyNode node;
  TopologyLinks links;
};

TopologyNode topology_node(const topology::NodeTopology& node);

TopologySection build_topology_section(const topology::Snapshot& snapshot, const JobIdentity& job,
                                       const std::vector<nccl::CommRow>& communicators);

// The links and shape alone (a section with `node` and `status` filled).
TopologyLinks topology_links(const TopologySection& section, const JobIdentity& job,
                             const std::vector<nccl::CommRow>& communicators);

std::vector<std::string> topology_lines(const TopologySection& t);
std::string topology_short_line(const TopologySection& t);

}  // namespace report
}  // namespace gpuslack

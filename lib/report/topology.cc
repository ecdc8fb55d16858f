// See topology.h. Report time only.
#include "report/topology.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_format.h"
#include "report/units.h"

namespace gpuslack {
namespace report {
namespace {

TopologyPlace place_of(const topology::PciPlace& p) { return TopologyPlace{p.bus_id, p.numa_node, p.path, p.unknown}; }

}  // namespace

TopologyNode topology_node(const topology::NodeTopology& node) {
  TopologyNode n;
  for (const topology::Gpu& g : node.gpus)
    n.gpus.push_back(TopologyGpu{g.device, g.name, g.nvlink_links, g.nvlink_generation, g.nvlink_gbps, g.pcie_generation,
                                 g.pcie_width, g.pcie_max_generation, g.pcie_max_width, g.pcie_gbps, g.peers,
                                 place_of(g.place), g.unknown});
  n.gpus_unknown = node.gpus_unknown;
  n.gpus_on_node = node.gpus_on_node;
  for (const topology::Nic& c : node.nics)
    n.nics.push_back(TopologyNic{c.name, c.port, c.rdma, c.link_layer, c.netdev, c.state, c.active, c.gbit_s,
                                 c.rate_from, place_of(c.place), c.unknown});
  n.nics_unknown = node.nics_unknown;
  for (const topology::GpuNic& a : node.affinity) n.affinity.push_back(TopologyGpuNic{a.device, a.nic, a.port, a.closeness});
  n.sysfs_root = node.sysfs_root;
  n.corrupt = node.corrupt;
  return n;
}

namespace {

constexpr const char* kMeasured = "measured: ";
constexpr const char* kUnknown = "unknown: ";

std::string first_reason(const std::vector<TopologyGpu>& gpus) {
  for (const TopologyGpu& g : gpus)
    if (!g.unknown.empty()) return "GPU " + std::to_string(g.device) + ": " + g.unknown;
  return "NVML did not say";
}

void intra(const TopologySection& t, TopologyLinks* links) {
  const std::vector<TopologyGpu>& gpus = t.node.gpus;
  if (gpus.empty()) {
    links->intra_from = kUnknown + (t.node.gpus_unknown.empty() ? std::string("no GPU read") : t.node.gpus_unknown);
    return;
  }
  const TopologyGpu* slowest = nullptr;
  bool all_nvlink = true, all_pcie = true;
  for (const TopologyGpu& g : gpus) {
    all_nvlink = all_nvlink && g.nvlink_links > 0 && g.nvlink_gbps > 0;
    all_pcie = all_pcie && g.nvlink_links == 0 && g.pcie_gbps > 0;
  }
  if (all_nvlink) {
    for (const TopologyGpu& g : gpus)
      if (!slowest || g.nvlink_gbps < slowest->nvlink_gbps) slowest = &g;
    links->intra_gbps = slowest->nvlink_gbps;
    links->intra_is_nvlink = true;
    links->intra_from = kMeasured + absl::StrFormat("NVML: GPU %d has %d NVLink %d links up, %s each per direction",
                                                    slowest->device, slowest->nvlink_links,
                                                    slowest->nvlink_generation,
                                                    link_gbps_text(slowest->nvlink_gbps / slowest->nvlink_links));
    return;
  }
  if (all_pcie) {
    for (const TopologyGpu& g : gpus)
      if (!slowest || g.pcie_gbps < slowest->pcie_gbps) slowest = &g;
    links->intra_gbps = slowest->pcie_gbps;
    links->intra_from = kMeasured + absl::StrFormat("NVML: GPU %d has no NVLink; PCIe gen %d x%d at most",
                                                    slowest->device, slowest->pcie_max_generation,
                                                    slowest->pcie_max_width);
    return;
  }
  links->intra_from = kUnknown + first_reason(gpus);
}

void inter(const TopologySection& t, TopologyLinks* links) {
  double rdma = 0, plain = 0;
  int rdma_ports = 0, plain_ports = 0;
  std::set<std::string> layers;
  for (const TopologyNic& n : t.node.nics) {
    if (!n.active || n.gbit_s <= 0) continue;
    if (n.rdma) {
      rdma += n.gbit_s;
      ++rdma_ports;
      layers.insert(n.link_layer == "Ethernet" ? "RoCE" : n.link_layer.empty() ? "RDMA" : n.link_layer);
    } else {
      plain += n.gbit_s;
      ++plain_ports;
    }
  }
  std::string what;
  double gbit_s = 0;
  if (rdma_ports > 0) {
    std::string names;
    for (const std::string& l : layers) names += (names.empty() ? "" : "/") + l;
    gbit_s = rdma;
    what = absl::StrFormat("%d active RDMA port%s (%s), %s", rdma_ports, rdma_ports == 1 ? "" : "s", names,
                           link_gbits_text(rdma));
  } else if (plain_ports > 0) {
    gbit_s = plain;
    what = absl::StrFormat("no active RDMA port; %d network interface%s up, %s (NCCL's sockets)", plain_ports,
                           plain_ports == 1 ? "" : "s", link_gbits_text(plain));
  } else {
    std::string why = t.node.nics_unknown;
    if (why.empty()) {
      why = "no active NIC with a known rate:";
      for (const TopologyNic& n : t.node.nics) {
        why += " " + n.name + (n.rdma ? ":" + std::to_string(n.port) : "") + " " +
               (n.state.empty() ? "state unknown" : n.state);
        if (n.active && n.gbit_s <= 0) why += " (rate unknown)";
      }
    }
    links->inter_from = kUnknown + why;
    return;
  }
  int share = 0;
  std::string over;
  if (t.node.gpus_on_node > 0) {
    share = t.node.gpus_on_node;
    over = absl::StrFormat("the node's %d GPUs (NVML)", share);
  } else if (links->ranks_per_node > 0) {
    share = links->ranks_per_node;
    over = absl::StrFormat("the node's %d ranks (NVML gave no GPU count)", share);
  } else {
    links->inter_from = kUnknown + what + ", shared by an unknown number of GPUs";
    return;
  }
  links->inter_gbps = gbit_s / 8.0 / share;
  links->inter_from = kMeasured + what + " over " + over;
}

// A communicator all of whose ranks this process holds (one node): its size.
int whole_communicator_here(const std::vector<nccl::CommRow>& communicators) {
  int best = 0;
  for (const nccl::CommRow& c : communicators) {
    if (c.nranks <= 1 || !c.alive) continue;
    std::set<int> ranks, devices;
    for (const nccl::CommRow& o : communicators)
      if (o.alive && o.nranks == c.nranks) ranks.insert(o.rank), devices.insert(o.device);
    if (static_cast<int>(ranks.size()) == c.nranks && static_cast<int>(devices.size()) == c.nranks)
      best = std::max(best, c.nranks);
  }
  return best;
}

void shape(const JobIdentity& job, const std::vector<nccl::CommRow>& communicators, TopologyLinks* links) {
  int per_node = job.local_world_size > 0 ? job.local_world_size : 0;
  int nodes = job.nodes > 0 ? job.nodes : 0;
  std::string from;
  if (per_node > 0) from = job.local_world_size_from + "=" + std::to_string(per_node);
  if (nodes > 0) from += (from.empty() ? "" : ", ") + job.nodes_from + "=" + std::to_string(nodes);
  const int world = job.world_size > 0 ? job.world_size : 0;
  if (world > 0 && per_node > 0 && nodes == 0 && world % per_node == 0) {
    nodes = world / per_node;
    from += ", world size " + std::to_string(world);
  } else if (world > 0 && nodes > 0 && per_node == 0 && world % nodes == 0) {
    per_node = world / nodes;
    from += ", world size " + std::to_string(world);
  }
  if (per_node == 0 && nodes == 0) {
    if (int n = whole_communicator_here(communicators); n > 0) {
      per_node = n;
      nodes = 1;
      from = "this process holds all " + std::to_string(n) + " ranks of a communicator";
    }
  }
  links->ranks_per_node = per_node;
  links->nodes = nodes;
  if (per_node > 0 && nodes > 0) {
    links->shape_from = kMeasured + from;
  } else if (per_node > 0 || nodes > 0) {
    links->shape_from = std::string(kUnknown) + "only " + from + " (no world size to complete it)";
  } else {
    links->shape_from = std::string(kUnknown) +
                        "no launcher variable (LOCAL_WORLD_SIZE, SLURM_NTASKS_PER_NODE, OMPI_COMM_WORLD_LOCAL_SIZE, "
                        "GROUP_WORLD_SIZE, SLURM_JOB_NUM_NODES) and no communicator held whole";
  }
}

std::string place_text(const TopologyPlace& p) {
  std::string out = p.bus_id.empty() ? "PCI unknown" : p.bus_id;
  if (p.numa_node >= 0) out += ", NUMA " + std::to_string(p.numa_node);
  return out;
}

std::string gpu_line(const TopologyGpu& g) {
  std::string text = "topology: GPU " + std::to_string(g.device);
  if (!g.name.empty()) text += " " + g.name;
  text += " (" + place_text(g.place) + "):";
  if (g.nvlink_links > 0) {
    text += absl::StrFormat(" %d NVLink %s links up", g.nvlink_links,
                            g.nvlink_generation > 0 ? std::to_string(g.nvlink_generation) : "?");
    if (g.nvlink_gbps > 0) text += ", " + link_gbps_text(g.nvlink_gbps) + " per direction";
    text += ";";
  } else if (g.nvlink_links == 0) {
    text += " no NVLink;";
  }
  if (g.pcie_max_generation > 0)
    text += absl::StrFormat(" PCIe gen %d x%d at most (now gen %d x%d)", g.pcie_max_generation, g.pcie_max_width,
                            g.pcie_generation, g.pcie_width);
  if (!g.peers.empty()) {
    text += "; peer access to";
    for (int p : g.peers) text += " " + std::to_string(p);
  }
  if (!g.unknown.empty()) text += "; unknown: " + g.unknown;
  return text;
}

std::string nics_line(const TopologyNode& node) {
  if (node.nics.empty()) return "topology: NICs unknown: " + node.nics_unknown;
  int active = 0;
  bool alike = true;
  for (const TopologyNic& n : node.nics) {
    active += n.active ? 1 : 0;
    alike = alike && n.rdma == node.nics[0].rdma && n.link_layer == node.nics[0].link_layer &&
            n.gbit_s == node.nics[0].gbit_s && n.active == node.nics[0].active;
  }
  const TopologyNic& first = node.nics[0];
  std::string text = absl::StrFormat("topology: %d NIC port%s, %d active", node.nics.size(),
                                     node.nics.size() == 1 ? "" : "s", active);
  if (alike) {
    text += absl::StrFormat(": %s%s", first.rdma ? (first.link_layer == "Ethernet" ? "RoCE" : first.link_layer)
                                                 : "Ethernet (no RDMA)",
                            first.gbit_s > 0 ? " " + link_gbits_text(first.gbit_s) + " each" : "");
    return text;
  }
  text += ":";
  for (const TopologyNic& n : node.nics)
    text += " " + n.name + (n.rdma ? ":" + std::to_string(n.port) : "") + " " + (n.state.empty() ? "?" : n.state) +
            (n.gbit_s > 0 ? " " + link_gbits_text(n.gbit_s) : "") + ";";
  text.pop_back();
  return text;
}

std::string links_text(const TopologyLinks& l) {
  std::string text = "within the node ";
  text += l.intra_gbps > 0 ? link_gbps_text(l.intra_gbps) + " (" + (l.intra_is_nvlink ? "NVLink" : "PCIe") + ")"
                           : std::string("unknown");
  text += ", between nodes ";
  text += link_gbps_text(l.inter_gbps);
  text += " per rank and direction; ";
  if (l.nodes > 0 && l.ranks_per_node > 0)
    text += absl::StrFormat("%d node%s x %d rank%s", l.nodes, l.nodes == 1 ? "" : "s", l.ranks_per_node,
                            l.ranks_per_node == 1 ? "" : "s");
  else
    text += "shape unknown";
  return text;
}

}  // namespace

TopologyLinks topology_links(const TopologySection& section, const JobIdentity& job,
                             const std::vector<nccl::CommRow>& communicators) {
  TopologyLinks links;
  shape(job, communicators, &links);
  if (section.status != topology::Status::kRead) {
    const std::string why = kUnknown + (section.detail.empty() ? std::string("the topology was not read") : section.detail);
    links.intra_from = why;
    links.inter_from = why;
    return links;
  }
  intra(section, &links);
  inter(section, &links);
  return links;
}

TopologySection build_topology_section(const topology::Snapshot& snapshot, const JobIdentity& job,
                                       const std::vector<nccl::CommRow>& communicators) {
  TopologySection t;
  if (snapshot.status == topology::Status::kOff) return t;
  t.present = true;
  t.status = snapshot.status;
  t.detail = snapshot.detail;
  t.node = topology_node(snapshot.node);
  t.links = topology_links(t, job, communicators);
  return t;
}

std::vector<std::string> topology_lines(const TopologySection& t) {
  std::vector<std::string> out;
  if (!t.present) return out;
  if (t.status != topology::Status::kRead) {
    out.push_back("topology: not read: " + t.detail);
    return out;
  }
  for (const TopologyGpu& g : t.node.gpus) out.push_back(gpu_line(g));
  if (t.node.gpus.empty()) out.push_back("topology: GPUs unknown: " + t.node.gpus_unknown);
  out.push_back(nics_line(t.node));
  for (const TopologyGpuNic& a : t.node.affinity)
    out.push_back(absl::StrFormat("topology: GPU %d's nearest NIC: %s%s (%s)", a.device, a.nic,
                                  a.port > 0 ? ":" + std::to_string(a.port) : std::string(),
                                  topology::closeness_name(a.closeness)));
  return out;
}

std::string topology_short_line(const TopologySection& t) {
  if (!t.present) return std::string();
  if (t.status != topology::Status::kRead) return "topology: not read: " + t.detail;
  return "topology: " + links_text(t.links);
}

}  // namespace report
}  // namespace gpuslack

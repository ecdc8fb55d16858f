// The summary's "topology" (summary.h: TopologySection;
// docs/summary.schema.json) as JSON, and read back.
//
// The writer is a template over json.cc's Writer;
// the reader follows summary_reader.h's rules (a missing member reads as
// its default, one of another type is Malformed). Round trip:
// write(read(write(s))) == write(s). json.cc writes null when the section
// is absent.
//
// Thread safety: pure.
#pragma once

#include <string>
#include <vector>

#include "report/json_fields.h"
#include "report/summary.h"

namespace gpuslack {
namespace report {

template <typename Writer>
void write_pci_place(const TopologyPlace& p, Writer* w) {
  w->key("bus_id").string(p.bus_id);
  w->key("numa_node").integer(p.numa_node < 0 ? -1 : p.numa_node);
  w->key("pci_path").begin_array(true);
  for (const std::string& part : p.path) w->string(part);
  w->end_array();
  w->key("place_unknown").string(p.unknown);
}

template <typename Writer>
void write_topology(const TopologySection& t, Writer* w) {
  // Gb/s and GB/s: rates, written with the seconds' 9 digits.
  w->begin_object();
  w->key("status").string(topology::status_name(t.status));
  w->key("detail").string(t.detail);
  const TopologyLinks& l = t.links;
  w->key("links").begin_object();
  w->key("intra_gbps").seconds(l.intra_gbps);
  w->key("intra_is_nvlink").boolean(l.intra_is_nvlink);
  w->key("intra_from").string(l.intra_from);
  w->key("inter_gbps").seconds(l.inter_gbps);
  w->key("inter_from").string(l.inter_from);
  w->key("nodes").integer(l.nodes);
  w->key("ranks_per_node").integer(l.ranks_per_node);
  w->key("shape_from").string(l.shape_from);
  w->end_object();
  const TopologyNode& n = t.node;
  w->key("sysfs_root").string(n.sysfs_root);
  w->key("gpus_on_node").integer(n.gpus_on_node);
  w->key("gpus_unknown").string(n.gpus_unknown);
  w->key("gpus").begin_array();
  for (const TopologyGpu& g : n.gpus) {
    w->begin_object();
    w->key("device").integer(g.device);
    w->key("name").string(g.name);
    write_pci_place(g.place, w);
    w->key("nvlink_links").integer(g.nvlink_links < 0 ? -1 : g.nvlink_links);
    w->key("nvlink_generation").integer(g.nvlink_generation);
    w->key("nvlink_gbps").seconds(g.nvlink_gbps);
    w->key("pcie_generation").integer(g.pcie_generation);
    w->key("pcie_width").integer(g.pcie_width);
    w->key("pcie_max_generation").integer(g.pcie_max_generation);
    w->key("pcie_max_width").integer(g.pcie_max_width);
    w->key("pcie_gbps").seconds(g.pcie_gbps);
    w->key("peers").begin_array(true);
    for (int p : g.peers) w->integer(p);
    w->end_array();
    w->key("unknown").string(g.unknown);
    w->end_object();
  }
  w->end_array();
  w->key("nics_unknown").string(n.nics_unknown);
  w->key("nics").begin_array();
  for (const TopologyNic& c : n.nics) {
    w->begin_object();
    w->key("name").string(c.name);
    w->key("port").integer(c.port);
    w->key("rdma").boolean(c.rdma);
    w->key("link_layer").string(c.link_layer);
    w->key("netdev").string(c.netdev);
    w->key("state").string(c.state);
    w->key("active").boolean(c.active);
    w->key("gbit_s").seconds(c.gbit_s);
    w->key("rate_from").string(c.rate_from);
    write_pci_place(c.place, w);
    w->key("unknown").string(c.unknown);
    w->end_object();
  }
  w->end_array();
  w->key("affinity").begin_array();
  for (const TopologyGpuNic& a : n.affinity) {
    w->begin_object(true);
    w->key("device").integer(a.device);
    w->key("nic").string(a.nic);
    w->key("port").integer(a.port);
    w->key("closeness").string(topology::closeness_name(a.closeness));
    w->end_object();
  }
  w->end_array();
  w->key("corrupt").begin_array();
  for (const std::string& c : n.corrupt) w->string(c);
  w->end_array();
  w->end_object();
}

TopologySection read_topology(const detail::Fields& f);

}  // namespace report
}  // namespace gpuslack

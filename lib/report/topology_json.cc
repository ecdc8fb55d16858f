#include "report/topology_json.h"

namespace gpuslack {
namespace report {
namespace {

using detail::Fields;
using detail::Malformed;

TopologyPlace place(const Fields& f) {
  TopologyPlace p;
  p.bus_id = f.text("bus_id");
  p.numa_node = f.whole("numa_node", -1);
  p.path = f.strings("pci_path");
  p.unknown = f.text("place_unknown");
  return p;
}

}  // namespace

TopologySection read_topology(const Fields& f) {
  TopologySection t;
  t.present = true;
  const std::string status = f.text("status");
  if (!topology::status_from_name(status, &t.status) || t.status == topology::Status::kOff)
    f.bad("status", "one of read, not_read");
  t.detail = f.text("detail");
  const JsonValue* v = nullptr;
  if (f.object("links", &v)) {
    Fields l(*v, f.where("links"));
    t.links.intra_gbps = l.number("intra_gbps");
    t.links.intra_is_nvlink = l.flag("intra_is_nvlink");
    t.links.intra_from = l.text("intra_from");
    t.links.inter_gbps = l.number("inter_gbps");
    t.links.inter_from = l.text("inter_from");
    t.links.nodes = l.whole("nodes");
    t.links.ranks_per_node = l.whole("ranks_per_node");
    t.links.shape_from = l.text("shape_from");
  }
  TopologyNode& n = t.node;
  n.sysfs_root = f.text("sysfs_root");
  n.gpus_on_node = f.whole("gpus_on_node");
  n.gpus_unknown = f.text("gpus_unknown");
  f.each("gpus", [&](const JsonValue& item, const std::string& at) {
    Fields g(item, at);
    TopologyGpu r;
    r.device = g.whole("device", -1);
    r.name = g.text("name");
    r.place = place(g);
    r.nvlink_links = g.whole("nvlink_links", -1);
    r.nvlink_generation = g.whole("nvlink_generation");
    r.nvlink_gbps = g.number("nvlink_gbps");
    r.pcie_generation = g.whole("pcie_generation");
    r.pcie_width = g.whole("pcie_width");
    r.pcie_max_generation = g.whole("pcie_max_generation");
    r.pcie_max_width = g.whole("pcie_max_width");
    r.pcie_gbps = g.number("pcie_gbps");
    g.each("peers", [&](const JsonValue& peer, const std::string& where) {
      int64_t d = 0;
      if (!peer.to_int64(&d) || d < 0 || d > 1 << 20) throw Malformed{where + ": expected a device ordinal"};
      r.peers.push_back(static_cast<int>(d));
    });
    r.unknown = g.text("unknown");
    n.gpus.push_back(std::move(r));
  });
  n.nics_unknown = f.text("nics_unknown");
  f.each("nics", [&](const JsonValue& item, const std::string& at) {
    Fields c(item, at);
    TopologyNic r;
    r.name = c.text("name");
    r.port = c.whole("port");
    r.rdma = c.get("rdma") ? c.flag("rdma") : true;
    r.link_layer = c.text("link_layer");
    r.netdev = c.text("netdev");
    r.state = c.text("state");
    r.active = c.flag("active");
    r.gbit_s = c.number("gbit_s");
    r.rate_from = c.text("rate_from");
    r.place = place(c);
    r.unknown = c.text("unknown");
    n.nics.push_back(std::move(r));
  });
  f.each("affinity", [&](const JsonValue& item, const std::string& at) {
    Fields a(item, at);
    TopologyGpuNic r;
    r.device = a.whole("device", -1);
    r.nic = a.text("nic");
    r.port = a.whole("port");
    if (!topology::closeness_from_name(a.text("closeness"), &r.closeness))
      a.bad("closeness", "one of same_pcie_switch, same_host_bridge, same_numa_node, across_sockets, unknown");
    n.affinity.push_back(std::move(r));
  });
  n.corrupt = f.strings("corrupt");
  return t;
}

}  // namespace report
}  // namespace gpuslack

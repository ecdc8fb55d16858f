// See node.h. Reads small sysfs files; nothing is cached.
#include "topology/node.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace gpuslack {
namespace topology {
namespace {

constexpr const char* kInfiniband = "/sys/class/infiniband";
constexpr const char* kNet = "/sys/class/net";
constexpr const char* kPciDevices = "/sys/bus/pci/devices";

// "0000:18:00.0": a PCI function as sysfs names it.
bool is_bus_id(const std::string& s) {
  if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.') return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == 4 || i == 7 || i == 10) continue;
    if (!std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

std::string last_part(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

void join(std::string* to, const std::string& reason) {
  if (reason.empty()) return;
  if (!to->empty()) *to += "; ";
  *to += reason;
}

// A decimal number at the start of `text`, and where it ended.
bool leading_number(const std::string& text, double* v, const char** end) {
  const char* begin = text.c_str();
  errno = 0;
  char* stop = nullptr;
  double x = std::strtod(begin, &stop);
  if (stop == begin || errno != 0) return false;
  *v = x;
  *end = stop;
  return true;
}

// The PCI function of a class device (/sys/class/<cls>/<name>/device).
std::string bus_id_of(const Sysfs& sysfs, const std::string& class_device, std::string* why) {
  std::string real;
  if (!sysfs.real_path(class_device + "/device", &real, why)) return std::string();
  std::string id = last_part(real);
  if (!is_bus_id(id)) {
    *why = class_device + "/device is not a PCI function (" + real + ")";
    return std::string();
  }
  return id;
}

// The state, rate and link layer of RDMA port `port` of `dev`.
Nic read_rdma_port(const Sysfs& sysfs, const std::string& dev, const std::string& port,
                   const std::vector<std::string>& netdevs, std::vector<std::string>* corrupt) {
  Nic nic;
  nic.name = dev;
  nic.port = std::atoi(port.c_str());
  const std::string dir = std::string(kInfiniband) + "/" + dev + "/ports/" + port;
  std::string text, why;
  if (sysfs.read_line(dir + "/link_layer", &text, &why)) {
    nic.link_layer = text;
  } else {
    join(&nic.unknown, why);
  }
  if (!sysfs.read_line(dir + "/state", &text, &why)) {
    join(&nic.unknown, why);
  } else if (!parse_rdma_state(text, &nic.state)) {
    corrupt->push_back(sysfs.under_root(dir + "/state") + ": '" + text + "'");
    join(&nic.unknown, "state unreadable: '" + text + "'");
  } else {
    nic.active = nic.state == "ACTIVE";
  }
  // RoCE: the rate is the Ethernet interface's speed, when it has one.
  if (nic.link_layer == "Ethernet") {
    std::string chosen;
    if (netdevs.size() == 1) chosen = netdevs[0];
    for (const std::string& net : netdevs) {
      std::string dev_port;
      if (sysfs.read_line(std::string(kNet) + "/" + net + "/dev_port", &dev_port, &why) &&
          std::atoi(dev_port.c_str()) == nic.port - 1)
        chosen = net;
    }
    nic.netdev = chosen;
    if (!chosen.empty()) {
      const std::string speed = std::string(kNet) + "/" + chosen + "/speed";
      if (sysfs.read_line(speed, &text, &why) && parse_netdev_speed(text, &nic.gbit_s)) {
        nic.rate_from = sysfs.under_root(speed);
        return nic;
      }
    }
  }
  const std::string rate = dir + "/rate";
  if (!sysfs.read_line(rate, &text, &why)) {
    join(&nic.unknown, why);
  } else if (!parse_rdma_rate(text, &nic.gbit_s)) {
    corrupt->push_back(sysfs.under_root(rate) + ": '" + text + "'");
    join(&nic.unknown, "rate unreadable: '" + text + "'");
  } else {
    nic.rate_from = sysfs.under_root(rate);
  }
  return nic;
}

}  // namespace

const char* closeness_name(Closeness c) {
  switch (c) {
    case Closeness::kSamePcieSwitch: return "same_pcie_switch";
    case Closeness::kSameHostBridge: return "same_host_bridge";
    case Closeness::kSameNumaNode: return "same_numa_node";
    case Closeness::kAcrossSockets: return "across_sockets";
    case Closeness::kUnknown: break;
  }
  return "unknown";
}

bool closeness_from_name(const std::string& name, Closeness* out) {
  for (Closeness c : {Closeness::kSamePcieSwitch, Closeness::kSameHostBridge, Closeness::kSameNumaNode,
                      Closeness::kAcrossSockets, Closeness::kUnknown}) {
    if (name == closeness_name(c)) {
      *out = c;
      return true;
    }
  }
  return false;
}

bool parse_rdma_rate(const std::string& text, double* gbit_s) {
  double v = 0;
  const char* end = nullptr;
  if (!leading_number(text, &v, &end) || v <= 0 || std::strncmp(end, " Gb/sec", 7) != 0) return false;
  *gbit_s = v;
  return true;
}

bool parse_rdma_state(const std::string& text, std::string* state) {
  size_t colon = text.find(": ");
  if (colon == std::string::npos || colon == 0 || colon + 2 >= text.size()) return false;
  for (size_t i = 0; i < colon; ++i)
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return false;
  *state = text.substr(colon + 2);
  return true;
}

bool parse_netdev_speed(const std::string& text, double* gbit_s) {
  double v = 0;
  const char* end = nullptr;
  if (!leading_number(text, &v, &end) || *end != '\0' || v <= 0) return false;  // "-1": down or unknown
  *gbit_s = v / 1000.0;
  return true;
}

PciPlace pci_place(const Sysfs& sysfs, const std::string& bus_id) {
  PciPlace place;
  place.bus_id = bus_id;
  const std::string dir = std::string(kPciDevices) + "/" + bus_id;
  std::string text, why;
  if (!sysfs.read_line(dir + "/numa_node", &text, &why)) {
    join(&place.unknown, why);
  } else {
    char* end = nullptr;
    long node = std::strtol(text.c_str(), &end, 10);
    if (end != text.c_str() && *end == '\0' && node >= 0 && node < 4096) {
      place.numa_node = static_cast<int>(node);
    } else if (text != "-1") {
      join(&place.unknown, "numa_node unreadable: '" + text + "'");
    } else {
      join(&place.unknown, "the platform gives " + bus_id + " no NUMA node");
    }
  }
  std::string real;
  if (!sysfs.real_path(dir, &real, &why)) {
    join(&place.unknown, why);
    return place;
  }
  // /sys/devices/pci0000:17/0000:17:01.0/.../0000:18:00.0: keep from the
  // host bridge down.
  size_t at = real.find("/pci");
  if (at == std::string::npos || last_part(real) != bus_id) {
    join(&place.unknown, dir + " resolves to " + real + ", not under a PCI host bridge");
    return place;
  }
  std::string rest = real.substr(at + 1);
  size_t start = 0;
  while (start <= rest.size()) {
    size_t slash = rest.find('/', start);
    std::string part = rest.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (!part.empty()) place.path.push_back(part);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return place;
}

Closeness closeness(const PciPlace& a, const PciPlace& b) {
  size_t common = 0;
  while (common < a.path.size() && common < b.path.size() && a.path[common] == b.path[common]) ++common;
  // Below the host bridge, a shared bridge: the same switch (or root port).
  if (common >= 2) return Closeness::kSamePcieSwitch;
  if (common == 1) return Closeness::kSameHostBridge;
  if (a.numa_node >= 0 && b.numa_node >= 0)
    return a.numa_node == b.numa_node ? Closeness::kSameNumaNode : Closeness::kAcrossSockets;
  return Closeness::kUnknown;
}

std::vector<Nic> read_nics(const Sysfs& sysfs, std::string* unknown, std::vector<std::string>* corrupt) {
  std::vector<Nic> out;
  std::vector<std::string> rdma_functions;  // their netdevs are RoCE ports, not plain NICs
  std::string why_no_rdma;
  for (const std::string& dev : sysfs.list(kInfiniband, &why_no_rdma)) {
    const std::string class_dev = std::string(kInfiniband) + "/" + dev;
    std::string why;
    std::string bus_id = bus_id_of(sysfs, class_dev, &why);
    PciPlace place;
    if (!bus_id.empty()) {
      place = pci_place(sysfs, bus_id);
      rdma_functions.push_back(bus_id);
    } else {
      place.unknown = why;
    }
    std::string ignored;
    const std::vector<std::string> netdevs = sysfs.list(class_dev + "/device/net", &ignored);
    std::string why_no_ports;
    const std::vector<std::string> ports = sysfs.list(class_dev + "/ports", &why_no_ports);
    if (ports.empty()) {
      Nic nic;
      nic.name = dev;
      nic.place = place;
      nic.unknown = why_no_ports.empty() ? class_dev + "/ports is empty" : why_no_ports;
      out.push_back(std::move(nic));
      continue;
    }
    for (const std::string& port : ports) {
      Nic nic = read_rdma_port(sysfs, dev, port, netdevs, corrupt);
      nic.place = place;
      out.push_back(std::move(nic));
    }
  }
  std::string why_no_net;
  for (const std::string& net : sysfs.list(kNet, &why_no_net)) {
    const std::string class_dev = std::string(kNet) + "/" + net;
    if (!sysfs.exists(class_dev + "/device")) continue;  // lo, bridges, veths, tunnels
    std::string why;
    std::string bus_id = bus_id_of(sysfs, class_dev, &why);
    if (bus_id.empty()) continue;  // not a PCI NIC (a virtio or platform device is no fabric)
    bool owned = false;
    for (const std::string& f : rdma_functions) owned = owned || f == bus_id;
    if (owned) continue;
    Nic nic;
    nic.name = net;
    nic.rdma = false;
    nic.link_layer = "Ethernet";
    nic.netdev = net;
    nic.place = pci_place(sysfs, bus_id);
    std::string text;
    if (sysfs.read_line(class_dev + "/operstate", &text, &why)) {
      nic.state = text;
      nic.active = text == "up";
    } else {
      join(&nic.unknown, why);
    }
    const std::string speed = class_dev + "/speed";
    if (!sysfs.read_line(speed, &text, &why)) {
      join(&nic.unknown, why);
    } else if (parse_netdev_speed(text, &nic.gbit_s)) {
      nic.rate_from = sysfs.under_root(speed);
    } else if (text == "-1") {
      join(&nic.unknown, net + " reports no speed (link down)");
    } else {
      corrupt->push_back(sysfs.under_root(speed) + ": '" + text + "'");
      join(&nic.unknown, "speed unreadable: '" + text + "'");
    }
    out.push_back(std::move(nic));
  }
  if (out.empty()) {
    *unknown = "no RDMA device (" + why_no_rdma + ")";
    if (why_no_rdma.empty()) *unknown = "no RDMA device in " + sysfs.under_root(kInfiniband);
    *unknown += " and no PCI network interface in " + sysfs.under_root(kNet);
  }
  return out;
}

std::vector<GpuNic> pair_gpus_with_nics(const std::vector<Gpu>& gpus, const std::vector<Nic>& nics) {
  std::vector<GpuNic> out;
  for (const Gpu& g : gpus) {
    const Nic* best = nullptr;
    Closeness best_c = Closeness::kUnknown;
    for (const Nic& n : nics) {
      Closeness c = closeness(g.place, n.place);
      // Active first, then nearest; ties keep the first.
      bool better = !best || (n.active && !best->active) ||
                    (n.active == best->active && static_cast<int>(c) < static_cast<int>(best_c));
      if (better) {
        best = &n;
        best_c = c;
      }
    }
    if (!best) continue;
    out.push_back(GpuNic{g.device, best->name, best->port, best_c});
  }
  return out;
}

NodeTopology describe_node(const Sysfs& sysfs, std::vector<Gpu> gpus, std::string gpus_unknown, int gpus_on_node) {
  NodeTopology node;
  node.sysfs_root = sysfs.root().empty() ? "/" : sysfs.root();
  for (Gpu& g : gpus) g.place = pci_place(sysfs, g.place.bus_id);
  node.gpus = std::move(gpus);
  node.gpus_unknown = std::move(gpus_unknown);
  node.gpus_on_node = gpus_on_node;
  node.nics = read_nics(sysfs, &node.nics_unknown, &node.corrupt);
  node.affinity = pair_gpus_with_nics(node.gpus, node.nics);
  return node;
}

}  // namespace topology
}  // namespace gpuslack

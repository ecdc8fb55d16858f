// Sysfs trees for the topology's tests, written into a temporary directory
// in the layout the kernel documents (lib/topology/node.h lists the files):
// PCI functions are directories under /sys/devices/pci<domain>:<bus>/...,
// one per bridge on the way down, reached from /sys/bus/pci/devices/<bdf>
// by a relative link, as the kernel makes them; an RDMA device's class
// directory holds its ports and a `device` link to its PCI function; a
// netdev's class entry is a link to its directory under its PCI function.
//
// The three nodes of issue 26:
//   dgx_h100()   8 GPUs and 8 ConnectX-7 NDR (400 Gb/s InfiniBand) ports,
//                mlx5_0..7, each NIC behind the same PCIe switch as one GPU,
//                GPUs 0-3 and NICs 0-3 on NUMA node 0, the rest on node 1
//                (the shape of the DGX H100 User Guide's block diagram and
//                of `nvidia-smi topo -m` on one: every GPU PIX to one NIC,
//                SYS to the other socket's; bus numbers made up in that
//                shape);
//   pcie_only()  2 GPUs on one host bridge, one 100 GbE NIC with no RDMA
//                device, NUMA node 0;
//   roce()       1 GPU and one RoCE port (link_layer Ethernet) whose
//                netdev reports 400000 Mb/s.
// Each also gives the GPUs as NVML would describe them (fixture_gpus).
#pragma once

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "topology/node.h"

namespace gpuslack {
namespace topology {
namespace testing_fixture {

class SysfsTree {
 public:
  SysfsTree() {
    char tmpl[] = "/tmp/gpuslack-sysfs-XXXXXX";
    root_ = mkdtemp(tmpl) ? tmpl : "";
  }
  ~SysfsTree() {
    if (!root_.empty()) std::system(("rm -rf '" + root_ + "'").c_str());
  }
  SysfsTree(const SysfsTree&) = delete;
  SysfsTree& operator=(const SysfsTree&) = delete;

  const std::string& root() const { return root_; }

  void dir(const std::string& path) const {
    const std::string full = root_ + path;
    for (size_t i = root_.size() + 1; i <= full.size(); ++i)
      if (i == full.size() || full[i] == '/') mkdir(full.substr(0, i).c_str(), 0755);
  }
  void file(const std::string& path, const std::string& text) const {
    dir(path.substr(0, path.rfind('/')));
    std::FILE* f = std::fopen((root_ + path).c_str(), "w");
    if (!f) return;
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  void link(const std::string& path, const std::string& target) const {
    dir(path.substr(0, path.rfind('/')));
    if (symlink(target.c_str(), (root_ + path).c_str()) != 0) std::perror(path.c_str());
  }

  // A PCI function at the end of `chain` ({"pci0000:15", "0000:15:01.0",
  // ..., bdf}): its directory, numa_node and the bus link. Returns its
  // directory.
  std::string pci_function(const std::vector<std::string>& chain, int numa_node) const {
    std::string path = "/sys/devices";
    for (const std::string& part : chain) path += "/" + part;
    file(path + "/numa_node", std::to_string(numa_node) + "\n");
    link("/sys/bus/pci/devices/" + chain.back(), "../../.." + path.substr(4));
    return path;
  }

  // An RDMA device `name` on PCI function dir `pci`, one port.
  void rdma_port(const std::string& name, const std::string& pci, int port, const std::string& state,
                 const std::string& rate, const std::string& link_layer) const {
    const std::string cls = "/sys/class/infiniband/" + name;
    if (access((root_ + cls + "/device").c_str(), F_OK) != 0) link(cls + "/device", "../../.." + pci.substr(4));
    const std::string p = cls + "/ports/" + std::to_string(port);
    file(p + "/state", state + "\n");
    file(p + "/rate", rate + "\n");
    file(p + "/link_layer", link_layer + "\n");
  }

  // A netdev `name` of PCI function dir `pci`.
  void netdev(const std::string& name, const std::string& pci, const std::string& speed_mbps,
              const std::string& operstate, int dev_port = 0) const {
    const std::string dir_path = pci + "/net/" + name;
    file(dir_path + "/speed", speed_mbps + "\n");
    file(dir_path + "/operstate", operstate + "\n");
    file(dir_path + "/dev_port", std::to_string(dev_port) + "\n");
    link(dir_path + "/device", "../../../" + pci.substr(pci.rfind('/') + 1));
    link("/sys/class/net/" + name, "../.." + dir_path.substr(4));
  }

 private:
  std::string root_;
};

inline std::string hex2(int v) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%02x", v);
  return buf;
}
inline std::string bdf(int bus, int dev = 0) { return "0000:" + hex2(bus) + ":" + hex2(dev) + ".0"; }

// The GPU buses of the DGX H100 fixture; GPU i's NIC is on bus + 1.
inline const std::vector<int>& dgx_gpu_buses() {
  static const std::vector<int> buses = {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb};
  return buses;
}

// An H100 SXM as NVML describes it: 18 NVLink 4 links up, PCIe gen 5 x16.
inline Gpu h100(int device, const std::string& bus_id) {
  Gpu g;
  g.device = device;
  g.name = "NVIDIA H100 80GB HBM3";
  g.place.bus_id = bus_id;
  g.nvlink_links = 18;
  g.nvlink_generation = 4;
  g.nvlink_gbps = 18 * 25.0;
  g.pcie_generation = g.pcie_max_generation = 5;
  g.pcie_width = g.pcie_max_width = 16;
  g.pcie_gbps = 16 * 32.0 * 128 / 130 / 8;
  return g;
}

inline void dgx_h100(const SysfsTree& t) {
  const std::vector<int>& buses = dgx_gpu_buses();
  for (int i = 0; i < 8; ++i) {
    const int gpu_bus = buses[i], host = gpu_bus - 3, numa = i < 4 ? 0 : 1;
    // host bridge / root port / switch upstream / downstream ports / endpoints
    const std::string hb = "pci0000:" + hex2(host), rp = bdf(host, 1), up = bdf(host + 1);
    t.pci_function({hb, rp, up, bdf(host + 2, 0), bdf(gpu_bus)}, numa);
    const std::string nic = t.pci_function({hb, rp, up, bdf(host + 2, 1), bdf(gpu_bus + 1)}, numa);
    t.rdma_port("mlx5_" + std::to_string(i), nic, 1, "4: ACTIVE", "400 Gb/sec (4X NDR)", "InfiniBand");
    t.netdev("ibp" + hex2(gpu_bus + 1) + "s0", nic, "-1", "down");  // IPoIB, not a fabric of its own
  }
}
inline std::vector<Gpu> dgx_h100_gpus() {
  std::vector<Gpu> gpus;
  for (int i = 0; i < 8; ++i) gpus.push_back(h100(i, bdf(dgx_gpu_buses()[i])));
  return gpus;
}

// Two PCIe GPUs (no NVLink, gen 4 x16) and one 100 GbE NIC with no RDMA.
inline void pcie_only(const SysfsTree& t) {
  t.pci_function({"pci0000:00", bdf(0, 1), bdf(1)}, 0);
  t.pci_function({"pci0000:00", bdf(0, 2), bdf(2)}, 0);
  const std::string nic = t.pci_function({"pci0000:00", bdf(0, 3), bdf(3)}, 0);
  t.netdev("enp3s0", nic, "100000", "up");
  t.dir("/sys/class/net/lo");  // no device link: not a NIC
  t.file("/sys/class/net/lo/operstate", "unknown\n");
}
inline std::vector<Gpu> pcie_only_gpus() {
  std::vector<Gpu> gpus;
  for (int i = 0; i < 2; ++i) {
    Gpu g;
    g.device = i;
    g.name = "NVIDIA L40S";
    g.place.bus_id = bdf(i + 1);
    g.nvlink_links = 0;
    g.pcie_generation = 1;  // idle
    g.pcie_width = 16;
    g.pcie_max_generation = 4;
    g.pcie_max_width = 16;
    g.pcie_gbps = 16 * 16.0 * 128 / 130 / 8;
    gpus.push_back(g);
  }
  return gpus;
}

// One GPU and one RoCE port: rate file 100 Gb/s, netdev 400000 Mb/s.
inline void roce(const SysfsTree& t) {
  t.pci_function({"pci0000:40", bdf(0x40, 1), bdf(0x41)}, 1);
  const std::string nic = t.pci_function({"pci0000:80", bdf(0x80, 1), bdf(0x81)}, 1);
  t.rdma_port("mlx5_0", nic, 1, "4: ACTIVE", "100 Gb/sec (4X EDR)", "Ethernet");
  t.netdev("ens81np0", nic, "400000", "up");
}
inline std::vector<Gpu> roce_gpus() { return {h100(0, bdf(0x41))}; }

}  // namespace testing_fixture
}  // namespace topology
}  // namespace gpuslack

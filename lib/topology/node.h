// One node's topology as this process sees it: its GPUs (NVML's answers),
// the node's network devices (sysfs), where each sits on the PCIe tree and
// which NUMA node it belongs to, and for each GPU the NIC nearest to it.
// Plain data, and the pure functions that read sysfs into it; the
// reading's life (when, on which thread) is topology.h's.
//
// Sysfs as the kernel documents it (Documentation/ABI/testing/sysfs-bus-pci,
// sysfs-class-infiniband, sysfs-class-net):
//   /sys/bus/pci/devices/<bdf>            a link into /sys/devices/pci<dom>:<bus>/...:
//                                         its real path is the chain of bridges
//                                         from the host bridge down to the device
//   /sys/bus/pci/devices/<bdf>/numa_node  "-1" when the platform gives none
//   /sys/class/infiniband/<dev>/device    the RDMA device's PCI function
//   /sys/class/infiniband/<dev>/ports/<n>/{state,rate,link_layer}
//                                         "4: ACTIVE", "400 Gb/sec (4X NDR)",
//                                         "InfiniBand" or "Ethernet" (RoCE)
//   /sys/class/infiniband/<dev>/device/net/<if>  the netdev of a RoCE port
//   /sys/class/net/<if>/{speed,operstate,dev_port,device}
//                                         speed in Mb/s ("-1" while down)
//
// Nothing here fails: what could not be read is left unknown with the
// reason ("unknown" fields), and a file that does not parse is named there
// too (topology.h logs one line for all of them).
//
// Thread safety: pure (reads files, changes nothing).
#pragma once

#include <string>
#include <vector>

#include "topology/sysfs.h"

namespace gpuslack {
namespace topology {

// How near a NIC is to a GPU, nearest first (nvidia-smi topo's PIX/PXB,
// PHB, NODE and SYS, in the words the brief of issue 26 uses).
enum class Closeness { kSamePcieSwitch, kSameHostBridge, kSameNumaNode, kAcrossSockets, kUnknown };
const char* closeness_name(Closeness c);  // "same_pcie_switch", ..., "unknown"
bool closeness_from_name(const std::string& name, Closeness* out);

// A PCI function's place: its NUMA node and its chain of bridges.
struct PciPlace {
  std::string bus_id;             // "0000:18:00.0" (sysfs's form: 4-digit domain, lower case)
  int numa_node = -1;             // -1: unknown
  std::vector<std::string> path;  // "pci0000:17", "0000:17:01.0", ..., bus_id; [] unknown
  std::string unknown;            // why numa_node or path is unknown; "" when both known
};

struct Gpu {
  int device = -1;        // the CUDA ordinal in this process
  std::string name;       // NVML's ("NVIDIA H100 80GB HBM3")
  int nvlink_links = -1;  // NVLink links up; -1 unknown
  int nvlink_generation = 0;  // 1..5; 0 unknown or no link up
  double nvlink_gbps = 0;     // links × per-link rate, per direction, GB/s
  int pcie_generation = 0, pcie_width = 0;          // now (a GPU slows its link when idle)
  int pcie_max_generation = 0, pcie_max_width = 0;  // what device and slot allow
  double pcie_gbps = 0;   // max generation × max width, per direction, GB/s; 0 unknown
  std::vector<int> peers; // CUDA ordinals of this process it can access (cudaDeviceCanAccessPeer)
  PciPlace place;
  std::string unknown;    // what NVML did not answer, and why; "" when all
};

struct Nic {
  std::string name;        // "mlx5_0", or the netdev's name for a NIC with no RDMA device
  int port = 0;            // the RDMA port; 0 for a plain netdev
  bool rdma = true;        // false: a netdev with no RDMA device (NCCL's sockets)
  std::string link_layer;  // "InfiniBand", "Ethernet"; "" unknown
  std::string netdev;      // the Ethernet interface (RoCE, plain); "" none
  std::string state;       // "ACTIVE", "DOWN" (RDMA), "up", "down" (netdev)
  bool active = false;     // ACTIVE, or up
  double gbit_s = 0;       // signalling rate, Gb/s; 0 unknown
  std::string rate_from;   // the file it came from, under the root
  PciPlace place;
  std::string unknown;     // why state or rate is unknown; "" when known
};

// A GPU's nearest NIC (ties: the first by name and port).
struct GpuNic {
  int device = -1;
  std::string nic;
  int port = 0;
  Closeness closeness = Closeness::kUnknown;
};

struct NodeTopology {
  std::vector<Gpu> gpus;       // the devices this process uses, by ordinal
  std::string gpus_unknown;    // why there are none ("" when there are)
  int gpus_on_node = 0;        // NVML's device count; 0 unknown
  std::vector<Nic> nics;       // RDMA ports, then plain netdevs
  std::string nics_unknown;    // why there are none
  std::vector<GpuNic> affinity;  // one per GPU with a NIC to pair
  std::string sysfs_root;      // "/" but in tests
  std::vector<std::string> corrupt;  // files that did not parse ("path: 'text'")
};

// The NUMA node and bridges of PCI function `bus_id` ("0000:18:00.0").
PciPlace pci_place(const Sysfs& sysfs, const std::string& bus_id);
// How near two places are.
Closeness closeness(const PciPlace& a, const PciPlace& b);

// The node's network devices: every RDMA port, then every netdev backed by
// a device (not lo, bridges or veths) that no RDMA device owns. `unknown`:
// why the list is empty. Files that do not parse are added to `corrupt`.
std::vector<Nic> read_nics(const Sysfs& sysfs, std::string* unknown, std::vector<std::string>* corrupt);

// Each GPU's nearest NIC, the active ones first.
std::vector<GpuNic> pair_gpus_with_nics(const std::vector<Gpu>& gpus, const std::vector<Nic>& nics);

// Fills each GPU's place, reads the NICs and pairs them: the node's
// topology from what NVML said of the GPUs.
NodeTopology describe_node(const Sysfs& sysfs, std::vector<Gpu> gpus, std::string gpus_unknown, int gpus_on_node);

// Parsers of the sysfs values, exposed for the tests: "400 Gb/sec (4X NDR)"
// -> 400; "4: ACTIVE" -> "ACTIVE"; a netdev speed "400000" (Mb/s) -> 400.
bool parse_rdma_rate(const std::string& text, double* gbit_s);
bool parse_rdma_state(const std::string& text, std::string* state);
bool parse_netdev_speed(const std::string& text, double* gbit_s);

}  // namespace topology
}  // namespace gpuslack

// The node's topology read from sysfs fixture trees (sysfs_fixture.h):
// NICs, places, GPU-to-NIC closeness, and what is unknown and why.
#include "topology/node.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "topology/link_rates.h"
#include "topology/topology.h"
#include "sysfs_fixture.h"

namespace gpuslack {
namespace topology {
namespace {

using testing_fixture::SysfsTree;

TEST(TopologyParsers, ReadSysfsValuesAsTheKernelWritesThem) {
  double g = 0;
  EXPECT_TRUE(parse_rdma_rate("400 Gb/sec (4X NDR)", &g));
  EXPECT_EQ(400, g);
  EXPECT_TRUE(parse_rdma_rate("53.125 Gb/sec (1X HDR)", &g));
  EXPECT_DOUBLE_EQ(53.125, g);
  EXPECT_FALSE(parse_rdma_rate("fast", &g));
  EXPECT_FALSE(parse_rdma_rate("400 Mb/sec", &g));
  std::string state;
  EXPECT_TRUE(parse_rdma_state("4: ACTIVE", &state));
  EXPECT_EQ("ACTIVE", state);
  EXPECT_TRUE(parse_rdma_state("1: DOWN", &state));
  EXPECT_EQ("DOWN", state);
  EXPECT_FALSE(parse_rdma_state("ACTIVE", &state));
  EXPECT_TRUE(parse_netdev_speed("400000", &g));
  EXPECT_EQ(400, g);
  EXPECT_FALSE(parse_netdev_speed("-1", &g));
  EXPECT_FALSE(parse_netdev_speed("100G", &g));
}

TEST(TopologyLinkRates, FollowNvmlsVersionEnumAndThePublishedRates) {
  EXPECT_EQ(4, nvlink_generation(6));  // NVML_NVLINK_VERSION_4_0
  EXPECT_EQ(3, nvlink_generation(4));  // 3_0 (A100)
  EXPECT_EQ(3, nvlink_generation(5));  // 3_1
  EXPECT_EQ(5, nvlink_generation(7));
  EXPECT_EQ(0, nvlink_generation(0));
  EXPECT_EQ(0, nvlink_generation(99));
  for (int gen = 1; gen <= 5; ++gen) EXPECT_EQ(gen, nvlink_generation(nvml_nvlink_version(gen)));
  EXPECT_EQ(450, 18 * nvlink_link_gbps(4));  // H100: 900 GB/s both directions
  EXPECT_EQ(300, 12 * nvlink_link_gbps(3));  // A100: 600 GB/s
  EXPECT_EQ(900, 18 * nvlink_link_gbps(5));  // B200: 1.8 TB/s
  EXPECT_NEAR(63.0, 16 * pcie_lane_gbps(5), 0.1);
  EXPECT_NEAR(31.5, 16 * pcie_lane_gbps(4), 0.1);
  EXPECT_EQ(0, pcie_lane_gbps(0));
}

TEST(TopologyNode, DgxH100EachGpuSharesASwitchWithOneNic) {
  SysfsTree tree;
  testing_fixture::dgx_h100(tree);
  const NodeTopology node = describe_node(Sysfs(tree.root()), testing_fixture::dgx_h100_gpus(), "", 8);
  ASSERT_EQ(8u, node.nics.size()) << "the IPoIB netdevs belong to the RDMA devices";
  for (int i = 0; i < 8; ++i) {
    const Nic& n = node.nics[i];
    EXPECT_EQ("mlx5_" + std::to_string(i), n.name);
    EXPECT_EQ(1, n.port);
    EXPECT_TRUE(n.rdma);
    EXPECT_EQ("InfiniBand", n.link_layer);
    EXPECT_EQ("ACTIVE", n.state);
    EXPECT_TRUE(n.active);
    EXPECT_EQ(400, n.gbit_s);
    EXPECT_EQ(tree.root() + "/sys/class/infiniband/mlx5_" + std::to_string(i) + "/ports/1/rate", n.rate_from);
    EXPECT_EQ(i < 4 ? 0 : 1, n.place.numa_node);
    EXPECT_EQ("", n.unknown);
    EXPECT_EQ(5u, n.place.path.size());
  }
  ASSERT_EQ(8u, node.gpus.size());
  const Gpu& g0 = node.gpus[0];
  EXPECT_EQ(0, g0.place.numa_node);
  EXPECT_EQ((std::vector<std::string>{"pci0000:15", "0000:15:01.0", "0000:16:00.0", "0000:17:00.0", "0000:18:00.0"}),
            g0.place.path);
  ASSERT_EQ(8u, node.affinity.size());
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(i, node.affinity[i].device);
    EXPECT_EQ("mlx5_" + std::to_string(i), node.affinity[i].nic);
    EXPECT_EQ(Closeness::kSamePcieSwitch, node.affinity[i].closeness);
  }
  // Across the tree: GPU 0 to NIC 1 shares only the NUMA node, to NIC 4 nothing.
  EXPECT_EQ(Closeness::kSameNumaNode, closeness(g0.place, node.nics[1].place));
  EXPECT_EQ(Closeness::kAcrossSockets, closeness(g0.place, node.nics[4].place));
  EXPECT_TRUE(node.corrupt.empty());
}

TEST(TopologyNode, PcieOnlyNodeHasOnePlainEthernetNic) {
  SysfsTree tree;
  testing_fixture::pcie_only(tree);
  const NodeTopology node = describe_node(Sysfs(tree.root()), testing_fixture::pcie_only_gpus(), "", 2);
  ASSERT_EQ(1u, node.nics.size()) << "lo has no device";
  const Nic& n = node.nics[0];
  EXPECT_EQ("enp3s0", n.name);
  EXPECT_FALSE(n.rdma);
  EXPECT_EQ("up", n.state);
  EXPECT_TRUE(n.active);
  EXPECT_EQ(100, n.gbit_s);
  EXPECT_EQ(tree.root() + "/sys/class/net/enp3s0/speed", n.rate_from);
  ASSERT_EQ(2u, node.affinity.size());
  EXPECT_EQ(Closeness::kSameHostBridge, node.affinity[0].closeness);
  EXPECT_EQ("enp3s0", node.affinity[1].nic);
}

TEST(TopologyNode, RoceTakesItsRateFromTheNetdev) {
  SysfsTree tree;
  testing_fixture::roce(tree);
  const NodeTopology node = describe_node(Sysfs(tree.root()), testing_fixture::roce_gpus(), "", 1);
  ASSERT_EQ(1u, node.nics.size()) << "the RoCE netdev is the RDMA port's, not a NIC of its own";
  const Nic& n = node.nics[0];
  EXPECT_EQ("Ethernet", n.link_layer);
  EXPECT_TRUE(n.rdma);
  EXPECT_EQ("ens81np0", n.netdev);
  EXPECT_EQ(400, n.gbit_s);
  EXPECT_EQ(tree.root() + "/sys/class/net/ens81np0/speed", n.rate_from);
  ASSERT_EQ(1u, node.affinity.size());
  EXPECT_EQ(Closeness::kSameNumaNode, node.affinity[0].closeness) << "two host bridges, one NUMA node";
}

TEST(TopologyNode, NoSysfsIsUnknownWithTheReason) {
  SysfsTree tree;  // empty
  const NodeTopology node = describe_node(Sysfs(tree.root()), testing_fixture::roce_gpus(), "", 0);
  EXPECT_TRUE(node.nics.empty());
  EXPECT_NE(std::string::npos, node.nics_unknown.find("no RDMA device")) << node.nics_unknown;
  EXPECT_NE(std::string::npos, node.nics_unknown.find(tree.root() + "/sys/class/infiniband")) << node.nics_unknown;
  EXPECT_NE(std::string::npos, node.nics_unknown.find("no PCI network interface")) << node.nics_unknown;
  ASSERT_EQ(1u, node.gpus.size());
  EXPECT_EQ(-1, node.gpus[0].place.numa_node);
  EXPECT_TRUE(node.gpus[0].place.path.empty());
  EXPECT_NE(std::string::npos, node.gpus[0].place.unknown.find("numa_node")) << node.gpus[0].place.unknown;
  EXPECT_TRUE(node.affinity.empty());
}

TEST(TopologyNode, ACorruptRateFileIsUnknownAndNamed) {
  SysfsTree tree;
  testing_fixture::dgx_h100(tree);
  tree.file("/sys/class/infiniband/mlx5_3/ports/1/rate", "garbage\n");
  tree.file("/sys/bus/pci/devices/0000:18:00.0/numa_node", "-1\n");
  const NodeTopology node = describe_node(Sysfs(tree.root()), testing_fixture::dgx_h100_gpus(), "", 8);
  ASSERT_EQ(8u, node.nics.size());
  EXPECT_EQ(0, node.nics[3].gbit_s);
  EXPECT_TRUE(node.nics[3].active);
  EXPECT_NE(std::string::npos, node.nics[3].unknown.find("rate unreadable: 'garbage'")) << node.nics[3].unknown;
  ASSERT_EQ(1u, node.corrupt.size());
  EXPECT_EQ(tree.root() + "/sys/class/infiniband/mlx5_3/ports/1/rate: 'garbage'", node.corrupt[0]);
  EXPECT_EQ(400, node.nics[2].gbit_s);
  // A NUMA node of -1 is the platform's silence, not corruption.
  EXPECT_EQ(-1, node.gpus[0].place.numa_node);
  EXPECT_NE(std::string::npos, node.gpus[0].place.unknown.find("no NUMA node")) << node.gpus[0].place.unknown;
  EXPECT_EQ(Closeness::kSamePcieSwitch, node.affinity[0].closeness) << "the path still says it";
}

TEST(TopologyNode, AnActiveNicIsPreferredToANearerDownOne) {
  SysfsTree tree;
  testing_fixture::dgx_h100(tree);
  tree.file("/sys/class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n");
  const NodeTopology node = describe_node(Sysfs(tree.root()), testing_fixture::dgx_h100_gpus(), "", 8);
  EXPECT_FALSE(node.nics[0].active);
  EXPECT_EQ("mlx5_1", node.affinity[0].nic);
  EXPECT_EQ(Closeness::kSameNumaNode, node.affinity[0].closeness);
}

// The room's own reading, under GPUSLACK_TEST_SYSFS_ROOT: here no driver
// and (but on a GPU machine) no NVML, so no GPU; the NICs come from the
// fixture, never from this machine's /sys.
TEST(TopologyRoom, ReadsUnderTheTestRoot) {
  SysfsTree tree;
  testing_fixture::roce(tree);
  ASSERT_EQ(0, setenv("GPUSLACK_TEST_SYSFS_ROOT", tree.root().c_str(), 1));
  EXPECT_EQ(tree.root(), sysfs_root());
  configure(true);
  EXPECT_EQ(Status::kNotRead, snapshot().status);
  EXPECT_EQ("the run ended before the topology was read", snapshot().detail);
  tick();
  const Snapshot s = snapshot();
  unsetenv("GPUSLACK_TEST_SYSFS_ROOT");
  configure(false);
  EXPECT_EQ(Status::kRead, s.status);
  EXPECT_EQ(tree.root(), s.node.sysfs_root);
  ASSERT_EQ(1u, s.node.nics.size());
  EXPECT_EQ("mlx5_0", s.node.nics[0].name);
  if (s.node.gpus.empty()) EXPECT_FALSE(s.node.gpus_unknown.empty());
  EXPECT_EQ("/", sysfs_root());
  EXPECT_EQ(Status::kOff, snapshot().status);
}

}  // namespace
}  // namespace topology
}  // namespace gpuslack

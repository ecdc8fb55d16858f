// The summary's "topology" (report/topology.h, topology_json.h): the links
// and shape from the fixture nodes (tests/lib/topology/sysfs_fixture.h),
// where each figure came from, the JSON written and read back, the text.
#include "report/topology.h"

#include <gtest/gtest.h>

#include "report/json.h"
#include "report/summary_reader.h"
#include "report/text.h"
#include "sample_summary.h"
#include "text_lines.h"
#include "../topology/sysfs_fixture.h"

namespace gpuslack {
namespace report {
namespace {

namespace fixture = topology::testing_fixture;
using testing_text::contains_line;
using testing_text::unwrapped;

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

topology::Snapshot read_snapshot(const topology::NodeTopology& node) {
  topology::Snapshot s;
  s.status = topology::Status::kRead;
  s.node = node;
  return s;
}

JobIdentity shape(int local_world_size, int nodes, int world_size) {
  JobIdentity j;
  j.local_world_size = local_world_size;
  j.local_world_size_from = "LOCAL_WORLD_SIZE";
  j.nodes = nodes;
  j.nodes_from = "GROUP_WORLD_SIZE";
  j.world_size = world_size;
  return j;
}

// Rank 0 of 2 nodes x 8 ranks on the DGX H100, using GPU 0.
TopologySection dgx_section(const fixture::SysfsTree& tree) {
  fixture::dgx_h100(tree);
  std::vector<topology::Gpu> gpus = {fixture::dgx_h100_gpus()[0]};
  const topology::NodeTopology node = topology::describe_node(topology::Sysfs(tree.root()), gpus, "", 8);
  return build_topology_section(read_snapshot(node), shape(8, 2, 16), {});
}

TEST(TopologyLinks, DgxH100NvlinkWithinAndOneNdrNicPerGpuBetween) {
  fixture::SysfsTree tree;
  const TopologySection t = dgx_section(tree);
  ASSERT_TRUE(t.present);
  const TopologyLinks& l = t.links;
  EXPECT_EQ(450, l.intra_gbps);
  EXPECT_TRUE(l.intra_is_nvlink);
  EXPECT_EQ("measured: NVML: GPU 0 has 18 NVLink 4 links up, 25 GB/s each per direction", l.intra_from);
  EXPECT_EQ(50, l.inter_gbps) << "8 x 400 Gb/s over 8 GPUs";
  EXPECT_EQ("measured: 8 active RDMA ports (InfiniBand), 3200 Gb/s over the node's 8 GPUs (NVML)", l.inter_from);
  EXPECT_EQ(2, l.nodes);
  EXPECT_EQ(8, l.ranks_per_node);
  EXPECT_EQ("measured: LOCAL_WORLD_SIZE=8, GROUP_WORLD_SIZE=2", l.shape_from);
}

TEST(TopologyLinks, PcieOnlyNodeUsesThePcieLinkAndTheEthernetNic) {
  fixture::SysfsTree tree;
  fixture::pcie_only(tree);
  const topology::NodeTopology node =
      topology::describe_node(topology::Sysfs(tree.root()), {fixture::pcie_only_gpus()[1]}, "", 2);
  JobIdentity job;
  job.local_world_size = 2;
  job.local_world_size_from = "LOCAL_WORLD_SIZE";
  job.world_size = 4;
  const TopologySection t = build_topology_section(read_snapshot(node), job, {});
  const TopologyLinks& l = t.links;
  EXPECT_NEAR(31.5, l.intra_gbps, 0.01) << "gen 4 x16 at most, not the idle gen 1";
  EXPECT_FALSE(l.intra_is_nvlink);
  EXPECT_EQ("measured: NVML: GPU 1 has no NVLink; PCIe gen 4 x16 at most", l.intra_from);
  EXPECT_EQ(6.25, l.inter_gbps);
  EXPECT_TRUE(starts_with(l.inter_from, "measured: no active RDMA port; 1 network interface up, 100 Gb/s"))
      << l.inter_from;
  EXPECT_EQ(2, l.nodes) << "world size / ranks per node";
  EXPECT_EQ(2, l.ranks_per_node);
  EXPECT_EQ("measured: LOCAL_WORLD_SIZE=2, world size 4", l.shape_from);
}

TEST(TopologyLinks, RoceNodeCountsItsPortAtTheNetdevSpeed) {
  fixture::SysfsTree tree;
  fixture::roce(tree);
  const topology::NodeTopology node =
      topology::describe_node(topology::Sysfs(tree.root()), fixture::roce_gpus(), "", 1);
  const TopologySection t = build_topology_section(read_snapshot(node), JobIdentity(), {});
  EXPECT_EQ(50, t.links.inter_gbps);
  EXPECT_EQ("measured: 1 active RDMA port (RoCE), 400 Gb/s over the node's 1 GPUs (NVML)", t.links.inter_from);
  EXPECT_EQ(0, t.links.nodes);
  EXPECT_EQ(0, t.links.ranks_per_node);
  EXPECT_TRUE(starts_with(t.links.shape_from, "unknown: no launcher variable")) << t.links.shape_from;
}

TEST(TopologyLinks, NotReadIsUnknownWithTheReason) {
  topology::Snapshot s;
  s.status = topology::Status::kNotRead;
  s.detail = "the run ended before the topology was read";
  const TopologySection t = build_topology_section(s, shape(4, 2, 8), {});
  ASSERT_TRUE(t.present);
  EXPECT_EQ(0, t.links.intra_gbps);
  EXPECT_EQ("unknown: the run ended before the topology was read", t.links.intra_from);
  EXPECT_EQ("unknown: the run ended before the topology was read", t.links.inter_from);
  EXPECT_EQ(4, t.links.ranks_per_node) << "the shape is the launcher's, read or not";
  topology::Snapshot off;
  EXPECT_FALSE(build_topology_section(off, shape(4, 2, 8), {}).present);
}

TEST(TopologyLinks, NoNvmlLeavesTheIntraLinkUnknown) {
  fixture::SysfsTree tree;
  fixture::dgx_h100(tree);
  topology::Gpu g;
  g.device = 0;
  g.place.bus_id = "0000:18:00.0";
  g.unknown = "NVML unavailable: libnvidia-ml.so.1 not found";
  const topology::NodeTopology node = topology::describe_node(topology::Sysfs(tree.root()), {g}, "", 0);
  const TopologySection t = build_topology_section(read_snapshot(node), shape(8, 2, 16), {});
  EXPECT_EQ(0, t.links.intra_gbps);
  EXPECT_EQ("unknown: GPU 0: NVML unavailable: libnvidia-ml.so.1 not found", t.links.intra_from);
  EXPECT_EQ(50, t.links.inter_gbps) << "no GPU count from NVML: the ranks on the node share the NICs";
  EXPECT_EQ("measured: 8 active RDMA ports (InfiniBand), 3200 Gb/s over the node's 8 ranks (NVML gave no GPU count)",
            t.links.inter_from);
  ASSERT_EQ(1u, t.node.affinity.size());
  EXPECT_EQ(topology::Closeness::kSamePcieSwitch, t.node.affinity[0].closeness) << "sysfs alone places them";
}

TEST(TopologyLinks, NoNicAtAllIsUnknown) {
  fixture::SysfsTree tree;
  const topology::NodeTopology node =
      topology::describe_node(topology::Sysfs(tree.root()), fixture::roce_gpus(), "", 1);
  const TopologySection t = build_topology_section(read_snapshot(node), JobIdentity(), {});
  EXPECT_EQ(0, t.links.inter_gbps);
  EXPECT_TRUE(starts_with(t.links.inter_from, "unknown: no RDMA device")) << t.links.inter_from;
  EXPECT_EQ(450, t.links.intra_gbps);
}

TEST(TopologyLinks, ACorruptRateLeavesThatPortOut) {
  fixture::SysfsTree tree;
  fixture::dgx_h100(tree);
  tree.file("/sys/class/infiniband/mlx5_5/ports/1/rate", "\x01\x02 nonsense\n");
  const topology::NodeTopology node =
      topology::describe_node(topology::Sysfs(tree.root()), {fixture::dgx_h100_gpus()[5]}, "", 8);
  const TopologySection t = build_topology_section(read_snapshot(node), shape(8, 1, 8), {});
  EXPECT_EQ(43.75, t.links.inter_gbps) << "7 x 400 Gb/s over 8 GPUs";
  EXPECT_EQ(1u, t.node.corrupt.size());
  EXPECT_EQ("mlx5_5", t.node.affinity[0].nic) << "still the nearest active port";
}

TEST(TopologyShape, AProcessHoldingAWholeCommunicatorIsOneNode) {
  std::vector<nccl::CommRow> comms;
  for (int r = 0; r < 4; ++r) comms.push_back(nccl::CommRow{4, r, r, true, false});
  topology::Snapshot off;
  off.status = topology::Status::kNotRead;
  const TopologySection t = build_topology_section(off, JobIdentity(), comms);
  EXPECT_EQ(1, t.links.nodes);
  EXPECT_EQ(4, t.links.ranks_per_node);
  EXPECT_EQ("measured: this process holds all 4 ranks of a communicator", t.links.shape_from);
  comms.pop_back();
  EXPECT_EQ(0, build_topology_section(off, JobIdentity(), comms).links.nodes);
  JobIdentity only_local;
  only_local.local_world_size = 4;
  only_local.local_world_size_from = "LOCAL_WORLD_SIZE";
  const TopologyLinks l = build_topology_section(off, only_local, {}).links;
  EXPECT_EQ(4, l.ranks_per_node);
  EXPECT_EQ(0, l.nodes);
  EXPECT_TRUE(starts_with(l.shape_from, "unknown: only LOCAL_WORLD_SIZE=4")) << l.shape_from;
}

TEST(TopologyJson, AbsentIsNull) {
  const std::string json = format_json(testing_sample::sample_summary());
  EXPECT_NE(std::string::npos, json.find("\"topology\": null")) << json;
}

TEST(TopologyJson, RoundTripsByteForByte) {
  fixture::SysfsTree tree;
  Summary original = testing_sample::sample_summary();
  original.topology = dgx_section(tree);
  original.topology.node.gpus[0].peers = {1, 2};
  original.topology.node.corrupt = {"/x/rate: 'y'"};
  const std::string json = format_json(original);
  EXPECT_NE(std::string::npos, json.find("\"intra_gbps\": 450,")) << json;
  EXPECT_NE(std::string::npos, json.find("\"closeness\": \"same_pcie_switch\"")) << json;
  EXPECT_NE(std::string::npos, json.find("\"pci_path\": [\"pci0000:15\", \"0000:15:01.0\"")) << json;
  Summary back;
  std::string error;
  ASSERT_TRUE(summary_from_json(json, &back, &error)) << error;
  EXPECT_EQ(json, format_json(back));
  EXPECT_EQ(format_text(original), format_text(back));
  ASSERT_TRUE(back.topology.present);
  EXPECT_EQ(8u, back.topology.node.nics.size());
  EXPECT_EQ(450, back.topology.links.intra_gbps);
  EXPECT_EQ((std::vector<int>{1, 2}), back.topology.node.gpus[0].peers);
}

TEST(TopologyJson, ABadClosenessIsMalformed) {
  fixture::SysfsTree tree;
  Summary s = testing_sample::sample_summary();
  s.topology = dgx_section(tree);
  std::string json = format_json(s);
  const size_t at = json.find("\"same_pcie_switch\"");
  ASSERT_NE(std::string::npos, at);
  json.replace(at, 18, "\"next_door\"");
  Summary back;
  std::string error;
  EXPECT_FALSE(summary_from_json(json, &back, &error));
  EXPECT_NE(std::string::npos, error.find("topology.affinity[0].closeness")) << error;
}

TEST(TopologyText, FullBlockAndShortLine) {
  fixture::SysfsTree tree;
  Summary s = testing_sample::sample_summary();
  s.topology = dgx_section(tree);
  const std::string full = unwrapped(format_text(s));
  EXPECT_NE(std::string::npos,
            full.find("topology: GPU 0 NVIDIA H100 80GB HBM3 (0000:18:00.0, NUMA 0): 18 NVLink 4 links up, 450 GB/s "
                      "per direction; PCIe gen 5 x16 at most (now gen 5 x16)"))
      << full;
  EXPECT_NE(std::string::npos, full.find("topology: 8 NIC ports, 8 active: InfiniBand 400 Gb/s each")) << full;
  EXPECT_NE(std::string::npos, full.find("topology: GPU 0's nearest NIC: mlx5_0:1 (same_pcie_switch)")) << full;
  const std::string links =
      "topology: within the node 450 GB/s (NVLink), between nodes 50 GB/s per rank and direction; 2 nodes x 8 ranks";
  EXPECT_NE(std::string::npos, full.find(links)) << full;
  const std::string brief = unwrapped(format_text(s, TextDetail::kShort));
  EXPECT_NE(std::string::npos, brief.find(links)) << brief;
  EXPECT_EQ(std::string::npos, brief.find("nearest NIC")) << "one line in the short text";
  EXPECT_EQ(0u, format_text(s).find(format_text(s, TextDetail::kShort))) << "the full text's first lines";
  s.topology = TopologySection();
  EXPECT_EQ(std::string::npos, format_text(s).find("topology:"));
}

}  // namespace
}  // namespace report
}  // namespace gpuslack

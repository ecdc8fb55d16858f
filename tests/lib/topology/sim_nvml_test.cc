// The topology read as the session reads it (topology::tick on this
// thread, standing in for the reporter) from the simulated device: two
// GPUs in use, NVML's NVLink and PCIe answers (tests/simcuda/nvml.cc), peer
// access from the runtime, places from a fixture sysfs tree.
//
// Built twice (tests/lib/CMakeLists.txt): with GPUSIM_NVLINK_LINKS=18 (an
// HGX H100's NVLink 4) and without it (PCIe GPUs, gen 5 x16); the
// expectations follow the variable.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include "report/topology.h"
#include "topology/topology.h"
#include "sysfs_fixture.h"

namespace gpuslack {
namespace topology {
namespace {

using testing_fixture::SysfsTree;

int nvlink_links_set() {
  const char* v = getenv("GPUSIM_NVLINK_LINKS");
  return v ? atoi(v) : 0;
}

TEST(TopologySimulatedNvml, ReadsTheLinksOfTheDevicesInUse) {
  SysfsTree tree;
  // The simulated devices sit at 0000:00:<d>.0, on one host bridge.
  tree.pci_function({"pci0000:00", "0000:00:00.0"}, 0);
  tree.pci_function({"pci0000:00", "0000:00:01.0"}, 0);
  ASSERT_EQ(0, setenv("GPUSLACK_TEST_SYSFS_ROOT", tree.root().c_str(), 1));
  configure(true);
  tick();  // no device in use yet: the node alone
  Snapshot before = snapshot();
  EXPECT_EQ(Status::kRead, before.status);
  EXPECT_EQ(2, before.node.gpus_on_node);
  EXPECT_TRUE(before.node.gpus.empty());
  EXPECT_EQ("no device in use", before.node.gpus_unknown);
  for (int d = 0; d < 2; ++d) {
    ASSERT_EQ(cudaSuccess, cudaSetDevice(d));
    ASSERT_EQ(cudaSuccess, cudaFree(nullptr));  // the primary context, active
  }
  read_if_ready();  // what a summary does
  const Snapshot s = snapshot();
  unsetenv("GPUSLACK_TEST_SYSFS_ROOT");
  ASSERT_EQ(2u, s.node.gpus.size());
  const int links = nvlink_links_set();
  for (int d = 0; d < 2; ++d) {
    const Gpu& g = s.node.gpus[d];
    EXPECT_EQ(d, g.device);
    EXPECT_EQ("gpusim simulated device " + std::to_string(d), g.name);
    EXPECT_EQ(links, g.nvlink_links);
    EXPECT_EQ(links > 0 ? 4 : 0, g.nvlink_generation);
    EXPECT_EQ(links * 25.0, g.nvlink_gbps);
    EXPECT_EQ(5, g.pcie_generation);
    EXPECT_EQ(16, g.pcie_width);
    EXPECT_EQ(5, g.pcie_max_generation);
    EXPECT_EQ(16, g.pcie_max_width);
    EXPECT_NEAR(63.0, g.pcie_gbps, 0.1);
    EXPECT_EQ(std::vector<int>{1 - d}, g.peers);
    EXPECT_EQ("", g.unknown);
    EXPECT_EQ(0, g.place.numa_node);
    EXPECT_EQ((std::vector<std::string>{"pci0000:00", "0000:00:0" + std::to_string(d) + ".0"}), g.place.path);
  }
  EXPECT_TRUE(s.node.nics.empty());
  // The summary's links from it.
  report::JobIdentity job;
  const report::TopologySection t = report::build_topology_section(s, job, {});
  if (links > 0) {
    EXPECT_EQ(links * 25.0, t.links.intra_gbps);
    EXPECT_TRUE(t.links.intra_is_nvlink);
    EXPECT_EQ("measured: NVML: GPU 0 has " + std::to_string(links) + " NVLink 4 links up, 25 GB/s each per direction",
              t.links.intra_from);
  } else {
    EXPECT_NEAR(63.0, t.links.intra_gbps, 0.1);
    EXPECT_FALSE(t.links.intra_is_nvlink);
    EXPECT_EQ("measured: NVML: GPU 0 has no NVLink; PCIe gen 5 x16 at most", t.links.intra_from);
  }
  EXPECT_EQ(0, t.links.inter_gbps);
  // A third tick reads nothing new.
  tick();
  EXPECT_EQ(2u, snapshot().node.gpus.size());
}

}  // namespace
}  // namespace topology
}  // namespace gpuslack

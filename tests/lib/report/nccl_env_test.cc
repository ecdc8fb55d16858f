// The NCCL_* variables the summary records (Note [NCCL variables]): the
// tuning allow-list, never a secret's name, and the collectives section
// built from the real environment.
#include "report/nccl_env.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "report/collectives.h"
#include "report/summary.h"

namespace gpuslack {
namespace report {
namespace {

TEST(NcclEnv, TuningVariablesAreRecorded) {
  for (const char* name : {"NCCL_ALGO", "NCCL_PROTO", "NCCL_IB_HCA", "NCCL_IB_TIMEOUT", "NCCL_SOCKET_IFNAME",
                           "NCCL_NET_GDR_LEVEL", "NCCL_P2P_LEVEL", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE",
                           "NCCL_BUFFSIZE", "NCCL_NTHREADS", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS",
                           "NCCL_CROSS_NIC", "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_NVLS_ENABLE"})
    EXPECT_TRUE(nccl_variable_recorded(name)) << name;
}

TEST(NcclEnv, SecretsAddressesAndUnknownNamesAreNot) {
  for (const char* name :
       {"NCCL_IB_PASSWORD", "NCCL_IB_Password", "NCCL_SOCKET_SECRET", "NCCL_P2P_TOKEN", "NCCL_IB_PKEY",
        "NCCL_SHM_key_file", "NCCL_ALGO_TOKEN", "NCCL_COMM_ID", "NCCL_HOSTID", "NCCL_DEBUG_FILE",
        "NCCL_CONF_FILE", "NCCL_MY_OWN_SETTING", "NCCL_", "NCCL_IB_", "NCCL_ALGOX", "nccl_algo", "ALGO"})
    EXPECT_FALSE(nccl_variable_recorded(name)) << name;
}

TEST(NcclEnv, VariablesComeSortedFromAnEnvironmentArray) {
  const char* envp[] = {"NCCL_PROTO=LL128", "PATH=/bin", "NCCL_IB_PASSWORD=hunter2", "NCCL_ALGO=Ring",
                        "NCCL_BROKEN", "NCCL_IB_HCA==mlx5_0:1", nullptr};
  std::vector<std::pair<std::string, std::string>> want = {
      {"NCCL_ALGO", "Ring"}, {"NCCL_IB_HCA", "=mlx5_0:1"}, {"NCCL_PROTO", "LL128"}};
  EXPECT_EQ(want, nccl_variables(envp));
  EXPECT_TRUE(nccl_variables(nullptr).empty());
}

// The section the summary writes, from the process's own environment: the
// password that went into the JSON and onto stderr is left out.
TEST(NcclEnv, TheCollectivesSectionLeavesSecretsOut) {
  setenv("NCCL_IB_PASSWORD", "hunter2", 1);
  setenv("NCCL_ALGO", "Tree", 1);
  RunInfo run;
  run.communicators.push_back(nccl::CommRow{});
  CollectivesSection c = build_collectives(run, 1e-9, 1.0);
  unsetenv("NCCL_IB_PASSWORD");
  unsetenv("NCCL_ALGO");
  ASSERT_TRUE(c.present);
  bool algo = false;
  for (const auto& [name, value] : c.env) {
    EXPECT_NE("hunter2", value) << name;
    EXPECT_NE("NCCL_IB_PASSWORD", name);
    algo = algo || (name == "NCCL_ALGO" && value == "Tree");
  }
  EXPECT_TRUE(algo);
}

}  // namespace
}  // namespace report
}  // namespace gpuslack

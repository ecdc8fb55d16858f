// Job identity: which launcher variable gives each field, what reads as
// absent, the job id's precedence, and names fit for files and labels.
#include "report/job.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace gpuslack {
namespace report {
namespace {

using Env = std::map<std::string, std::string>;

const char* lookup(const char* name, void* context) {
  const Env& env = *static_cast<const Env*>(context);
  auto it = env.find(name);
  return it == env.end() ? nullptr : it->second.c_str();
}

JobIdentity job_of(const Env& env) { return job_from(lookup, const_cast<Env*>(&env)); }

TEST(JobIdentity, NothingSetIsNothingKnown) {
  JobIdentity j = job_of({});
  EXPECT_EQ("", j.id);
  EXPECT_EQ("", j.id_from);
  EXPECT_EQ(-1, j.rank);
  EXPECT_EQ("", j.rank_from);
  EXPECT_EQ(-1, j.local_rank);
  EXPECT_EQ(-1, j.world_size);
  EXPECT_EQ(-1, j.node_rank);
  EXPECT_EQ(0, j.restart);
  EXPECT_EQ("", j.launcher);
}

TEST(JobIdentity, Torchrun) {
  JobIdentity j = job_of({{"RANK", "11"}, {"LOCAL_RANK", "3"}, {"WORLD_SIZE", "16"}, {"GROUP_RANK", "1"},
                          {"TORCHELASTIC_RUN_ID", "run-7"}, {"TORCHELASTIC_RESTART_COUNT", "2"}});
  EXPECT_EQ(11, j.rank);
  EXPECT_EQ("RANK", j.rank_from);
  EXPECT_EQ("torchrun", j.launcher);
  EXPECT_EQ(3, j.local_rank);
  EXPECT_EQ(16, j.world_size);
  EXPECT_EQ(1, j.node_rank);
  EXPECT_EQ(2, j.restart);
  EXPECT_EQ("run-7", j.id);
  EXPECT_EQ("TORCHELASTIC_RUN_ID", j.id_from);
}

// The job's shape (issue 26): ranks per node and nodes, each launcher's.
TEST(JobIdentity, ShapeFromEachLauncher) {
  JobIdentity torchrun = job_of({{"LOCAL_WORLD_SIZE", "4"}, {"GROUP_WORLD_SIZE", "2"}, {"WORLD_SIZE", "8"}});
  EXPECT_EQ(4, torchrun.local_world_size);
  EXPECT_EQ("LOCAL_WORLD_SIZE", torchrun.local_world_size_from);
  EXPECT_EQ(2, torchrun.nodes);
  EXPECT_EQ("GROUP_WORLD_SIZE", torchrun.nodes_from);
  JobIdentity slurm = job_of({{"SLURM_NTASKS_PER_NODE", "8"}, {"SLURM_JOB_NUM_NODES", "32"}});
  EXPECT_EQ(8, slurm.local_world_size);
  EXPECT_EQ("SLURM_NTASKS_PER_NODE", slurm.local_world_size_from);
  EXPECT_EQ(32, slurm.nodes);
  EXPECT_EQ("SLURM_JOB_NUM_NODES", slurm.nodes_from);
  JobIdentity step = job_of({{"SLURM_STEP_NUM_NODES", "4"}, {"SLURM_JOB_NUM_NODES", "32"}});
  EXPECT_EQ(4, step.nodes) << "the step's nodes, not the allocation's";
  JobIdentity mpi = job_of({{"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
  EXPECT_EQ(4, mpi.local_world_size);
  EXPECT_EQ(4, job_of({{"MPI_LOCALNRANKS", "4"}}).local_world_size);
  JobIdentity none = job_of({{"SLURM_NTASKS_PER_NODE", "4(x2)"}});
  EXPECT_EQ(-1, none.local_world_size);
  EXPECT_EQ("", none.local_world_size_from);
  EXPECT_EQ(-1, none.nodes);
}

// Slurm sets its per-node task lists always, SLURM_NTASKS_PER_NODE only
// with --ntasks-per-node: this node's entry (SLURM_NODEID) is the count.
TEST(JobIdentity, RanksPerNodeFromSlurmsPerNodeLists) {
  JobIdentity j = job_of({{"SLURM_TASKS_PER_NODE", "2(x3),1"}, {"SLURM_NODEID", "3"}});
  EXPECT_EQ(1, j.local_world_size);
  EXPECT_EQ("SLURM_TASKS_PER_NODE", j.local_world_size_from);
  EXPECT_EQ(2, job_of({{"SLURM_TASKS_PER_NODE", "2(x3),1"}, {"SLURM_NODEID", "2"}}).local_world_size);
  EXPECT_EQ(-1, job_of({{"SLURM_TASKS_PER_NODE", "2(x3),1"}, {"SLURM_NODEID", "4"}}).local_world_size)
      << "no such node";
  EXPECT_EQ(4, job_of({{"SLURM_TASKS_PER_NODE", "4(x2)"}}).local_world_size) << "the same on every node";
  EXPECT_EQ(-1, job_of({{"SLURM_TASKS_PER_NODE", "4,3"}}).local_world_size) << "differs, and no node id";
  JobIdentity step = job_of({{"SLURM_STEP_TASKS_PER_NODE", "3"}, {"SLURM_TASKS_PER_NODE", "8"}});
  EXPECT_EQ(3, step.local_world_size) << "the step's tasks, not the allocation's";
  EXPECT_EQ("SLURM_STEP_TASKS_PER_NODE", step.local_world_size_from);
  EXPECT_EQ(8, job_of({{"SLURM_NTASKS_PER_NODE", "8"}, {"SLURM_TASKS_PER_NODE", "4"}}).local_world_size);
  for (const char* bad : {"", "x", "4(", "4(x)", "4(x0)", "4(x2", "4,,2", "4,", "-1", "4(y2)", "99999999999"}) {
    EXPECT_EQ(-1, job_of({{"SLURM_TASKS_PER_NODE", bad}}).local_world_size) << bad;
  }
}

TEST(JobIdentity, TorchrunsDefaultRunIdIsNoId) {
  JobIdentity j = job_of({{"RANK", "0"}, {"TORCHELASTIC_RUN_ID", "none"}});
  EXPECT_EQ("", j.id);
  EXPECT_EQ("", j.id_from);
}

TEST(JobIdentity, SlurmAndTorchrunInsideSrunPrefersTorchrun) {
  Env slurm{{"SLURM_PROCID", "5"}, {"SLURM_LOCALID", "1"}, {"SLURM_NODEID", "2"}, {"SLURM_NTASKS", "8"},
            {"SLURM_JOB_ID", "12345"}, {"SLURM_RESTART_COUNT", "1"}};
  JobIdentity j = job_of(slurm);
  EXPECT_EQ(5, j.rank);
  EXPECT_EQ("SLURM_PROCID", j.rank_from);
  EXPECT_EQ("slurm", j.launcher);
  EXPECT_EQ(1, j.local_rank);
  EXPECT_EQ(2, j.node_rank);
  EXPECT_EQ(8, j.world_size);
  EXPECT_EQ(1, j.restart);
  EXPECT_EQ("12345", j.id);
  EXPECT_EQ("SLURM_JOB_ID", j.id_from);

  slurm["RANK"] = "9";
  slurm["TORCHELASTIC_RUN_ID"] = "elastic";
  j = job_of(slurm);
  EXPECT_EQ(9, j.rank);
  EXPECT_EQ("torchrun", j.launcher);
  EXPECT_EQ("12345", j.id);  // Slurm's job id before torchrun's run id
}

TEST(JobIdentity, OpenMpiAndPmi) {
  JobIdentity j = job_of({{"OMPI_COMM_WORLD_RANK", "4"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                          {"OMPI_COMM_WORLD_SIZE", "6"}, {"OMPI_MCA_ess_base_jobid", "3120562177"}});
  EXPECT_EQ(4, j.rank);
  EXPECT_EQ("mpirun", j.launcher);
  EXPECT_EQ(0, j.local_rank);
  EXPECT_EQ(6, j.world_size);
  EXPECT_EQ(-1, j.node_rank);
  EXPECT_EQ("3120562177", j.id);
  EXPECT_EQ("OMPI_MCA_ess_base_jobid", j.id_from);

  j = job_of({{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}, {"MPI_LOCALRANKID", "1"}, {"PMIX_NAMESPACE", "slurm.pmix.77.0"}});
  EXPECT_EQ(2, j.rank);
  EXPECT_EQ("PMI_RANK", j.rank_from);
  EXPECT_EQ("pmi", j.launcher);
  EXPECT_EQ(4, j.world_size);
  EXPECT_EQ(1, j.local_rank);
  EXPECT_EQ("slurm.pmix.77.0", j.id);
}

TEST(JobIdentity, GpuslackJobIdWins) {
  JobIdentity j = job_of({{"SLURM_JOB_ID", "12345"}, {"GPUSLACK_JOB_ID", "nightly/7"}});
  EXPECT_EQ("nightly/7", j.id);
  EXPECT_EQ("GPUSLACK_JOB_ID", j.id_from);
}

TEST(JobIdentity, BadNumbersReadAsAbsentAndTheNextVariableCounts) {
  JobIdentity j = job_of({{"RANK", "-1"}, {"SLURM_PROCID", "7"}, {"LOCAL_RANK", "1x"}, {"WORLD_SIZE", "99999999999"},
                          {"TORCHELASTIC_RESTART_COUNT", ""}, {"GROUP_RANK", " 1"}});
  EXPECT_EQ(7, j.rank);
  EXPECT_EQ("SLURM_PROCID", j.rank_from);
  EXPECT_EQ(-1, j.local_rank);
  EXPECT_EQ(-1, j.world_size);
  EXPECT_EQ(-1, j.node_rank);
  EXPECT_EQ(0, j.restart);
}

TEST(JobIdentity, EmptyIdsAreSkippedAndLongOnesCut) {
  JobIdentity j = job_of({{"GPUSLACK_JOB_ID", ""}, {"SLURM_JOB_ID", std::string(500, 'j')}});
  EXPECT_EQ("SLURM_JOB_ID", j.id_from);
  EXPECT_EQ(std::string(kMaxJobIdLength, 'j'), j.id);
}

TEST(JobIdentity, NcclRanksAreTheDistinctPairsInOrderSeen) {
  std::vector<nccl::CommRow> comms(4);
  comms[0].nranks = 8, comms[0].rank = 3;
  comms[1].nranks = 2, comms[1].rank = 1;
  comms[2].nranks = 8, comms[2].rank = 3;  // a second world communicator
  comms[3].nranks = 4, comms[3].rank = 0;
  std::vector<NcclRank> ranks = nccl_ranks_of(comms);
  ASSERT_EQ(3u, ranks.size());
  EXPECT_EQ((NcclRank{8, 3}), ranks[0]);
  EXPECT_EQ((NcclRank{2, 1}), ranks[1]);
  EXPECT_EQ((NcclRank{4, 0}), ranks[2]);
}

TEST(JobIdentity, FileNamePartKeepsOnlySafeBytes) {
  EXPECT_EQ("nightly_7_.._x", file_name_part("nightly/7 ../x"));
  EXPECT_EQ("a.b-c_d", file_name_part("a.b-c_d"));
  EXPECT_EQ("unknown", file_name_part(""));
  EXPECT_EQ("_", file_name_part("\xff"));
  EXPECT_EQ(64u, file_name_part(std::string(100, 'x')).size());
}

}  // namespace
}  // namespace report
}  // namespace gpuslack

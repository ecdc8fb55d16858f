// Who this process is in its job: the rank, node and job id its launcher
// (torchrun, Slurm, Open MPI, a PMI launcher) gave it, read from the
// environment, and the NCCL communicator ranks it was seen to hold. The
// "job" object of the summary (docs/summary.schema.json), the identity line
// of the text, the file names (report/output.h) and the labels of the
// metrics (report/prometheus.h) come from here.
//
// Which variable gives each field, first match wins (a process under srun
// running torchrun sees both; torchrun's are the ones NCCL uses):
//   rank        RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK
//   local_rank  LOCAL_RANK, SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID
//   world_size  WORLD_SIZE, SLURM_NTASKS, OMPI_COMM_WORLD_SIZE, PMI_SIZE
//   node_rank   GROUP_RANK, SLURM_NODEID
//   local_world_size  (ranks on this node) LOCAL_WORLD_SIZE, SLURM_NTASKS_PER_NODE,
//               OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS, then this node's
//               entry (SLURM_NODEID) of SLURM_STEP_TASKS_PER_NODE or
//               SLURM_TASKS_PER_NODE ("2(x3),1")
//   nodes       GROUP_WORLD_SIZE (torchrun: one agent per node), SLURM_STEP_NUM_NODES,
//               SLURM_JOB_NUM_NODES
//   restart     TORCHELASTIC_RESTART_COUNT, SLURM_RESTART_COUNT (else 0)
//   id          GPUSLACK_JOB_ID, SLURM_JOB_ID, TORCHELASTIC_RUN_ID (not its
//               default "none"), OMPI_MCA_ess_base_jobid, PMIX_NAMESPACE
// launcher names the family of the variable that gave the rank: "torchrun"
// (RANK), "slurm", "mpirun", "pmi"; "" when no rank was found. A number
// that does not parse as a non-negative int reads as absent (-1); an id is
// kept up to kMaxJobIdLength bytes.
//
// Note [Secure execution] (config/options.h): every variable is read
// through config/environment.h, so a secure process has no job identity.
//
// Thread safety: job_from_environment reads the environment (see
// config/environment.h); the rest are pure.
#pragma once

#include <string>
#include <vector>

#include "nccl/communicators.h"

namespace gpuslack {
namespace report {

inline constexpr size_t kMaxJobIdLength = 128;

struct NcclRank {
  int nranks = 0;
  int rank = -1;
  bool operator==(const NcclRank& o) const { return nranks == o.nranks && rank == o.rank; }
};

struct JobIdentity {
  std::string id;        // "" when no launcher named one
  std::string id_from;   // the variable that gave it
  int rank = -1;
  std::string rank_from;
  int local_rank = -1;
  int world_size = -1;
  int node_rank = -1;
  int local_world_size = -1;           // ranks on this node
  std::string local_world_size_from;   // the variable that gave it (not in the JSON)
  int nodes = -1;                      // nodes of the job
  std::string nodes_from;              // (not in the JSON)
  std::string node;      // the host name (Summary::host)
  int restart = 0;
  std::string launcher;  // "torchrun", "slurm", "mpirun", "pmi" or ""
  std::vector<NcclRank> nccl_ranks;  // distinct (nranks, rank) of the communicators seen, in order seen
};

// Reads a variable; environment_variable() in the library, a table in tests.
using EnvironmentLookup = const char* (*)(const char* name, void* context);

// The identity the environment gives (node and nccl_ranks left empty).
JobIdentity job_from_environment();
JobIdentity job_from(EnvironmentLookup lookup, void* context);

// The distinct (nranks, rank) pairs of `communicators`, in order.
std::vector<NcclRank> nccl_ranks_of(const std::vector<nccl::CommRow>& communicators);

// `text` with every byte outside [A-Za-z0-9._-] replaced by '_', at most
// 64 bytes, "unknown" when empty: fit for a file name or a label.
std::string file_name_part(const std::string& text);

}  // namespace report
}  // namespace gpuslack

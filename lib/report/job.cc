// See job.h. Report time only: reads the environment.
#include "report/job.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "config/environment.h"

namespace gpuslack {
namespace report {
namespace {

// A non-negative decimal integer that fits an int, or -1.
int parse_count(const char* text) {
  if (text == nullptr || *text < '0' || *text > '9') return -1;
  const int saved_errno = errno;
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  bool in_range = errno == 0;
  errno = saved_errno;
  if (!in_range || *end != '\0' || v < 0 || v > INT_MAX) return -1;
  return static_cast<int>(v);
}

// The count for node `node` in a Slurm per-node list: "2(x3),1" is two
// tasks on each of the first three nodes and one on the fourth (sbatch(1),
// SLURM_TASKS_PER_NODE). With node < 0 (no node id), the count when every
// node has the same one. -1 when the list does not parse or has no such node.
int tasks_on_node(const char* list, int node) {
  if (list == nullptr || *list == '\0') return -1;
  int index = 0, only = -1;
  bool uniform = true;
  for (const char* p = list;;) {
    char* end = nullptr;
    if (*p < '0' || *p > '9') return -1;
    long count = std::strtol(p, &end, 10);
    long repeat = 1;
    if (*end == '(') {
      if (end[1] != 'x' || end[2] < '1' || end[2] > '9') return -1;
      repeat = std::strtol(end + 2, &end, 10);
      if (*end != ')') return -1;
      ++end;
    }
    if (count > INT_MAX || repeat > INT_MAX) return -1;
    if (node >= 0 && node >= index && node < index + repeat) return static_cast<int>(count);
    uniform = uniform && (only < 0 || only == count);
    only = static_cast<int>(count);
    index += static_cast<int>(repeat);
    if (*end == '\0') break;
    if (*end != ',') return -1;
    p = end + 1;
  }
  return node < 0 && uniform ? only : -1;
}

struct Reader {
  EnvironmentLookup lookup;
  void* context;

  // The first of `names` that holds a count, and which; -1 if none does.
  int count(std::initializer_list<const char*> names, const char** from = nullptr) const {
    for (const char* name : names) {
      int v = parse_count(lookup(name, context));
      if (v >= 0) {
        if (from) *from = name;
        return v;
      }
    }
    return -1;
  }
};

const char* launcher_of(const char* rank_from) {
  if (std::strcmp(rank_from, "RANK") == 0) return "torchrun";
  if (std::strcmp(rank_from, "SLURM_PROCID") == 0) return "slurm";
  if (std::strcmp(rank_from, "OMPI_COMM_WORLD_RANK") == 0) return "mpirun";
  return "pmi";
}

const char* from_process_environment(const char* name, void*) {
  return environment_variable(name);  // Note [Secure execution]
}

}  // namespace

JobIdentity job_from(EnvironmentLookup lookup, void* context) {
  Reader env{lookup, context};
  JobIdentity job;
  const char* rank_from = nullptr;
  job.rank = env.count({"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"}, &rank_from);
  if (rank_from) {
    job.rank_from = rank_from;
    job.launcher = launcher_of(rank_from);
  }
  job.local_rank = env.count({"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"});
  job.world_size = env.count({"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"});
  job.node_rank = env.count({"GROUP_RANK", "SLURM_NODEID"});
  const char* from = nullptr;
  job.local_world_size = env.count(
      {"LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}, &from);
  if (job.local_world_size >= 0) job.local_world_size_from = from;
  // Slurm always sets its per-node lists; SLURM_NTASKS_PER_NODE only when
  // the job asked for --ntasks-per-node. The step's list first: srun's tasks.
  for (const char* name : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
    if (job.local_world_size >= 0) break;
    job.local_world_size = tasks_on_node(lookup(name, context), job.node_rank);
    if (job.local_world_size >= 0) job.local_world_size_from = name;
  }
  from = nullptr;
  job.nodes = env.count({"GROUP_WORLD_SIZE", "SLURM_STEP_NUM_NODES", "SLURM_JOB_NUM_NODES"}, &from);
  if (job.nodes >= 0) job.nodes_from = from;
  int restart = env.count({"TORCHELASTIC_RESTART_COUNT", "SLURM_RESTART_COUNT"});
  job.restart = restart > 0 ? restart : 0;
  for (const char* name :
       {"GPUSLACK_JOB_ID", "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"}) {
    const char* v = lookup(name, context);
    if (v == nullptr || *v == '\0') continue;
    // torchrun's --rdzv-id defaults to "none": every job would share it.
    if (std::strcmp(name, "TORCHELASTIC_RUN_ID") == 0 && std::strcmp(v, "none") == 0) continue;
    job.id.assign(v, strnlen(v, kMaxJobIdLength));
    job.id_from = name;
    break;
  }
  return job;
}

JobIdentity job_from_environment() { return job_from(from_process_environment, nullptr); }

std::vector<NcclRank> nccl_ranks_of(const std::vector<nccl::CommRow>& communicators) {
  std::vector<NcclRank> out;
  for (const nccl::CommRow& c : communicators) {
    NcclRank r{c.nranks, c.rank};
    bool seen = false;
    for (const NcclRank& o : out) seen = seen || o == r;
    if (!seen) out.push_back(r);
  }
  return out;
}

std::string file_name_part(const std::string& text) {
  std::string out = text.substr(0, 64);
  for (char& c : out) {
    bool keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                c == '_' || c == '-';
    if (!keep) c = '_';
  }
  return out.empty() ? std::string("unknown") : out;
}

}  // namespace report
}  // namespace gpuslack

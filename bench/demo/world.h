// The demo's multi-process mode: who this process is in a job started the
// way torchrun starts one (RANK, LOCAL_RANK, WORLD_SIZE, GROUP_RANK) or srun
// does (SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS, SLURM_NODEID: each read
// where torchrun's is not set), and
// the NCCL unique id handed from rank 0 to every rank through a shared
// folder (as a TCP store would: rank 0 writes it, then renames it into
// place; the others poll for it). The file is named by the job id and
// restart count: a folder reused by a job with the same names would hand
// its ranks the old id, so a launcher gives each job a fresh folder.
//
// Used by train_loop.cc from main's thread only.
#pragma once

#include <nccl.h>

#include <string>

namespace demo {

struct World {
  bool on = false;      // a rendezvous folder given (or --world-from-env)
  int rank = 0;         // RANK or SLURM_PROCID
  int local_rank = 0;   // LOCAL_RANK or SLURM_LOCALID: this process's device
  int size = 1;         // WORLD_SIZE or SLURM_NTASKS
  int node_rank = 0;    // GROUP_RANK or SLURM_NODEID
  std::string dir;      // where the id file goes (--rendezvous, TRAIN_LOOP_RENDEZVOUS)
  std::string run;      // names the id file: GPUSLACK_JOB_ID, TORCHELASTIC_RUN_ID, MASTER_PORT, SLURM_JOB_ID
};

// Reads the environment; `dir` from the flag when not empty. Exits with
// one line when the environment is incomplete.
World read_world(bool forced, const std::string& dir);

// Rank 0 makes the id and publishes it; the others wait for it (at most
// `timeout_s`). Exits with one line on failure.
ncclUniqueId exchange_id(const World& w, double timeout_s);

}  // namespace demo

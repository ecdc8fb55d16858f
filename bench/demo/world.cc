// The demo's multi-process mode (world.h).
#include "world.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace demo {

namespace {

[[noreturn]] void quit(const std::string& why) {
  std::fprintf(stderr, "train_loop: %s\n", why.c_str());
  std::exit(2);
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end || x < 0) quit(std::string(name) + "=" + v + " is not a number");
  return static_cast<int>(x);
}

std::string env_str(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The first of torchrun's variable and srun's that is set ("" for neither):
// torchrun's win, as in lib/report/job.h.
const char* either(const char* torchrun, const char* slurm) {
  return !env_str(torchrun).empty() || env_str(slurm).empty() ? torchrun : slurm;
}

std::string to_hex(const ncclUniqueId& id) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (char c : id.internal) {
    s += digits[(static_cast<unsigned char>(c) >> 4) & 15];
    s += digits[static_cast<unsigned char>(c) & 15];
  }
  return s;
}

bool from_hex(const std::string& s, ncclUniqueId* id) {
  if (s.size() != 2 * sizeof(id->internal)) return false;
  for (size_t i = 0; i < sizeof(id->internal); ++i) {
    char* end = nullptr;
    std::string byte = s.substr(2 * i, 2);
    id->internal[i] = static_cast<char>(std::strtol(byte.c_str(), &end, 16));
    if (*end) return false;
  }
  return true;
}

}  // namespace

World read_world(bool forced, const std::string& dir) {
  World w;
  // Only when asked: a rank-identity test sets torchrun's variables on a
  // single-process demo, and a demo that then waited for peers would hang.
  w.on = forced || !dir.empty() || !env_str("TRAIN_LOOP_RENDEZVOUS").empty();
  if (!w.on) return w;
  const char* size = either("WORLD_SIZE", "SLURM_NTASKS");
  const char* rank = either("RANK", "SLURM_PROCID");
  if (env_str(size).empty() || env_str(rank).empty())
    quit("multi-process mode needs RANK and WORLD_SIZE (as torchrun sets them) or SLURM_PROCID and SLURM_NTASKS "
         "(as srun does)");
  w.size = env_int(size, 1);
  w.rank = env_int(rank, 0);
  w.local_rank = env_int(either("LOCAL_RANK", "SLURM_LOCALID"), 0);
  w.node_rank = env_int(either("GROUP_RANK", "SLURM_NODEID"), 0);
  if (w.size < 1 || w.rank >= w.size) quit("RANK must be below WORLD_SIZE");
  w.dir = !dir.empty() ? dir : env_str("TRAIN_LOOP_RENDEZVOUS");
  if (w.dir.empty())
    quit("multi-process mode needs a shared folder for the NCCL id: --rendezvous DIR or TRAIN_LOOP_RENDEZVOUS");
  for (const char* name : {"GPUSLACK_JOB_ID", "TORCHELASTIC_RUN_ID", "MASTER_PORT", "SLURM_JOB_ID"})
    if (!env_str(name).empty()) {
      w.run = env_str(name);
      break;
    }
  if (w.run.empty()) w.run = "job";
  w.run += "-restart" + std::to_string(env_int("TORCHELASTIC_RESTART_COUNT", 0));
  return w;
}

ncclUniqueId exchange_id(const World& w, double timeout_s) {
  const std::string path = w.dir + "/nccl-id-" + w.run;
  ncclUniqueId id{};
  if (w.rank == 0) {
    if (ncclResult_t r = ncclGetUniqueId(&id)) quit(std::string("ncclGetUniqueId failed: ") + ncclGetErrorString(r));
    const std::string tmp = path + ".tmp." + std::to_string(getpid());
    {
      std::ofstream f(tmp);
      f << to_hex(id) << "\n";
      if (!f.flush()) quit("cannot write " + tmp);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) quit("cannot rename " + tmp + " to " + path);
    return id;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    std::ifstream f(path);
    std::string line;
    if (f && std::getline(f, line) && from_hex(line, &id)) return id;
    if (std::chrono::steady_clock::now() > deadline)
      quit("rank " + std::to_string(w.rank) + ": no NCCL id from rank 0 in " + path + " after " +
           std::to_string(static_cast<int>(timeout_s)) + " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace demo

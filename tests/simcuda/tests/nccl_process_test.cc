// The simulated NCCL across processes (README.md, "NCCL", "Across
// processes"): ranks in separate processes (nccl_process_rank.cc, one per
// rank) join one ncclUniqueId, reduce correctly through the shared segment,
// wait for a late rank, and fail instead of hanging when a rank dies.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime_api.h>
#include <signal.h>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nccl_tuning.h"

extern char** environ;

namespace {

struct RankResult {
  int exit_code = -1;
  std::string out;
};

std::string hex(const ncclUniqueId& id) {
  std::string s;
  char b[3];
  for (char c : id.internal) {
    std::snprintf(b, sizeof(b), "%02x", static_cast<unsigned char>(c));
    s += b;
  }
  return s;
}

// Starts one process per rank (delays[r] ms before the timed all-reduce,
// modes[r] "run", "die", "one" or "fabric:<bytes>") and waits for all, at
// most `limit`. With `given`, they are ranks first_rank.. of `nranks` of
// that id. `rank_env(r)`: more VAR=value lines for rank r's environment.
std::vector<RankResult> run_job(const std::vector<int>& delays, const std::vector<std::string>& modes,
                                std::chrono::seconds limit, const std::string& timeout_s = "60",
                                const ncclUniqueId* given = nullptr, int first_rank = 0, int nranks = 0,
                                const std::function<std::vector<std::string>(int)>& rank_env = nullptr) {
  const int n = static_cast<int>(delays.size());
  ncclUniqueId id;
  if (given) id = *given;
  else EXPECT_EQ(ncclSuccess, ncclGetUniqueId(&id));
  const std::string id_hex = hex(id);
  if (!given) nranks = n;
  char dir_template[] = "/tmp/gpusim-nccl-test-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "GPUSIM_NCCL_TIMEOUT_S=", 22) != 0 && std::strncmp(*e, "GPUSIM_DEVICE_COUNT=", 20) != 0)
      env_strings.push_back(*e);
  env_strings.push_back("GPUSIM_NCCL_TIMEOUT_S=" + timeout_s);
  env_strings.push_back("GPUSIM_DEVICE_COUNT=1");
  std::vector<pid_t> pids(n, -1);
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> rank_strings = env_strings;
    if (rank_env)
      for (const std::string& e : rank_env(r)) rank_strings.push_back(e);
    std::vector<char*> envp;
    for (auto& s : rank_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    const std::string out = dir + "/rank" + std::to_string(r) + ".out";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, (out + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::string args[] = {NCCL_PROCESS_RANK, id_hex, std::to_string(first_rank + r), std::to_string(nranks),
                          std::to_string(delays[r]), modes[r]};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    EXPECT_EQ(0, posix_spawn(&pids[r], NCCL_PROCESS_RANK, &fa, nullptr, argv.data(), envp.data()));
    posix_spawn_file_actions_destroy(&fa);
  }
  std::vector<RankResult> results(n);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int left = n;
  while (left > 0) {
    for (int r = 0; r < n; ++r) {
      if (pids[r] < 0) continue;
      int status = 0;
      if (waitpid(pids[r], &status, WNOHANG) == pids[r]) {
        results[r].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        pids[r] = -1;
        --left;
      }
    }
    if (left == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "the ranks did not finish within " << limit.count() << " s: a hang";
      for (pid_t p : pids)
        if (p > 0) kill(p, SIGKILL), waitpid(p, nullptr, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (int r = 0; r < n; ++r) {
    std::ifstream f(dir + "/rank" + std::to_string(r) + ".out");
    std::stringstream ss;
    ss << f.rdbuf();
    results[r].out = ss.str();
    std::ifstream e(dir + "/rank" + std::to_string(r) + ".out.err");
    std::stringstream es;
    es << e.rdbuf();
    if (!es.str().empty()) results[r].out += " [stderr] " + es.str();
  }
  std::system(("rm -rf " + dir).c_str());
  return results;
}

double timed_ms(const RankResult& r) {
  size_t at = r.out.find("timed_ms ");
  return at == std::string::npos ? -1 : std::atof(r.out.c_str() + at + 9);
}

TEST(NcclProcesses, FourProcessesReduceCorrectlyAndWaitForTheLateRank) {
  const int kDelayMs = 400;
  auto results = run_job({0, 0, kDelayMs, 0}, {"run", "run", "run", "run"}, std::chrono::seconds(100));
  for (size_t r = 0; r < results.size(); ++r) {
    EXPECT_EQ(0, results[r].exit_code) << "rank " << r << ": " << results[r].out;
    EXPECT_NE(std::string::npos, results[r].out.find(" ok ")) << results[r].out;
  }
  // The late rank arrives last: its all-reduce takes the modeled time, the
  // others' about the delay more (wide margins: these run on a loaded host).
  const double late = timed_ms(results[2]);
  EXPECT_GE(late, 0);
  EXPECT_LT(late, 0.5 * kDelayMs);
  for (int r : {0, 1, 3}) {
    EXPECT_GT(timed_ms(results[r]), 0.6 * kDelayMs) << "rank " << r;
    EXPECT_LT(timed_ms(results[r]), 10.0 * kDelayMs) << "rank " << r;
  }
}

TEST(NcclProcesses, TwoProcessesWithNoDelayTakeAboutTheModeledTime) {
  auto results = run_job({0, 0}, {"run", "run"}, std::chrono::seconds(100));
  for (size_t r = 0; r < results.size(); ++r) {
    EXPECT_EQ(0, results[r].exit_code) << "rank " << r << ": " << results[r].out;
    EXPECT_GE(timed_ms(results[r]), 0) << results[r].out;
    EXPECT_LT(timed_ms(results[r]), 300) << results[r].out;  // 1 MiB: ~20 us modeled
  }
}

TEST(NcclProcesses, TwoRanksInThisProcessAndTwoInOthers) {
  // Ranks 0 and 1 are threads here (devices 0 and 1), 2 and 3 processes
  // ("one": a single all-reduce of 1001 int32, checked).
  ncclUniqueId id;
  ASSERT_EQ(ncclSuccess, ncclGetUniqueId(&id));
  const size_t count = 1001;
  std::vector<std::vector<int32_t>> got(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      ASSERT_EQ(cudaSuccess, cudaSetDevice(r));
      ncclComm_t comm = nullptr;
      ASSERT_EQ(ncclSuccess, ncclCommInitRank(&comm, 4, id, r));
      cudaStream_t s;
      ASSERT_EQ(cudaSuccess, cudaStreamCreate(&s));
      std::vector<int32_t> h(count);
      for (size_t i = 0; i < count; ++i) h[i] = static_cast<int32_t>(r * 1000003 + i * 7 + 1);
      int32_t* d = nullptr;
      ASSERT_EQ(cudaSuccess, cudaMalloc(&d, count * 4));
      ASSERT_EQ(cudaSuccess, cudaMemcpy(d, h.data(), count * 4, cudaMemcpyHostToDevice));
      ASSERT_EQ(ncclSuccess, ncclAllReduce(d, d, count, ncclInt32, ncclSum, comm, s));
      ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
      ncclResult_t async = ncclInternalError;
      EXPECT_EQ(ncclSuccess, ncclCommGetAsyncError(comm, &async));
      EXPECT_EQ(ncclSuccess, async);
      ASSERT_EQ(cudaSuccess, cudaMemcpy(h.data(), d, count * 4, cudaMemcpyDeviceToHost));
      got[r] = h;
      cudaFree(d);
      cudaStreamDestroy(s);
      EXPECT_EQ(ncclSuccess, ncclCommDestroy(comm));
    });
  }
  auto results = run_job({0, 0}, {"one", "one"}, std::chrono::seconds(100), "60", &id, 2, 4);
  for (auto& t : threads) t.join();
  for (size_t r = 0; r < results.size(); ++r)
    EXPECT_EQ(0, results[r].exit_code) << "rank " << r + 2 << ": " << results[r].out;
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(count, got[r].size());
    for (size_t i = 0; i < count; ++i) {
      int64_t want = 0;
      for (int p = 0; p < 4; ++p) want += p * 1000003 + static_cast<int64_t>(i) * 7 + 1;
      ASSERT_EQ(static_cast<int32_t>(want), got[r][i]) << "rank " << r << " at " << i;
    }
  }
}

TEST(NcclProcesses, SplitAcrossProcessesByColorAndKey) {
  // nccl_process_rank.cc check_split: colors, keys, NCCL_SPLIT_NOCOLOR and a
  // one-rank color; every new comm's rank, size and an all-reduce checked.
  auto results = run_job({0, 0, 0, 0}, {"split", "split", "split", "split"}, std::chrono::seconds(100));
  for (size_t r = 0; r < results.size(); ++r) {
    EXPECT_EQ(0, results[r].exit_code) << "rank " << r << ": " << results[r].out;
    EXPECT_NE(std::string::npos, results[r].out.find(" ok")) << results[r].out;
  }
}

TEST(NcclProcesses, ARankThatNeverSplitsFailsTheSplitAfterTheTimeout) {
  // Rank 3 runs the first all-reduce with the others ("one"), then destroys
  // its comm without splitting: the others wait for it in the split until
  // GPUSIM_NCCL_TIMEOUT_S, then fail, naming the split.
  auto results = run_job({0, 0, 0, 0}, {"split", "split", "split", "one"}, std::chrono::seconds(60), "3");
  for (int r : {0, 1, 2}) {
    EXPECT_EQ(1, results[r].exit_code) << "rank " << r << ": " << results[r].out;
    EXPECT_NE(std::string::npos, results[r].out.find("ncclCommSplit: remote process exited")) << results[r].out;
    EXPECT_NE(std::string::npos, results[r].out.find("did not arrive within 3 s")) << results[r].out;
  }
  EXPECT_EQ(0, results[3].exit_code) << results[3].out;
}

TEST(NcclProcesses, ADeadRankIsAnErrorNotAHang) {
  auto start = std::chrono::steady_clock::now();
  auto results = run_job({0, 0, 0}, {"run", "die", "run"}, std::chrono::seconds(60), "5");
  EXPECT_EQ(3, results[1].exit_code) << results[1].out;
  for (int r : {0, 2}) {
    EXPECT_EQ(1, results[r].exit_code) << "rank " << r << ": " << results[r].out;
    EXPECT_NE(std::string::npos, results[r].out.find("remote process exited")) << results[r].out;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(50));
}

TEST(NcclProcesses, ARankThatNeverJoinsFailsTheInitAfterTheTimeout) {
  // Two of three ranks: the init gives up after GPUSIM_NCCL_TIMEOUT_S.
  auto start = std::chrono::steady_clock::now();
  ncclUniqueId id;
  ASSERT_EQ(ncclSuccess, ncclGetUniqueId(&id));
  setenv("GPUSIM_NCCL_TIMEOUT_S", "2", 1);
  ASSERT_EQ(cudaSuccess, cudaSetDevice(0));
  ncclComm_t comm = nullptr;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(ncclRemoteError, ncclCommInitRank(&comm, 3, id, 0));
  EXPECT_EQ(nullptr, comm);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1500));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(50));
}

// ------------------------------------------------------------ the fabric --
// Eight processes as 2 nodes x 4 GPUs (README.md, "NCCL", "Fabric"): NVLink 4
// x 18 within a node, the network scaled down to 0.5 GB/s per GPU (the
// field report's 50, over 100) so that a 64 MiB all-reduce takes a tenth of
// a second or more; GPUSIM_NCCL_DATA=0: the model's time alone, not memcpy
// on a loaded host.
constexpr size_t kFabricBytes = 64u << 20;
constexpr double kNetGbps = 0.5;

std::function<std::vector<std::string>(int)> two_nodes_of_four(const std::vector<std::string>& extra) {
  return [extra](int r) {
    std::vector<std::string> env = {"GPUSIM_NODE=" + std::to_string(r / 4), "GPUSIM_NVLINK_LINKS=18",
                                    "GPUSIM_NVLINK_VERSION=4", "GPUSIM_NET_GBPS=0.5", "GPUSIM_NCCL_DATA=0",
                                    "GPUSIM_NCCL_DEBUG=1"};
    env.insert(env.end(), extra.begin(), extra.end());
    return env;
  };
}

// What the simulated NCCL should choose and take there, by the model.
ncclsim::tuning::Decision expected(bool ring_default, const char* nccl_algo) {
  ncclsim::tuning::Enabled enabled;
  std::string error;
  if (nccl_algo) EXPECT_TRUE(ncclsim::tuning::parse_list(nccl_algo, true, &enabled, &error)) << error;
  gpuslack::nccl::Links links;
  links.intra_gbps = 18 * 25;
  links.inter_gbps = kNetGbps;
  links.intra_is_nvlink = true;
  gpuslack::nccl::Shape shape;
  shape.nodes = 2;
  shape.ranks_per_node = 4;
  return ncclsim::tuning::choose(gpuslack::nccl::CollectiveOp::kAllReduce, kFabricBytes, shape, links, enabled,
                                 ring_default);
}

// The timed all-reduce of the rank that arrived last (it waited for no
// peer): the op's own time. Checks every rank ran it with `algo`.
double fabric_run_ms(const std::vector<std::string>& extra, const char* algo) {
  auto results = run_job(std::vector<int>(8, 0), std::vector<std::string>(8, "fabric:" + std::to_string(kFabricBytes)),
                         std::chrono::seconds(100), "60", nullptr, 0, 0, two_nodes_of_four(extra));
  double fastest = 1e9;
  for (size_t r = 0; r < results.size(); ++r) {
    EXPECT_EQ(0, results[r].exit_code) << "rank " << r << ": " << results[r].out;
    EXPECT_NE(std::string::npos, results[r].out.find(std::string("2 x 4 ranks, ") + algo + "/"))
        << "rank " << r << ": " << results[r].out;
    if (timed_ms(results[r]) >= 0) fastest = std::min(fastest, timed_ms(results[r]));
  }
  return fastest;
}

TEST(NcclProcesses, TwoNodesOfFourRunRingByDefaultAndTreeWhenTheModelOrNcclAlgoSaysSo) {
  const auto ring = expected(true, nullptr), fixed = expected(true, "allreduce:tree"), tuned = expected(false, nullptr);
  ASSERT_EQ(gpuslack::nccl::Algo::kRing, ring.algo);
  ASSERT_EQ(gpuslack::nccl::Algo::kTree, fixed.algo);
  ASSERT_EQ(gpuslack::nccl::Algo::kTree, tuned.algo);
  // The configuration's point: ring spends its time on the slow network.
  ASSERT_GT(ring.cost.time_s, 2 * fixed.cost.time_s);
  struct Case {
    std::vector<std::string> env;
    const char* algo;
    double want_ms;
  } cases[] = {
      {{"GPUSIM_NCCL_ALGO_DEFAULT=ring"}, "Ring", ring.cost.time_s * 1e3},
      {{"GPUSIM_NCCL_ALGO_DEFAULT=ring", "NCCL_ALGO=allreduce:tree"}, "Tree", fixed.cost.time_s * 1e3},
      {{}, "Tree", tuned.cost.time_s * 1e3},  // tuned, the default
  };
  for (const Case& c : cases) {
    const double ms = fabric_run_ms(c.env, c.algo);
    // The model's time is a floor; above it, a margin for a loaded host
    // that still tells Tree's time from Ring's.
    EXPECT_GE(ms, 0.95 * c.want_ms) << c.algo;
    EXPECT_LE(ms, 1.2 * c.want_ms + 10) << c.algo;
  }
}

}  // namespace

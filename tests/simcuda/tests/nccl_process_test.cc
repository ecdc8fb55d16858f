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
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime_api.h>
#include <signal.h>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

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
// modes[r] "run" or "die") and waits for all, at most `limit`.
std::vector<RankResult> run_job(const std::vector<int>& delays, const std::vector<std::string>& modes,
                                std::chrono::seconds limit, const std::string& timeout_s = "60") {
  const int n = static_cast<int>(delays.size());
  ncclUniqueId id;
  EXPECT_EQ(ncclSuccess, ncclGetUniqueId(&id));
  const std::string id_hex = hex(id);
  char dir_template[] = "/tmp/gpusim-nccl-test-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "GPUSIM_NCCL_TIMEOUT_S=", 22) != 0 && std::strncmp(*e, "GPUSIM_DEVICE_COUNT=", 20) != 0)
      env_strings.push_back(*e);
  env_strings.push_back("GPUSIM_NCCL_TIMEOUT_S=" + timeout_s);
  env_strings.push_back("GPUSIM_DEVICE_COUNT=1");
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<pid_t> pids(n, -1);
  for (int r = 0; r < n; ++r) {
    const std::string out = dir + "/rank" + std::to_string(r) + ".out";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, (out + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::string args[] = {NCCL_PROCESS_RANK, id_hex, std::to_string(r), std::to_string(n),
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

}  // namespace

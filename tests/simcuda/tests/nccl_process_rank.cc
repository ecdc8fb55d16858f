// One rank of a communicator across processes, for nccl_process_test.cc:
//   nccl_process_rank <id-hex> <rank> <nranks> <delay-ms> <mode>
// <id-hex> may be @FILE: rank 0 writes a fresh id there, the others wait
// for it (a job started by hand, tests/simcuda/README.md "Fabric").
// joins the id's communicator on device 0 of its own (simulated) process,
// then runs all-reduces of int32 (sum: one under the 4 MiB window, one over
// it, in place), a broadcast and an all-gather, checking every result; then
// sleeps `delay-ms` and runs one timed all-reduce. Prints
//   "rank R ok timed_ms T"   (T: the timed all-reduce's GPU time, events)
// or "rank R error <what>" and exits 1. Modes: "run"; "die": exits 3 right
// after the init, never arriving at a collective; "one": only the first
// all-reduce; "fabric:<bytes>": an all-reduce of <bytes> of float (which
// lines the ranks up), then the timed one of the same size, unchecked (the
// fabric's timing, nccl_process_test.cc); "split": ncclCommSplit of the comm
// (check_split), 4 ranks.
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

int rank_ = -1;

[[noreturn]] void die(const std::string& what) {
  std::printf("rank %d error %s\n", rank_, what.c_str());
  std::fflush(stdout);
  _exit(1);  // nothing to tear down (and no leak report) on this path
}

void nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) die(std::string(what) + ": " + ncclGetErrorString(r) + ": " + ncclGetLastError(nullptr));
}
void cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) die(std::string(what) + ": " + cudaGetErrorString(e));
}

// Waits for the stream; a collective that failed on it is the comm's
// asynchronous error.
void finish(ncclComm_t comm, cudaStream_t s, const char* what) {
  cuda(cudaStreamSynchronize(s), what);
  ncclResult_t async = ncclSuccess;
  nccl(ncclCommGetAsyncError(comm, &async), "ncclCommGetAsyncError");
  if (async != ncclSuccess) die(std::string(what) + ": " + ncclGetErrorString(async) + ": " + ncclGetLastError(comm));
}

// The id's hex in `path`: rank 0 makes it (written whole, then renamed into
// place), the others wait up to 30 s for it.
std::string id_file(const std::string& path) {
  if (rank_ == 0) {
    ncclUniqueId id;
    nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    std::string hex;
    char b[3];
    for (char c : id.internal) {
      std::snprintf(b, sizeof(b), "%02x", static_cast<unsigned char>(c));
      hex += b;
    }
    const std::string tmp = path + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "w");
    if (!f || std::fputs(hex.c_str(), f) < 0 || std::fclose(f) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0)
      die("cannot write " + path);
    return hex;
  }
  for (int i = 0; i < 3000; ++i) {
    if (FILE* f = std::fopen(path.c_str(), "r")) {
      char buf[512] = {};
      size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
      std::fclose(f);
      return std::string(buf, n);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  die("no id in " + path + " within 30 s");
}

int32_t val(int r, size_t i) { return static_cast<int32_t>(r * 1000003 + i * 7 + 1); }

// An in-place int32 sum over the comm whose ranks are `members` (parent
// ranks, each contributing val(parent rank, i)).
void check_all_reduce(ncclComm_t comm, cudaStream_t s, const std::vector<int>& members, size_t count);

void check_all_reduce(ncclComm_t comm, cudaStream_t s, int n, size_t count) {
  std::vector<int> all;
  for (int r = 0; r < n; ++r) all.push_back(r);
  check_all_reduce(comm, s, all, count);
}

void check_all_reduce(ncclComm_t comm, cudaStream_t s, const std::vector<int>& members, size_t count) {
  std::vector<int32_t> h(count);
  for (size_t i = 0; i < count; ++i) h[i] = val(rank_, i);
  int32_t* d = nullptr;
  cuda(cudaMalloc(&d, count * 4), "cudaMalloc");
  cuda(cudaMemcpy(d, h.data(), count * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  nccl(ncclAllReduce(d, d, count, ncclInt32, ncclSum, comm, s), "ncclAllReduce");
  finish(comm, s, "all-reduce");
  cuda(cudaMemcpy(h.data(), d, count * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
  for (size_t i = 0; i < count; ++i) {
    int64_t want = 0;
    for (int r : members) want += val(r, i);
    if (h[i] != static_cast<int32_t>(want)) die("all-reduce of " + std::to_string(count) + " wrong at " + std::to_string(i));
  }
  cuda(cudaFree(d), "cudaFree");
}

void check_broadcast_and_all_gather(ncclComm_t comm, cudaStream_t s, int n) {
  const size_t count = 1000;
  std::vector<int32_t> h(count * n);
  for (size_t i = 0; i < count; ++i) h[i] = val(rank_, i);
  int32_t *send, *recv;
  cuda(cudaMalloc(&send, count * 4), "cudaMalloc");
  cuda(cudaMalloc(&recv, count * n * 4), "cudaMalloc");
  cuda(cudaMemcpy(send, h.data(), count * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  nccl(ncclBroadcast(send, recv, count, ncclInt32, n - 1, comm, s), "ncclBroadcast");
  finish(comm, s, "broadcast");
  cuda(cudaMemcpy(h.data(), recv, count * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
  for (size_t i = 0; i < count; ++i)
    if (h[i] != val(n - 1, i)) die("broadcast wrong at " + std::to_string(i));
  nccl(ncclAllGather(send, recv, count, ncclInt32, comm, s), "ncclAllGather");
  finish(comm, s, "all-gather");
  cuda(cudaMemcpy(h.data(), recv, count * n * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i)
      if (h[r * count + i] != val(r, i)) die("all-gather wrong at block " + std::to_string(r));
  cuda(cudaFree(send), "cudaFree");
  cuda(cudaFree(recv), "cudaFree");
}

// ncclCommSplit across processes (4 ranks): ranks 2 and 0 (color 0, key
// -rank: rank 2 first), rank 1 alone (color 1), rank 3 NCCL_SPLIT_NOCOLOR
// (NULL); then all four in one color, keyed by rank. Each new comm's rank,
// size and an all-reduce on it are checked.
void check_split(ncclComm_t comm, cudaStream_t s, int n) {
  if (n != 4) die("split needs 4 ranks");
  const int color = rank_ == 3 ? NCCL_SPLIT_NOCOLOR : rank_ % 2;
  ncclComm_t sub = nullptr;
  nccl(ncclCommSplit(comm, color, -rank_, &sub, nullptr), "ncclCommSplit");
  if (color == NCCL_SPLIT_NOCOLOR) {
    if (sub) die("NCCL_SPLIT_NOCOLOR got a communicator");
  } else {
    const std::vector<int> members = color == 0 ? std::vector<int>{2, 0} : std::vector<int>{1};
    int count = 0, me = -1;
    nccl(ncclCommCount(sub, &count), "ncclCommCount");
    nccl(ncclCommUserRank(sub, &me), "ncclCommUserRank");
    if (count != static_cast<int>(members.size()) || members[me] != rank_)
      die("split: rank " + std::to_string(me) + " of " + std::to_string(count));
    check_all_reduce(sub, s, members, (5u << 20) / 4 + 3);
    nccl(ncclCommDestroy(sub), "ncclCommDestroy");
  }
  nccl(ncclCommSplit(comm, 0, rank_, &sub, nullptr), "ncclCommSplit");
  int count = 0, me = -1;
  nccl(ncclCommCount(sub, &count), "ncclCommCount");
  nccl(ncclCommUserRank(sub, &me), "ncclCommUserRank");
  if (count != n || me != rank_) die("split of all: rank " + std::to_string(me) + " of " + std::to_string(count));
  check_all_reduce(sub, s, n, 1001);
  nccl(ncclCommDestroy(sub), "ncclCommDestroy");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: nccl_process_rank <id-hex> <rank> <nranks> <delay-ms> <run|die|one|split>\n");
    return 2;
  }
  ncclUniqueId id{};
  rank_ = std::atoi(argv[2]);
  std::string hex = argv[1];
  if (hex[0] == '@') hex = id_file(hex.substr(1));
  if (hex.size() != 2 * sizeof(id.internal)) die("bad id");
  for (size_t i = 0; i < sizeof(id.internal); ++i) id.internal[i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  const int n = std::atoi(argv[3]);
  const int delay_ms = std::atoi(argv[4]);
  const std::string mode = argv[5];
  cuda(cudaSetDevice(0), "cudaSetDevice");
  ncclComm_t comm = nullptr;
  nccl(ncclCommInitRank(&comm, n, id, rank_), "ncclCommInitRank");
  if (mode == "die") _exit(3);
  cudaStream_t s;
  cuda(cudaStreamCreate(&s), "cudaStreamCreate");
  if (mode.rfind("fabric:", 0) == 0) {
    const size_t bytes = std::stoull(mode.substr(7));
    float* buf;
    cuda(cudaMalloc(&buf, bytes), "cudaMalloc");
    cudaEvent_t a, b;
    cuda(cudaEventCreate(&a), "cudaEventCreate");
    cuda(cudaEventCreate(&b), "cudaEventCreate");
    nccl(ncclAllReduce(buf, buf, bytes / 4, ncclFloat32, ncclSum, comm, s), "ncclAllReduce");
    finish(comm, s, "first all-reduce");
    cuda(cudaEventRecord(a, s), "cudaEventRecord");
    nccl(ncclAllReduce(buf, buf, bytes / 4, ncclFloat32, ncclSum, comm, s), "ncclAllReduce");
    cuda(cudaEventRecord(b, s), "cudaEventRecord");
    finish(comm, s, "timed all-reduce");
    float ms = 0;
    cuda(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    nccl(ncclCommDestroy(comm), "ncclCommDestroy");
    cuda(cudaEventDestroy(a), "cudaEventDestroy");
    cuda(cudaEventDestroy(b), "cudaEventDestroy");
    cuda(cudaFree(buf), "cudaFree");
    cuda(cudaStreamDestroy(s), "cudaStreamDestroy");
    std::printf("rank %d ok timed_ms %.3f\n", rank_, ms);
    return 0;
  }
  check_all_reduce(comm, s, n, 1001);
  if (mode == "split") {
    check_split(comm, s, n);
    check_all_reduce(comm, s, n, 1001);  // the parent still works
    nccl(ncclCommDestroy(comm), "ncclCommDestroy");
    cuda(cudaStreamDestroy(s), "cudaStreamDestroy");
    std::printf("rank %d ok\n", rank_);
    return 0;
  }
  if (mode == "one") {
    nccl(ncclCommDestroy(comm), "ncclCommDestroy");
    cuda(cudaStreamDestroy(s), "cudaStreamDestroy");
    std::printf("rank %d ok\n", rank_);
    return 0;
  }
  check_all_reduce(comm, s, n, (5u << 20) / 4 + 3);  // two windows, the last partial
  check_broadcast_and_all_gather(comm, s, n);
  // Every rank is here at about the same time: the timed all-reduce starts
  // late only on the delayed rank.
  float* grads;
  cuda(cudaMalloc(&grads, 1 << 20), "cudaMalloc");
  cudaEvent_t a, b;
  cuda(cudaEventCreate(&a), "cudaEventCreate");
  cuda(cudaEventCreate(&b), "cudaEventCreate");
  std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  cuda(cudaEventRecord(a, s), "cudaEventRecord");
  nccl(ncclAllReduce(grads, grads, (1 << 20) / 4, ncclFloat32, ncclSum, comm, s), "ncclAllReduce");
  cuda(cudaEventRecord(b, s), "cudaEventRecord");
  finish(comm, s, "timed all-reduce");
  float ms = 0;
  cuda(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
  nccl(ncclCommDestroy(comm), "ncclCommDestroy");
  cuda(cudaEventDestroy(a), "cudaEventDestroy");
  cuda(cudaEventDestroy(b), "cudaEventDestroy");
  cuda(cudaFree(grads), "cudaFree");
  cuda(cudaStreamDestroy(s), "cudaStreamDestroy");
  std::printf("rank %d ok timed_ms %.3f\n", rank_, ms);
  return 0;
}

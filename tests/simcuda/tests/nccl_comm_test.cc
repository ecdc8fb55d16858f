// The simulated NCCL (libnccl.so.2) beyond the collectives' results: one
// thread driving all ranks, the modeled transfer time, communicator
// creation, split and abort, argument validation and the weak nccl* aliases
// of the strong pnccl* symbols. Collectives: nccl_collectives_test.cc.
//
// Ranks are threads, each on its own simulated device (GPUSIM_DEVICE_COUNT=4).
// Timing assertions use wide margins (>= 0.8x and < 5x the modeled time).
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpusim.h"
#include "nccl_test_util.h"
#include "sim.h"

using namespace nccltest;

namespace {

using Clock = std::chrono::steady_clock;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  void wait() {
    std::unique_lock<std::mutex> l(mu_);
    int gen = gen_;
    if (++count_ == n_) {
      count_ = 0;
      ++gen_;
      cv_.notify_all();
    } else {
      cv_.wait(l, [&] { return gen != gen_; });
    }
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_, count_ = 0, gen_ = 0;
};

// ---------------------------------------------- one thread, all ranks -----

struct AllComms {
  int n;
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
  explicit AllComms(int ranks) : n(ranks), comms(ranks), streams(ranks) {
    EXPECT_EQ(ncclSuccess, ncclCommInitAll(comms.data(), n, nullptr));
    for (int r = 0; r < n; ++r) {
      cudaSetDevice(r);
      EXPECT_EQ(cudaSuccess, cudaStreamCreate(&streams[r]));
    }
    cudaSetDevice(0);
  }
  ~AllComms() {
    for (int r = 0; r < n; ++r) {
      cudaStreamSynchronize(streams[r]);
      cudaStreamDestroy(streams[r]);
      ncclCommDestroy(comms[r]);
    }
  }
  void* alloc(int r, size_t bytes, const void* init = nullptr) {
    cudaSetDevice(r);
    void* p = init ? to_device(init, bytes) : nullptr;
    if (!p) {
      EXPECT_EQ(cudaSuccess, cudaMalloc(&p, bytes));
    }
    cudaSetDevice(0);
    return p;
  }
};

TEST(NcclSingleThread, GroupOverCommInitAllComms) {
  const int n = 4;
  const size_t count = 5000;
  AllComms all(n);
  for (int r = 0; r < n; ++r) {
    int rank = -1, size = 0, dev = -1;
    NCCL_OK(ncclCommUserRank(all.comms[r], &rank));
    NCCL_OK(ncclCommCount(all.comms[r], &size));
    NCCL_OK(ncclCommCuDevice(all.comms[r], &dev));
    EXPECT_EQ(r, rank);
    EXPECT_EQ(n, size);
    EXPECT_EQ(r, dev);
  }
  std::vector<void*> in(n), sum(n), gathered(n), ring(n);
  for (int r = 0; r < n; ++r) {
    std::vector<int32_t> v(count);
    for (size_t i = 0; i < count; ++i) v[i] = val(r, i);
    in[r] = all.alloc(r, count * 4, v.data());
    sum[r] = all.alloc(r, count * 4);
    gathered[r] = all.alloc(r, count * 4 * n);
    ring[r] = all.alloc(r, count * 4);
  }
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < n; ++r) {
    NCCL_OK(ncclAllReduce(in[r], sum[r], count, ncclInt32, ncclSum, all.comms[r], all.streams[r]));
    NCCL_OK(ncclAllGather(in[r], gathered[r], count, ncclInt32, all.comms[r], all.streams[r]));
    NCCL_OK(ncclSend(in[r], count, ncclInt32, (r + 1) % n, all.comms[r], all.streams[r]));
    NCCL_OK(ncclRecv(ring[r], count, ncclInt32, (r + n - 1) % n, all.comms[r], all.streams[r]));
  }
  NCCL_OK(ncclGroupEnd());
  for (int r = 0; r < n; ++r) CUDA_OK(cudaStreamSynchronize(all.streams[r]));
  for (int r = 0; r < n; ++r) {
    auto s = download<int32_t>(sum[r], count);
    auto g = download<int32_t>(gathered[r], count * n);
    auto x = download<int32_t>(ring[r], count);
    for (size_t i = 0; i < count; ++i) {
      int32_t want = 0;
      for (int q = 0; q < n; ++q) want += val(q, i);
      ASSERT_EQ(want, s[i]);
      for (int q = 0; q < n; ++q) ASSERT_EQ(val(q, i), g[q * count + i]);
      ASSERT_EQ(val((r + n - 1) % n, i), x[i]);
    }
  }
}

TEST(NcclSingleThread, LoneSendHoldsItsStreamUntilTheRecv) {
  AllComms all(2);
  const size_t count = 1000;
  std::vector<int32_t> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = val(7, i);
  void* src = all.alloc(0, count * 4, v.data());
  void* dst = all.alloc(1, count * 4);
  CUDA_OK(cudaStreamSynchronize(nullptr));
  NCCL_OK(ncclSend(src, count, ncclInt32, 1, all.comms[0], all.streams[0]));  // returns at once
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(all.streams[0]));
  NCCL_OK(ncclRecv(dst, count, ncclInt32, 0, all.comms[1], all.streams[1]));
  CUDA_OK(cudaStreamSynchronize(all.streams[0]));
  CUDA_OK(cudaStreamSynchronize(all.streams[1]));
  EXPECT_EQ(v, download<int32_t>(dst, count));
}

TEST(NcclSingleThread, CapturedCollectivesReplayFromAGraph) {
  AllComms all(2);
  const size_t count = 256;
  std::vector<void*> buf(2);
  std::vector<int32_t> ones(count, 1);
  for (int r = 0; r < 2; ++r) buf[r] = all.alloc(r, count * 4, ones.data());
  std::vector<cudaGraphExec_t> exec(2);
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(r);
    CUDA_OK(cudaStreamBeginCapture(all.streams[r], cudaStreamCaptureModeRelaxed));
    NCCL_OK(ncclAllReduce(buf[r], buf[r], count, ncclInt32, ncclSum, all.comms[r], all.streams[r]));
    cudaGraph_t g;
    CUDA_OK(cudaStreamEndCapture(all.streams[r], &g));
    CUDA_OK(cudaGraphInstantiate(&exec[r], g, 0));
    CUDA_OK(cudaGraphDestroy(g));
  }
  cudaSetDevice(0);
  // Nothing ran while capturing; each launch doubles the buffers.
  for (int launch = 0; launch < 3; ++launch)
    for (int r = 0; r < 2; ++r) CUDA_OK(cudaGraphLaunch(exec[r], all.streams[r]));
  for (int r = 0; r < 2; ++r) {
    CUDA_OK(cudaStreamSynchronize(all.streams[r]));
    EXPECT_EQ(std::vector<int32_t>(count, 8), download<int32_t>(buf[r], count));
    CUDA_OK(cudaGraphExecDestroy(exec[r]));
  }
}

// -------------------------------------------------------------- timing ----

TEST(NcclTiming, AllReduceTakesTheModeledTime) {
  // 64 MiB over 4 ranks moves 2 * 3/4 * 64 MiB = 100.7 MB per rank: at
  // 0.2 GB/s, ~503 ms. Each test runs in its own process, so the variable
  // is read when the device first loads its configuration.
  setenv("GPUSIM_COST_NCCL_GBPS", "0.2", 1);
  if (gpusim::config().nccl_gbps != 0.2) GTEST_SKIP() << "configuration was loaded before this test";
  const int n = 4;
  const size_t bytes = 64u << 20;
  const double moved = 2.0 * (n - 1) / n * static_cast<double>(bytes);
  const double model_ms = (gpusim::config().nccl_latency_us + moved / (0.2 * 1e3)) / 1000;
  Barrier ready(n);
  std::vector<float> elapsed_ms(n), wall_ms(n);
  run_ranks(n, [&](int r, ncclComm_t comm, cudaStream_t s) {
    void *send, *recv;
    ASSERT_EQ(cudaSuccess, cudaMalloc(&send, bytes));
    ASSERT_EQ(cudaSuccess, cudaMalloc(&recv, bytes));
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    ready.wait();
    auto t0 = Clock::now();
    cudaEventRecord(a, s);
    ASSERT_EQ(ncclSuccess, ncclAllReduce(send, recv, bytes / 4, ncclFloat32, ncclSum, comm, s));
    cudaEventRecord(b, s);
    ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
    wall_ms[r] = static_cast<float>(ms_since(t0));
    cudaEventElapsedTime(&elapsed_ms[r], a, b);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaFree(send);
    cudaFree(recv);
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_GE(elapsed_ms[r], 0.8 * model_ms) << "rank " << r;
    EXPECT_GE(wall_ms[r], 0.8 * model_ms) << "rank " << r;
    if (kSanitized) continue;  // computing 4 x 64 MiB instrumented takes seconds
    EXPECT_LT(elapsed_ms[r], 5 * model_ms) << "rank " << r;
    EXPECT_LT(wall_ms[r], 5 * model_ms) << "rank " << r;
  }
}

// ----------------------------------------------------- communicators ------

TEST(NcclComm, AbortWakesARankBlockedInACollective) {
  ncclUniqueId id;
  NCCL_OK(ncclGetUniqueId(&id));
  std::atomic<bool> done{false}, abort_called{false};
  bool finished_after_abort = false;
  ncclResult_t async = ncclSuccess;
  std::thread blocked([&] {
    cudaSetDevice(0);
    ncclComm_t comm;
    ASSERT_EQ(ncclSuccess, ncclCommInitRank(&comm, 2, id, 0));
    cudaStream_t s;
    cudaStreamCreate(&s);
    void* buf;
    cudaMalloc(&buf, 4096);
    ASSERT_EQ(ncclSuccess, ncclAllReduce(buf, buf, 1024, ncclFloat32, ncclSum, comm, s));
    EXPECT_EQ(cudaSuccess, cudaStreamSynchronize(s));  // until the peer aborts
    finished_after_abort = abort_called.load();
    done = true;
    EXPECT_EQ(ncclSuccess, ncclCommGetAsyncError(comm, &async));
    EXPECT_EQ(ncclSuccess, ncclCommAbort(comm));
    cudaStreamDestroy(s);
    cudaFree(buf);
  });
  cudaSetDevice(1);
  ncclComm_t comm;
  NCCL_OK(ncclCommInitRank(&comm, 2, id, 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(done.load());  // rank 0 waits for rank 1's AllReduce
  auto t0 = Clock::now();
  abort_called = true;
  NCCL_OK(ncclCommAbort(comm));
  while (!done && ms_since(t0) < 1000) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(done.load()) << "the blocked rank did not finish within a second of the abort";
  blocked.join();
  EXPECT_TRUE(finished_after_abort);
  EXPECT_NE(ncclSuccess, async);
  EXPECT_NE(ncclInProgress, async);
}

TEST(NcclComm, SplitIntoHalvesAndDropOneRank) {
  const int n = 4;
  std::vector<int> half_rank(n), half_size(n), sum(n), third_rank(n, -2);
  std::vector<int> third_null(n);  // not vector<bool>: one word per rank
  run_ranks(n, [&](int r, ncclComm_t comm, cudaStream_t s) {
    ncclComm_t half;
    ASSERT_EQ(ncclSuccess, ncclCommSplit(comm, r % 2, r, &half, nullptr));
    ASSERT_NE(nullptr, half);
    ncclCommUserRank(half, &half_rank[r]);
    ncclCommCount(half, &half_size[r]);
    int32_t v = r + 1;
    void* buf = to_device(&v, 4);
    ASSERT_EQ(ncclSuccess, ncclAllReduce(buf, buf, 1, ncclInt32, ncclSum, half, s));
    ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
    sum[r] = download<int32_t>(buf, 1)[0];
    EXPECT_EQ(ncclSuccess, ncclCommDestroy(half));
    // Rank 3 leaves; the others are ordered by descending key.
    ncclComm_t three;
    ASSERT_EQ(ncclSuccess, ncclCommSplit(comm, r == 3 ? NCCL_SPLIT_NOCOLOR : 0, -r, &three, nullptr));
    third_null[r] = three == nullptr ? 1 : 0;
    if (three) {
      ncclCommUserRank(three, &third_rank[r]);
      EXPECT_EQ(ncclSuccess, ncclCommDestroy(three));
    }
    cudaFree(buf);
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(2, half_size[r]);
    EXPECT_EQ(r / 2, half_rank[r]);
    EXPECT_EQ(r % 2 == 0 ? 1 + 3 : 2 + 4, sum[r]);
    EXPECT_EQ(r == 3 ? 1 : 0, third_null[r]);
  }
  EXPECT_EQ(2, third_rank[0]);
  EXPECT_EQ(1, third_rank[1]);
  EXPECT_EQ(0, third_rank[2]);
}

TEST(NcclComm, NonBlockingInitReportsProgressThenSuccess) {
  const int n = 3;
  ncclUniqueId id;
  NCCL_OK(ncclGetUniqueId(&id));
  std::vector<ncclComm_t> comms(n);
  for (int r = 0; r < n; ++r) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    cudaSetDevice(r);
    // One thread initializes every rank: each call must return at once.
    EXPECT_EQ(ncclInProgress, ncclCommInitRankConfig(&comms[r], n, id, r, &config));
    ASSERT_NE(nullptr, comms[r]);
    ncclResult_t state;
    NCCL_OK(ncclCommGetAsyncError(comms[0], &state));
    if (r < n - 1) {
      EXPECT_EQ(ncclInProgress, state);
      // Using it before ncclSuccess is an error.
      void* buf;
      cudaMalloc(&buf, 4);
      EXPECT_EQ(ncclInvalidArgument, ncclAllReduce(buf, buf, 1, ncclInt32, ncclSum, comms[0], nullptr));
      cudaFree(buf);
    }
  }
  cudaSetDevice(0);
  auto t0 = Clock::now();
  for (int r = 0; r < n; ++r) {
    ncclResult_t state = ncclInProgress;
    while (state == ncclInProgress && ms_since(t0) < 5000) NCCL_OK(ncclCommGetAsyncError(comms[r], &state));
    EXPECT_EQ(ncclSuccess, state);
  }
  int size = 0;
  NCCL_OK(ncclCommCount(comms[2], &size));
  EXPECT_EQ(n, size);
  for (ncclComm_t c : comms) NCCL_OK(ncclCommDestroy(c));
}

TEST(NcclComm, TwoRanksOnOneDeviceAreInvalidUsage) {
  std::vector<ncclComm_t> comms(2);
  int devs[] = {1, 1};
  EXPECT_EQ(ncclInvalidUsage, ncclCommInitAll(comms.data(), 2, devs));
  ncclUniqueId id;
  NCCL_OK(ncclGetUniqueId(&id));
  std::vector<ncclResult_t> results(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      cudaSetDevice(2);
      ncclComm_t c;
      results[r] = ncclCommInitRank(&c, 2, id, r);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ncclInvalidUsage, results[0]);
  EXPECT_EQ(ncclInvalidUsage, results[1]);
}

TEST(NcclComm, InitRankInsideAGroupFromOneThread) {
  const int n = 3;
  ncclUniqueId id;
  NCCL_OK(ncclGetUniqueId(&id));
  std::vector<ncclComm_t> comms(n);
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < n; ++r) {
    cudaSetDevice(r);
    NCCL_OK(ncclCommInitRank(&comms[r], n, id, r));
  }
  NCCL_OK(ncclGroupEnd());
  cudaSetDevice(0);
  for (int r = 0; r < n; ++r) {
    int rank = -1;
    NCCL_OK(ncclCommUserRank(comms[r], &rank));
    EXPECT_EQ(r, rank);
    NCCL_OK(ncclCommFinalize(comms[r]));
    NCCL_OK(ncclCommDestroy(comms[r]));
  }
}

// ------------------------------------------------------- validation -------

TEST(NcclValidation, BadArgumentsAreRefused) {
  AllComms all(2);
  ncclComm_t c0 = all.comms[0];
  cudaStream_t s0 = all.streams[0];
  void* d0 = all.alloc(0, 4096);
  void* d1 = all.alloc(1, 4096);
  std::vector<float> pageable(1024);
  EXPECT_EQ(ncclInvalidArgument, ncclAllReduce(d0, d0, 16, ncclFloat32, ncclSum, nullptr, s0));
  EXPECT_EQ(ncclInvalidArgument, ncclAllReduce(d0, d0, 16, ncclNumTypes, ncclSum, c0, s0));
  EXPECT_EQ(ncclInvalidArgument, ncclAllReduce(d0, d0, 16, ncclFloat32, static_cast<ncclRedOp_t>(42), c0, s0));
  EXPECT_STRNE("", ncclGetLastError(c0));
  EXPECT_EQ(ncclInvalidArgument, ncclSend(d0, 16, ncclFloat32, 2, c0, s0));
  EXPECT_EQ(ncclInvalidArgument, ncclRecv(d0, 16, ncclFloat32, -1, c0, s0));
  EXPECT_EQ(ncclInvalidArgument, ncclBroadcast(d0, d0, 16, ncclFloat32, 5, c0, s0));
  // Not device memory; another device's memory; too small a buffer.
  EXPECT_EQ(ncclInvalidArgument, ncclAllReduce(pageable.data(), d0, 16, ncclFloat32, ncclSum, c0, s0));
  EXPECT_EQ(ncclInvalidArgument, ncclAllReduce(d0, d1, 16, ncclFloat32, ncclSum, c0, s0));
  EXPECT_EQ(ncclInvalidArgument, ncclAllReduce(d0, d0, 2048, ncclFloat32, ncclSum, c0, s0));
  EXPECT_EQ(ncclInvalidArgument, ncclAllGather(d0, d0, 1024, ncclFloat32, c0, s0));  // recv 2x
  EXPECT_EQ(ncclInvalidUsage, ncclGroupEnd());  // without ncclGroupStart
  // A failed call fails its group, which enqueues nothing.
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclAllReduce(d0, d0, 16, ncclFloat32, ncclSum, c0, s0));
  EXPECT_EQ(ncclInvalidArgument, ncclAllReduce(pageable.data(), d0, 16, ncclFloat32, ncclSum, c0, s0));
  EXPECT_EQ(ncclInvalidArgument, ncclGroupEnd());
  CUDA_OK(cudaStreamSynchronize(s0));
  // Nothing was left pending: the next collective pairs normally.
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclAllReduce(d0, d0, 16, ncclFloat32, ncclSum, c0, s0));
  NCCL_OK(ncclAllReduce(d1, d1, 16, ncclFloat32, ncclSum, all.comms[1], all.streams[1]));
  NCCL_OK(ncclGroupEnd());
  // Zero-element collectives are accepted and do nothing.
  NCCL_OK(ncclAllReduce(nullptr, nullptr, 0, ncclFloat32, ncclSum, c0, s0));
  // Init arguments.
  ncclComm_t c;
  ncclUniqueId id;
  NCCL_OK(ncclGetUniqueId(&id));
  EXPECT_EQ(ncclInvalidArgument, ncclCommInitRank(&c, 2, id, 2));
  EXPECT_EQ(ncclInvalidArgument, ncclCommInitRank(&c, 0, id, 0));
  ncclConfig_t bad_config{};  // not NCCL_CONFIG_INITIALIZER
  EXPECT_EQ(ncclInvalidArgument, ncclCommInitRankConfig(&c, 1, id, 0, &bad_config));
  int devs[] = {0, 9};
  ncclComm_t more[2];
  EXPECT_EQ(ncclInvalidArgument, ncclCommInitAll(more, 2, devs));
  EXPECT_EQ(ncclInvalidArgument, ncclCommCount(nullptr, nullptr));
  for (int r = 0; r < 2; ++r) CUDA_OK(cudaStreamSynchronize(all.streams[r]));
  cudaFree(d0);
  cudaFree(d1);
}

TEST(NcclValidation, VersionErrorStringsAndMemory) {
  int version = 0;
  NCCL_OK(ncclGetVersion(&version));
  EXPECT_EQ(NCCL_VERSION_CODE, version);
  EXPECT_STREQ("no error", ncclGetErrorString(ncclSuccess));
  EXPECT_STRNE("", ncclGetErrorString(ncclInvalidUsage));
  EXPECT_STRNE(ncclGetErrorString(ncclInvalidArgument), ncclGetErrorString(ncclRemoteError));
  cudaSetDevice(2);
  void* p = nullptr;
  NCCL_OK(ncclMemAlloc(&p, 3 << 20));
  ASSERT_NE(nullptr, p);
  cudaPointerAttributes attr;
  CUDA_OK(cudaPointerGetAttributes(&attr, p));
  EXPECT_EQ(cudaMemoryTypeDevice, attr.type);
  EXPECT_EQ(2, attr.device);
  EXPECT_GE(gpusim_device_used(2), size_t{3} << 20);
  std::memset(p, 0x5a, 3 << 20);  // simulated device memory is host memory
  NCCL_OK(ncclMemFree(p));
  EXPECT_EQ(ncclInvalidArgument, ncclMemFree(&version));
  // Registration hands back an opaque handle.
  AllComms all(2);
  void* buf = all.alloc(0, 1 << 20);
  void* handle = nullptr;
  NCCL_OK(ncclCommRegister(all.comms[0], buf, 1 << 20, &handle));
  EXPECT_NE(nullptr, handle);
  NCCL_OK(ncclCommDeregister(all.comms[0], handle));
  cudaFree(buf);
  cudaSetDevice(0);
}

// ------------------------------------------------------------- symbols ----

TEST(NcclSymbols, NcclNamesAreWeakAliasesOfPnccl) {
  for (const char* name : {"AllReduce", "Send", "Recv", "GroupEnd", "CommInitRank", "CommAbort",
                           "GetVersion", "MemAlloc", "AlltoAll"}) {
    std::string weak = std::string("nccl") + name, strong = "p" + weak;
    void* w = dlsym(RTLD_DEFAULT, weak.c_str());
    void* s = dlsym(RTLD_DEFAULT, strong.c_str());
    ASSERT_NE(nullptr, w) << weak;
    ASSERT_NE(nullptr, s) << strong;
    EXPECT_EQ(w, s) << weak << " and " << strong << " differ";
  }
  Dl_info info;
  ASSERT_NE(0, dladdr(dlsym(RTLD_DEFAULT, "ncclAllReduce"), &info));
  std::string lib = info.dli_fname;
  EXPECT_NE(std::string::npos, lib.find("libnccl.so.2")) << lib;
  std::string cmd = "nm -D --defined-only '" + lib + "' 2>/dev/null";
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(nullptr, f);
  std::string out;
  char line[512];
  while (fgets(line, sizeof(line), f)) out += line;
  int status = pclose(f);
  if (status != 0 || out.empty()) GTEST_SKIP() << "nm is not available";
  EXPECT_NE(std::string::npos, out.find(" W ncclAllReduce\n")) << out;
  EXPECT_NE(std::string::npos, out.find(" T pncclAllReduce\n")) << out;
  // Unversioned, like the real library.
  EXPECT_EQ(std::string::npos, out.find("ncclAllReduce@")) << out;
}

}  // namespace

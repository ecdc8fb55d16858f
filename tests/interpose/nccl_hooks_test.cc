// The NCCL hooks, in process, over the simulated NCCL (4 ranks as devices
// of one process, GPUSIM_DEVICE_COUNT=4, a slow link GPUSIM_COST_NCCL_GBPS
// so that transfer time dominates; helpers in nccl_in_process.h):
//   - every collective and point-to-point call returns exactly what NCCL
//     returns and leaves exactly the same output buffers, on random data,
//     for valid and invalid arguments;
//   - the live summary counts each operation's calls and bytes as this test
//     computes them, with a bus bandwidth that matches the link model;
//   - grouped calls are each counted and share their group's GPU time;
//   - calls captured into a CUDA graph are counted as captured, never timed;
//   - aborting a communicator while a peer is blocked in a collective
//     neither hangs nor breaks the summary.
//
// Like hooks_test.cc: the test links the simulated libnccl.so.2 and
// dlopen()s libgpuslack.so RTLD_LOCAL, so each NCCL entry point is reachable
// twice, as NCCL's own function and as gpuslack's hook. GPU time is sampled
// on every call (collective_timing_every:1). Each test runs in its own
// process (gtest_discover_tests), so each reads a fresh ledger.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "nccl_in_process.h"
#include "sim.h"  // gpusim::config(): the link model

namespace {

using namespace nccl_in_process;  // the shared helpers

// --------------------------------------------- (a) results unchanged ----

struct Outcome {
  std::vector<long> results;                       // return codes and values, in order
  std::vector<std::vector<unsigned char>> outputs;  // every receive buffer after each step
};

// One scenario through `a`: every collective once per rank in a group from
// this thread, on random float32 data (the same for every run), then
// invalid calls.
Outcome scenario(const Nccl& a) {
  Outcome o;
  auto rc = [&](ncclResult_t e) { o.results.push_back(static_cast<long>(e)); };
  const size_t C = 3001;  // elements per rank (per peer for AlltoAll)
  const size_t kB = C * sizeof(float);
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-100, 100);
  Ranks k(a);
  rc(k.init);
  if (k.init != ncclSuccess) return o;
  std::vector<void*> send(kRanks), recv(kRanks);
  auto fresh = [&](size_t send_elems, size_t recv_elems) {
    for (int r = 0; r < kRanks; ++r) {
      std::vector<float> v(send_elems);
      for (float& x : v) x = dist(rng);
      send[r] = k.alloc(r, send_elems * sizeof(float), v.data());
      recv[r] = k.alloc(r, recv_elems * sizeof(float));
    }
  };
  auto collect = [&](size_t recv_elems) {
    k.sync();
    for (int r = 0; r < kRanks; ++r) o.outputs.push_back(k.download(recv[r], recv_elems * sizeof(float)));
  };
  auto group = [&](const std::function<void(int)>& call) {
    rc(a.ncclGroupStart());
    for (int r = 0; r < kRanks; ++r) call(r);
    rc(a.ncclGroupEnd());
  };
  const ncclComm_t* comm = k.comms.data();
  const cudaStream_t* s = k.streams.data();

  fresh(C, C);
  group([&](int r) { rc(a.ncclAllReduce(send[r], recv[r], C, ncclFloat32, ncclSum, comm[r], s[r])); });
  collect(C);
  fresh(C, kRanks * C);
  group([&](int r) { rc(a.ncclAllGather(send[r], recv[r], C, ncclFloat32, comm[r], s[r])); });
  collect(kRanks * C);
  fresh(kRanks * C, C);
  group([&](int r) { rc(a.ncclReduceScatter(send[r], recv[r], C, ncclFloat32, ncclMax, comm[r], s[r])); });
  collect(C);
  fresh(C, C);
  group([&](int r) { rc(a.ncclBroadcast(send[r], recv[r], C, ncclFloat32, 1, comm[r], s[r])); });
  collect(C);
  fresh(C, C);
  group([&](int r) { rc(a.ncclBcast(send[r], C, ncclFloat32, 3, comm[r], s[r])); });
  for (int r = 0; r < kRanks; ++r) recv[r] = send[r];
  collect(C);
  fresh(C, C);
  group([&](int r) { rc(a.ncclReduce(send[r], recv[r], C, ncclFloat32, ncclProd, 2, comm[r], s[r])); });
  collect(C);
  fresh(kRanks * C, kRanks * C);
  group([&](int r) { rc(a.ncclAlltoAll(send[r], recv[r], C, ncclFloat32, comm[r], s[r])); });
  collect(kRanks * C);
  fresh(C, kRanks * C);
  group([&](int r) { rc(a.ncclGather(send[r], recv[r], C, ncclFloat32, 0, comm[r], s[r])); });
  collect(kRanks * C);
  fresh(kRanks * C, C);
  group([&](int r) { rc(a.ncclScatter(send[r], recv[r], C, ncclFloat32, 1, comm[r], s[r])); });
  collect(C);
  // A ring: rank r sends to r+1 and receives from r-1.
  fresh(C, C);
  group([&](int r) {
    rc(a.ncclSend(send[r], C, ncclFloat32, (r + 1) % kRanks, comm[r], s[r]));
    rc(a.ncclRecv(recv[r], C, ncclFloat32, (r + kRanks - 1) % kRanks, comm[r], s[r]));
  });
  collect(C);
  // In place, outside a group: all ranks' calls from this thread.
  for (int r = 0; r < kRanks; ++r) rc(a.ncclAllReduce(send[r], send[r], C, ncclFloat32, ncclAvg, comm[r], s[r]));
  k.sync();
  for (int r = 0; r < kRanks; ++r) o.outputs.push_back(k.download(send[r], kB));

  // Communicator queries.
  for (int r = 0; r < kRanks; ++r) {
    int n = -1, rank = -1, dev = -1;
    rc(a.ncclCommCount(comm[r], &n));
    rc(a.ncclCommUserRank(comm[r], &rank));
    rc(a.ncclCommCuDevice(comm[r], &dev));
    o.results.insert(o.results.end(), {n, rank, dev});
  }
  rc(a.ncclCommCount(nullptr, nullptr));

  // Invalid arguments: each fails alone, and fails its group.
  rc(a.ncclAllReduce(send[0], recv[0], C, ncclFloat32, ncclSum, nullptr, s[0]));  // null comm
  rc(a.ncclAllReduce(send[0], recv[0], C, static_cast<ncclDataType_t>(99), ncclSum, comm[0], s[0]));
  rc(a.ncclAllReduce(send[0], recv[0], C, ncclFloat32, static_cast<ncclRedOp_t>(77), comm[0], s[0]));
  rc(a.ncclBroadcast(send[0], recv[0], C, ncclFloat32, kRanks, comm[0], s[0]));  // root out of range
  rc(a.ncclReduce(send[0], recv[0], C, ncclFloat32, ncclSum, -1, comm[0], s[0]));
  rc(a.ncclAllGather(send[0], recv[0], C, static_cast<ncclDataType_t>(-3), comm[0], s[0]));
  rc(a.ncclReduceScatter(send[0], recv[0], C, ncclFloat32, ncclSum, nullptr, s[0]));
  rc(a.ncclAlltoAll(send[0], recv[0], C, ncclFloat32, nullptr, s[0]));
  rc(a.ncclSend(send[0], C, ncclFloat32, kRanks + 2, comm[0], s[0]));  // no such peer
  rc(a.ncclRecv(recv[0], C, static_cast<ncclDataType_t>(99), 1, comm[0], s[0]));
  rc(a.ncclGather(send[0], recv[0], C, ncclFloat32, 0, nullptr, s[0]));
  rc(a.ncclScatter(send[0], recv[0], C, ncclFloat32, 9, comm[0], s[0]));
  rc(a.ncclGroupStart());
  rc(a.ncclAllReduce(send[0], recv[0], C, ncclFloat32, ncclSum, comm[0], s[0]));
  rc(a.ncclAllReduce(send[1], recv[1], C, static_cast<ncclDataType_t>(99), ncclSum, comm[1], s[1]));
  rc(a.ncclGroupEnd());
  rc(a.ncclGroupEnd());  // no group open

  // NCCL's own memory.
  void* m = nullptr;
  rc(a.ncclMemAlloc(&m, 1 << 20));
  rc(a.ncclMemFree(m));
  rc(a.ncclMemAlloc(nullptr, 1 << 20));
  k.sync();
  return o;
}

TEST(NcclHooks, EverySymbolIsHookedAndDistinctFromNccl) {
  ASSERT_NE(nullptr, gpuslack_handle()) << dlerror();
  int n = 0;
#define GPUSLACK_CHECK_SYM(sym, ret, params, args, cat, bytes, info, track)                        \
  EXPECT_NE(nullptr, reinterpret_cast<void*>(direct().sym)) << #sym;                               \
  EXPECT_NE(nullptr, reinterpret_cast<void*>(hooks().sym)) << #sym;                                \
  EXPECT_NE(reinterpret_cast<void*>(direct().sym), reinterpret_cast<void*>(hooks().sym)) << #sym; \
  ++n;
  GPUSLACK_NCCL_HOOKS(GPUSLACK_CHECK_SYM)
#undef GPUSLACK_CHECK_SYM
  EXPECT_EQ(27, n);
}

TEST(NcclHooks, ReturnExactlyWhatNcclReturnsAndLeaveTheSameBuffers) {
  ASSERT_NE(nullptr, gpuslack_handle()) << dlerror();
  Outcome plain = scenario(direct());
  Outcome hooked = scenario(hooks());
  ASSERT_EQ(plain.results.size(), hooked.results.size());
  for (size_t i = 0; i < plain.results.size(); ++i)
    EXPECT_EQ(plain.results[i], hooked.results[i]) << "result #" << i;
  ASSERT_EQ(plain.outputs.size(), hooked.outputs.size());
  for (size_t i = 0; i < plain.outputs.size(); ++i) EXPECT_TRUE(plain.outputs[i] == hooked.outputs[i]) << "buffer #" << i;
  // The scenario did compute something, and did exercise failures.
  size_t nonzero = 0;
  for (unsigned char b : plain.outputs[0]) nonzero += b != 0;
  EXPECT_GT(nonzero, plain.outputs[0].size() / 2);
  EXPECT_GE(std::count(plain.results.begin(), plain.results.end(), static_cast<long>(ncclInvalidArgument)), 12);
  // And the hooked run was seen.
  Row ar = total(rows(summary_json()), "all-reduce");
  EXPECT_EQ(uint64_t{2 * kRanks + 1}, ar.count);  // the grouped, the in-place, and the failed group's valid one
}

// ------------------------------------------- (b) counts, bytes, busbw ----

double link_gbps() { return gpusim::config().nccl_gbps; }

TEST(NcclHooks, SummaryCountsEachOperationAndItsBusBandwidthMatchesTheLinkModel) {
  ASSERT_NE(nullptr, gpuslack_handle()) << dlerror();
  const Nccl& a = hooks();
  Ranks k(a);
  ASSERT_EQ(ncclSuccess, k.init);
  const int kIters = 3;
  const size_t C = 512 * 1024;  // 2 MiB of float32 per rank (per peer for AlltoAll)
  const uint64_t B = C * sizeof(float);
  std::vector<void*> send(kRanks), recv(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    send[r] = k.alloc(r, kRanks * B);
    recv[r] = k.alloc(r, kRanks * B);
  }
  const ncclComm_t* comm = k.comms.data();
  const cudaStream_t* s = k.streams.data();
  struct Expect {
    std::string op;
    uint64_t bytes_per_call;  // nccl-tests' S, computed here
  };
  std::vector<Expect> expected = {{"all-reduce", B},          {"all-gather", kRanks * B},
                                  {"reduce-scatter", kRanks * B}, {"broadcast", B},
                                  {"reduce", B},              {"all-to-all", kRanks * B},
                                  {"send", B},                {"recv", B}};
  auto group = [&](const std::function<ncclResult_t(int)>& call) {
    ASSERT_EQ(ncclSuccess, a.ncclGroupStart());
    for (int r = 0; r < kRanks; ++r) ASSERT_EQ(ncclSuccess, call(r));
    ASSERT_EQ(ncclSuccess, a.ncclGroupEnd());
    k.sync();
  };
  for (int i = 0; i < kIters; ++i) {
    group([&](int r) { return a.ncclAllReduce(send[r], recv[r], C, ncclFloat32, ncclSum, comm[r], s[r]); });
    group([&](int r) { return a.ncclAllGather(send[r], recv[r], C, ncclFloat32, comm[r], s[r]); });
    group([&](int r) { return a.ncclReduceScatter(send[r], recv[r], C, ncclFloat32, ncclSum, comm[r], s[r]); });
    group([&](int r) { return a.ncclBroadcast(send[r], recv[r], C, ncclFloat32, 0, comm[r], s[r]); });
    group([&](int r) { return a.ncclReduce(send[r], recv[r], C, ncclFloat32, ncclSum, 1, comm[r], s[r]); });
    group([&](int r) { return a.ncclAlltoAll(send[r], recv[r], C, ncclFloat32, comm[r], s[r]); });
    // Pairs 0<->1, 2<->3: each stream's group holds one send and one receive.
    group([&](int r) {
      ncclResult_t e = a.ncclSend(send[r], C, ncclFloat32, r ^ 1, comm[r], s[r]);
      return e != ncclSuccess ? e : a.ncclRecv(recv[r], C, ncclFloat32, r ^ 1, comm[r], s[r]);
    });
  }
  std::string json = summary_json();
  std::vector<Row> rs = rows(json);
  const double gbps = link_gbps();
  for (const Expect& e : expected) {
    Row t = total(rs, e.op);
    SCOPED_TRACE(e.op);
    EXPECT_EQ(uint64_t{kIters * kRanks}, t.count) << json;
    EXPECT_EQ(kIters * kRanks * e.bytes_per_call, t.bytes) << json;
    EXPECT_EQ(kRanks, t.nranks);
    EXPECT_EQ(t.count, t.timed);
    EXPECT_EQ(0u, t.captured);
    // Send/Recv too: nccl-tests' sendrecv busbw is S over the time of the
    // exchange (nccl_busbw_test.cc holds every op against its definition).
    EXPECT_GE(t.busbw_gbps, kSlowest * gbps) << json;
    EXPECT_LE(t.busbw_gbps, 1.2 * gbps) << json;
  }
  // The context.
  std::string c = collectives_section(json);
  EXPECT_GT(number_after(c, "nccl_version"), 0);
  EXPECT_EQ(1, number_after(c, "timing_every"));
  EXPECT_GT(number_after(c, "host_s"), 0);
  EXPECT_EQ(0, number_after(c, "pending")) << "every stream was synchronized";
}

// --------------------------------------------------- (c) grouped calls ---

TEST(NcclHooks, GroupedCallsAreEachCountedAndShareTheGroupsGpuTime) {
  ASSERT_NE(nullptr, gpuslack_handle()) << dlerror();
  const Nccl& a = hooks();
  Ranks k(a);
  ASSERT_EQ(ncclSuccess, k.init);
  // Two all-reduces per rank in one group, 1 MiB and 3 MiB (two size
  // buckets), on each rank's one stream: the group's time on that stream is
  // charged to them by bytes, and each row's bandwidth is over the group's
  // whole time (Note [Charged time and bandwidth time] in nccl/collectives.h).
  const size_t small = 256 * 1024, large = 3 * 256 * 1024;
  std::vector<void*> b1(kRanks), b2(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    b1[r] = k.alloc(r, small * 4);
    b2[r] = k.alloc(r, large * 4);
  }
  const int kGroups = 2;
  for (int g = 0; g < kGroups; ++g) {
    ASSERT_EQ(ncclSuccess, a.ncclGroupStart());
    for (int r = 0; r < kRanks; ++r) {
      ASSERT_EQ(ncclSuccess, a.ncclAllReduce(b1[r], b1[r], small, ncclFloat32, ncclSum, k.comms[r], k.streams[r]));
      ASSERT_EQ(ncclSuccess, a.ncclAllReduce(b2[r], b2[r], large, ncclFloat32, ncclSum, k.comms[r], k.streams[r]));
    }
    ASSERT_EQ(ncclSuccess, a.ncclGroupEnd());
    k.sync();
  }
  std::string json = summary_json();
  std::vector<Row> rs = rows(json);
  std::vector<Row> ar;
  for (const Row& r : rs)
    if (r.op == "all-reduce") ar.push_back(r);
  ASSERT_EQ(2u, ar.size()) << json;
  const double gbps = link_gbps();
  double gpu_total = 0, busbw_total = 0;
  uint64_t bytes = ar[0].bytes + ar[1].bytes;
  for (const Row& r : ar) {
    EXPECT_EQ(uint64_t{kGroups * kRanks}, r.count) << json;
    EXPECT_EQ(r.count, r.timed) << json;
    // Each row moves its share of the bytes in the group's whole time.
    EXPECT_LE(r.busbw_gbps, 1.2 * gbps * static_cast<double>(r.bytes) / static_cast<double>(bytes)) << json;
    gpu_total += r.gpu_s;
    busbw_total += r.busbw_gbps;
  }
  // Together they run at the link's bus bandwidth.
  EXPECT_GE(busbw_total, kSlowest * gbps) << json;
  EXPECT_LE(busbw_total, 1.2 * gbps) << json;
  EXPECT_EQ(uint64_t{kGroups * kRanks * (small + large) * 4}, bytes);
  // The members' GPU times add up to the streams' modeled time, no more
  // (not each member charged the whole group).
  const double latency_s = gpusim::config().nccl_latency_us * 1e-6;
  double model_s = kGroups * kRanks * (2 * latency_s) + 2.0 * (kRanks - 1) / kRanks * bytes / (gbps * 1e9);
  EXPECT_GE(gpu_total, 0.8 * model_s) << json;
  if (kSlowest == 0.3) EXPECT_LE(gpu_total, 1.6 * model_s) << json;  // not under a sanitizer's pace
}

// -------------------------------------------------- (d) graph capture ---

TEST(NcclHooks, CapturedCallsAreCountedAsCapturedAndNotTimed) {
  ASSERT_NE(nullptr, gpuslack_handle()) << dlerror();
  const Nccl& a = hooks();
  Ranks k(a);
  ASSERT_EQ(ncclSuccess, k.init);
  const size_t C = 1024;
  std::vector<float> ones(C, 1.0f);
  std::vector<void*> buf(kRanks);
  for (int r = 0; r < kRanks; ++r) buf[r] = k.alloc(r, C * 4, ones.data());
  std::vector<cudaGraphExec_t> exec(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    cudaSetDevice(r);
    ASSERT_EQ(cudaSuccess, cudaStreamBeginCapture(k.streams[r], cudaStreamCaptureModeRelaxed));
    ASSERT_EQ(ncclSuccess, a.ncclAllReduce(buf[r], buf[r], C, ncclFloat32, ncclSum, k.comms[r], k.streams[r]));
    cudaGraph_t g;
    ASSERT_EQ(cudaSuccess, cudaStreamEndCapture(k.streams[r], &g));
    ASSERT_EQ(cudaSuccess, cudaGraphInstantiate(&exec[r], g, 0));
    ASSERT_EQ(cudaSuccess, cudaGraphDestroy(g));
  }
  cudaSetDevice(0);
  // Nothing ran while capturing; each launch multiplies by 4.
  for (int launch = 0; launch < 2; ++launch)
    for (int r = 0; r < kRanks; ++r) ASSERT_EQ(cudaSuccess, cudaGraphLaunch(exec[r], k.streams[r]));
  k.sync();
  for (int r = 0; r < kRanks; ++r) {
    std::vector<unsigned char> got = k.download(buf[r], C * 4);
    float v;
    std::memcpy(&v, got.data(), 4);
    EXPECT_EQ(16.0f, v) << "rank " << r;
    cudaGraphExecDestroy(exec[r]);
  }
  // And one call after capture, timed as usual.
  ASSERT_EQ(ncclSuccess, a.ncclGroupStart());
  for (int r = 0; r < kRanks; ++r)
    ASSERT_EQ(ncclSuccess, a.ncclAllReduce(buf[r], buf[r], C, ncclFloat32, ncclSum, k.comms[r], k.streams[r]));
  ASSERT_EQ(ncclSuccess, a.ncclGroupEnd());
  k.sync();
  std::string json = summary_json();
  Row t = total(rows(json), "all-reduce");
  EXPECT_EQ(uint64_t{2 * kRanks}, t.count) << json;   // counted when issued, not per replay
  EXPECT_EQ(uint64_t{kRanks}, t.captured) << json;
  EXPECT_EQ(uint64_t{kRanks}, t.timed) << json;        // only the uncaptured ones
  EXPECT_FALSE(t.mostly_captured) << json;              // half, not most: its bandwidth stands
  EXPECT_GT(t.busbw_gbps, 0) << json;
  EXPECT_EQ(0, number_after(collectives_section(json), "dropped")) << json;
}

// Note [Captured collectives] (lib/report/collectives.h): three of four
// calls per rank captured into a graph (replayed twice), one issued
// directly: the one timed call per rank does not stand for the row, so no
// algbw/busbw (issue 17: 80 of 86 untimed, algbw from the warm-ups).
TEST(NcclHooks, ARowMostlyCapturedInGraphsGivesNoBandwidth) {
  ASSERT_NE(nullptr, gpuslack_handle()) << dlerror();
  const Nccl& a = hooks();
  Ranks k(a);
  ASSERT_EQ(ncclSuccess, k.init);
  const size_t C = 1024;
  std::vector<float> ones(C, 1.0f);
  std::vector<void*> buf(kRanks);
  for (int r = 0; r < kRanks; ++r) buf[r] = k.alloc(r, C * 4, ones.data());
  std::vector<cudaGraphExec_t> exec(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    cudaSetDevice(r);
    ASSERT_EQ(cudaSuccess, cudaStreamBeginCapture(k.streams[r], cudaStreamCaptureModeRelaxed));
    for (int i = 0; i < 3; ++i)
      ASSERT_EQ(ncclSuccess, a.ncclAllReduce(buf[r], buf[r], C, ncclFloat32, ncclSum, k.comms[r], k.streams[r]));
    cudaGraph_t g;
    ASSERT_EQ(cudaSuccess, cudaStreamEndCapture(k.streams[r], &g));
    ASSERT_EQ(cudaSuccess, cudaGraphInstantiate(&exec[r], g, 0));
    ASSERT_EQ(cudaSuccess, cudaGraphDestroy(g));
  }
  cudaSetDevice(0);
  for (int launch = 0; launch < 2; ++launch)
    for (int r = 0; r < kRanks; ++r) ASSERT_EQ(cudaSuccess, cudaGraphLaunch(exec[r], k.streams[r]));
  k.sync();
  for (int r = 0; r < kRanks; ++r) cudaGraphExecDestroy(exec[r]);
  ASSERT_EQ(ncclSuccess, a.ncclGroupStart());
  for (int r = 0; r < kRanks; ++r)
    ASSERT_EQ(ncclSuccess, a.ncclAllReduce(buf[r], buf[r], C, ncclFloat32, ncclSum, k.comms[r], k.streams[r]));
  ASSERT_EQ(ncclSuccess, a.ncclGroupEnd());
  k.sync();
  std::string json = summary_json();
  std::vector<Row> all = rows(json);
  ASSERT_EQ(1u, all.size()) << json;
  const Row& t = all[0];
  EXPECT_EQ(uint64_t{4 * kRanks}, t.count) << json;
  EXPECT_EQ(uint64_t{3 * kRanks}, t.captured) << json;
  EXPECT_EQ(uint64_t{kRanks}, t.timed) << json;
  EXPECT_GT(t.gpu_s, 0) << json;  // the timed calls' own GPU time stays
  EXPECT_TRUE(t.mostly_captured) << json;
  EXPECT_EQ(0, t.algbw_gbps) << json;
  EXPECT_EQ(0, t.busbw_gbps) << json;
}

// ----------------------------------------------------------- (e) abort ---

TEST(NcclHooks, AbortWhileAPeerIsBlockedNeitherHangsNorBreaksTheSummary) {
  ASSERT_NE(nullptr, gpuslack_handle()) << dlerror();
  const Nccl& a = hooks();
  ncclUniqueId id;
  ASSERT_EQ(ncclSuccess, ncclGetUniqueId(&id));
  std::atomic<bool> issued{false}, done{false};
  std::thread blocked([&] {
    cudaSetDevice(0);
    ncclComm_t comm;
    ASSERT_EQ(ncclSuccess, a.ncclCommInitRank(&comm, 2, id, 0));
    cudaStream_t s;
    cudaStreamCreate(&s);
    void* buf;
    cudaMalloc(&buf, 1 << 20);
    ASSERT_EQ(ncclSuccess, a.ncclAllReduce(buf, buf, 1 << 18, ncclFloat32, ncclSum, comm, s));
    issued = true;
    EXPECT_EQ(cudaSuccess, cudaStreamSynchronize(s));  // until the peer aborts
    done = true;
    EXPECT_EQ(ncclSuccess, a.ncclCommAbort(comm));
    cudaStreamDestroy(s);
    cudaFree(buf);
  });
  cudaSetDevice(1);
  ncclComm_t comm;
  ASSERT_EQ(ncclSuccess, a.ncclCommInitRank(&comm, 2, id, 1));
  while (!issued) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(done.load());
  // The summary builds while a timed collective can never finish as is.
  std::string during = summary_json();
  EXPECT_EQ(1u, total(rows(during), "all-reduce").count) << during;
  ASSERT_EQ(ncclSuccess, a.ncclCommAbort(comm));
  auto t0 = std::chrono::steady_clock::now();
  while (!done && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(done.load()) << "the blocked rank did not finish within 5 s of the abort";
  blocked.join();
  std::string after = summary_json();
  ASSERT_FALSE(after.empty());
  std::string c = collectives_section(after);
  ASSERT_FALSE(c.empty()) << after;
  Row t = total(rows(after), "all-reduce");
  EXPECT_EQ(1u, t.count) << after;
  EXPECT_EQ(1u, t.timed + static_cast<uint64_t>(number_after(c, "dropped"))) << after;
  EXPECT_EQ(0, number_after(c, "pending")) << after;
  // The communicator that ran a collective is listed, aborted (rank 1's,
  // which never named one in a collective, is not known: communicators.h).
  size_t listed = 0, aborted = 0;
  for (size_t at = c.find("\"rank\": "); at != std::string::npos; at = c.find("\"rank\": ", at + 1)) ++listed;
  for (size_t at = c.find("\"aborted\": true"); at != std::string::npos; at = c.find("\"aborted\": true", at + 1))
    ++aborted;
  EXPECT_EQ(1u, listed) << after;
  EXPECT_EQ(1u, aborted) << after;
}

}  // namespace

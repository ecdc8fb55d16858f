// The simulated NCCL's timing in one process (README.md, "NCCL",
// "Fabric"): with no fabric knob a collective keeps the one-link time
// (nccl_latency_us + nccl-tests' bus bytes at nccl_gbps) whatever NCCL_ALGO
// and NCCL_PROTO say; with a fabric it takes the cost model's time for
// NCCL's choice; a malformed NCCL_ALGO fails the init as in NCCL.
//
// Each test sets its environment first: every test case runs as its own
// process (tests/CMakeLists.txt) and the device reads it once. Bandwidths
// are scaled down (0.1 GB/s) so that a 1 MiB all-reduce takes milliseconds,
// and the timed tests move no data (GPUSIM_NCCL_DATA=0): reducing 4 MiB on a
// CPU under a sanitizer takes longer than the modeled time.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <stdlib.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "nccl_test_util.h"
#include "nccl_tuning.h"

using namespace nccltest;

namespace {

namespace gn = gpuslack::nccl;

constexpr int kRanks = 4;
constexpr size_t kBytes = 1u << 20;

// The GPU time of one all-reduce of kBytes, as the fastest rank's events
// saw it (the last to arrive waits for no peer).
double all_reduce_ms() {
  std::mutex mu;
  double fastest = 1e9;
  run_ranks(kRanks, [&](int, ncclComm_t comm, cudaStream_t s) {
    float* buf = nullptr;
    CUDA_OK(cudaMalloc(&buf, kBytes));
    NCCL_OK(ncclAllReduce(buf, buf, kBytes / 4, ncclFloat32, ncclSum, comm, s));  // lines the ranks up
    cudaEvent_t a, b;
    CUDA_OK(cudaEventCreate(&a));
    CUDA_OK(cudaEventCreate(&b));
    CUDA_OK(cudaEventRecord(a, s));
    NCCL_OK(ncclAllReduce(buf, buf, kBytes / 4, ncclFloat32, ncclSum, comm, s));
    CUDA_OK(cudaEventRecord(b, s));
    CUDA_OK(cudaStreamSynchronize(s));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, a, b));
    std::lock_guard<std::mutex> l(mu);
    fastest = std::min(fastest, static_cast<double>(ms));
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaFree(buf);
  });
  return fastest;
}

void expect_about(double want_ms, double got_ms) {
  EXPECT_GE(got_ms, 0.95 * want_ms);
  EXPECT_LE(got_ms, 1.5 * want_ms + 15);  // a loaded host wakes late, never early
}

// nccl_latency_us (10) + 2(n-1)/n x S at nccl_gbps (0.1).
double one_link_ms() { return 0.010 + 2.0 * (kRanks - 1) / kRanks * kBytes / 0.1e9 * 1e3; }

// The model's time for NCCL_ALGO/NCCL_PROTO's choice on one node of
// kRanks over PCIe at 0.1 GB/s.
gn::Cost model(const char* algo, const char* proto) {
  ncclsim::tuning::Enabled enabled;
  std::string error;
  if (algo) EXPECT_TRUE(ncclsim::tuning::parse_list(algo, true, &enabled, &error));
  if (proto) EXPECT_TRUE(ncclsim::tuning::parse_list(proto, false, &enabled, &error));
  gn::Links links;
  links.intra_gbps = 0.1;
  links.inter_gbps = 0.1;
  links.intra_is_nvlink = false;
  gn::Shape shape;
  shape.ranks_per_node = kRanks;
  return ncclsim::tuning::choose(gn::CollectiveOp::kAllReduce, kBytes, shape, links, enabled, false).cost;
}

TEST(NcclFabric, NoFabricKnobKeepsTheOneLinkTime) {
  setenv("GPUSIM_COST_NCCL_GBPS", "0.1", 1);
  setenv("GPUSIM_NCCL_DATA", "0", 1);
  expect_about(one_link_ms(), all_reduce_ms());
}

TEST(NcclFabric, NoFabricKnobKeepsTheOneLinkTimeWhateverNcclAlgoAndProtoSay) {
  setenv("GPUSIM_COST_NCCL_GBPS", "0.1", 1);
  setenv("GPUSIM_NCCL_DATA", "0", 1);
  setenv("NCCL_ALGO", "Tree", 1);
  setenv("NCCL_PROTO", "LL", 1);
  expect_about(one_link_ms(), all_reduce_ms());
}

TEST(NcclFabric, AFabricTakesTheModelsTimeForNcclsChoice) {
  setenv("GPUSIM_COST_NCCL_GBPS", "0.1", 1);
  setenv("GPUSIM_NCCL_DATA", "0", 1);
  setenv("GPUSIM_NET_GBPS", "0.1", 1);  // turns the fabric on; one node: PCIe at nccl_gbps
  const gn::Cost c = model(nullptr, nullptr);
  ASSERT_TRUE(c.valid);
  expect_about(c.time_s * 1e3, all_reduce_ms());
}

TEST(NcclFabric, NcclProtoChangesTheTimeOnAFabric) {
  setenv("GPUSIM_COST_NCCL_GBPS", "0.1", 1);
  setenv("GPUSIM_NCCL_DATA", "0", 1);
  setenv("GPUSIM_NET_GBPS", "0.1", 1);
  setenv("NCCL_ALGO", "Ring", 1);
  setenv("NCCL_PROTO", "LL", 1);
  const gn::Cost ll = model("Ring", "LL"), simple = model("Ring", "Simple");
  ASSERT_GT(ll.time_s, 1.5 * simple.time_s);  // LL moves half the data per line
  expect_about(ll.time_s * 1e3, all_reduce_ms());
}

TEST(NcclFabric, WithoutDataACollectiveKeepsItsTimeAndLeavesTheBuffers) {
  setenv("GPUSIM_COST_NCCL_GBPS", "0.1", 1);
  setenv("GPUSIM_NCCL_DATA", "0", 1);
  std::mutex mu;
  double fastest = 1e9;
  run_ranks(kRanks, [&](int, ncclComm_t comm, cudaStream_t s) {
    std::vector<float> ones(kBytes / 4, 1.0f);
    float* buf = static_cast<float*>(to_device(ones.data(), kBytes));
    cudaEvent_t a, b;
    CUDA_OK(cudaEventCreate(&a));
    CUDA_OK(cudaEventCreate(&b));
    NCCL_OK(ncclAllReduce(buf, buf, kBytes / 4, ncclFloat32, ncclSum, comm, s));
    CUDA_OK(cudaEventRecord(a, s));
    NCCL_OK(ncclAllReduce(buf, buf, kBytes / 4, ncclFloat32, ncclSum, comm, s));
    CUDA_OK(cudaEventRecord(b, s));
    CUDA_OK(cudaStreamSynchronize(s));
    EXPECT_EQ(1.0f, download<float>(buf, 1)[0]);  // summed over 4 ranks twice it would be 16
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, a, b));
    std::lock_guard<std::mutex> l(mu);
    fastest = std::min(fastest, static_cast<double>(ms));
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaFree(buf);
  });
  expect_about(one_link_ms(), fastest);
}

TEST(NcclFabric, AMalformedNcclAlgoFailsTheInitAsInNccl) {
  setenv("NCCL_ALGO", "Rnig", 1);
  ncclUniqueId id;
  NCCL_OK(ncclGetUniqueId(&id));
  CUDA_OK(cudaSetDevice(0));
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclInvalidUsage, ncclCommInitRank(&comm, 1, id, 0));
  EXPECT_EQ(nullptr, comm);
  EXPECT_NE(std::string::npos, std::string(ncclGetLastError(nullptr)).find("Rnig"));
  ncclComm_t comms[2] = {nullptr, nullptr};
  EXPECT_EQ(ncclInvalidUsage, ncclCommInitAll(comms, 2, nullptr));
}

}  // namespace

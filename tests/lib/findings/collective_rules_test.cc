// The collective rules (lib/findings/collective_rules.cc) over built
// summaries: each fires on its leak and stays quiet on a near miss.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "findings/findings.h"

namespace gpuslack {
namespace findings {
namespace {

// A 10 s run of one process holding `ranks` communicators of `ranks` ranks
// (as ncclCommInitAll makes them: within one node).
report::Summary with_ranks(int ranks) {
  report::Summary s;
  s.wall_s = 10;
  s.collectives.present = true;
  for (int r = 0; r < ranks; ++r) s.collectives.communicators.push_back({ranks, r, r, true, false});
  return s;
}

// A 10 s run of one rank of a communicator of `ranks` (one process per GPU).
report::Summary one_rank_of(int ranks) {
  report::Summary s;
  s.wall_s = 10;
  s.collectives.present = true;
  s.collectives.communicators.push_back({ranks, 0, 0, true, false});
  return s;
}

// `calls` all-reduces of 2^bucket bytes each, every one timed, at `busbw`
// GB/s bus bandwidth over `nranks`, each taking `call_s` on the GPU.
report::CollectiveRow all_reduce(int bucket, int nranks, uint64_t calls, double call_s, double busbw) {
  report::CollectiveRow r;
  r.op = "all-reduce";
  r.datatype = "float32";
  r.bucket = bucket;
  r.nranks = nranks;
  r.count = r.timed = calls;
  r.bytes = calls << bucket;
  r.gpu_s = r.gpu_s_estimated = call_s * static_cast<double>(calls);
  r.gpu_p50_s = r.gpu_p99_s = call_s;
  r.busbw_gbps = busbw;
  r.algbw_gbps = busbw / 2;
  return r;
}

std::vector<report::Finding> run(const report::Summary& s, const std::string& fabric, double expected = 0,
                                 bool pytorch = false) {
  Context c;
  c.fabric = fabric;
  c.expected_busbw_gbps = expected;
  c.pytorch = pytorch;
  std::vector<report::Finding> out;
  collective_rules(s, c, &out);
  return out;
}

std::string evidence(const report::Finding& f, const std::string& name) {
  for (const auto& [k, v] : f.evidence)
    if (k == name) return v;
  return "<none>";
}

TEST(CollectiveBandwidth, FiresBelowHalfTheFabricsFigure) {
  report::Summary s = with_ranks(8);
  // 100 calls of 256 MiB, 2 s of GPU time at 40 GB/s on NVLink 4 (370).
  s.collectives.rows.push_back(all_reduce(28, 8, 100, 0.02, 40));
  s.collectives.env = {{"NCCL_PROTO", "LL128"}};
  auto out = run(s, "nvlink4");
  ASSERT_EQ(1u, out.size());
  const report::Finding& f = out[0];
  EXPECT_EQ("collective_bandwidth", f.rule);
  EXPECT_NEAR(2.0 / 8 * (1 - 40.0 / 370), f.cost_s, 1e-9);  // per rank: the 8 GPUs run side by side
  EXPECT_NEAR(f.cost_s / 10, f.cost_share, 1e-12);
  EXPECT_EQ(-1, f.gpu_idle_s);
  EXPECT_EQ("unset", evidence(f, "NCCL_ALGO"));
  EXPECT_EQ("LL128", evidence(f, "NCCL_PROTO"));
  EXPECT_EQ("within one node", evidence(f, "communicator"));
  EXPECT_NE(std::string::npos, evidence(f, "expected").find("370 GB/s (fabric nvlink4")) << evidence(f, "expected");
  EXPECT_NE(std::string::npos, evidence(f, "slowest").find("256.0 MiB-512.0 MiB per call, 8 ranks"));
  EXPECT_NE(std::string::npos, f.fix.find("NCCL_PROTO=LL128 is set")) << f.fix;
  EXPECT_NE(std::string::npos, f.fix.find("NCCL_MIN_NCHANNELS")) << f.fix;
  EXPECT_NE(std::string::npos, f.fix.find("NVLink")) << f.fix;
}

TEST(CollectiveBandwidth, NearMissAboveHalfIsQuiet) {
  report::Summary s = with_ranks(8);
  s.collectives.rows.push_back(all_reduce(28, 8, 100, 0.02, 190));  // 51% of 370
  EXPECT_TRUE(run(s, "nvlink4").empty());
}

TEST(CollectiveBandwidth, SmallOrUntimedCallsAreNotJudged) {
  report::Summary s = with_ranks(8);
  s.collectives.rows.push_back(all_reduce(25, 8, 1000, 0.01, 5));  // 32 MiB: latency may still matter
  report::CollectiveRow untimed = all_reduce(28, 8, 100, 0.02, 40);
  untimed.timed = 0;
  untimed.captured = 100;
  untimed.gpu_s = untimed.gpu_s_estimated = 0;
  untimed.busbw_gbps = 0;
  s.collectives.rows.push_back(untimed);
  EXPECT_TRUE(run(s, "nvlink4").empty());
}

TEST(CollectiveBandwidth, NoExpectationNoFinding) {
  report::Summary s = with_ranks(8);
  s.collectives.rows.push_back(all_reduce(28, 8, 100, 0.02, 1));
  EXPECT_TRUE(run(s, "auto").empty());
  EXPECT_TRUE(run(s, "").empty());
  EXPECT_TRUE(run(s, "nvlink9").empty());  // unknown: no expectation
  // A network alone says nothing of a communicator within one node.
  EXPECT_TRUE(run(s, "ib400").empty());
}

TEST(CollectiveBandwidth, ExpectedBusbwWinsOverTheFabric) {
  report::Summary s = with_ranks(8);
  s.collectives.rows.push_back(all_reduce(28, 8, 100, 0.02, 100));
  EXPECT_TRUE(run(s, "nvlink4", /*expected=*/150).empty());
  auto out = run(s, "auto", /*expected=*/250);
  ASSERT_EQ(1u, out.size());
  EXPECT_EQ("250 GB/s (expected_busbw_gbps)", evidence(out[0], "expected"));
}

TEST(CollectiveBandwidth, AcrossNodesExpectsTheNetworkAndSuggestsTree) {
  // Rank 8 of 16, on the second node: the world communicator spans nodes.
  report::Summary s;
  s.wall_s = 10;
  s.collectives.present = true;
  s.collectives.communicators.push_back({16, 8, 0, true, false});
  s.job.world_size = 16;
  s.job.node_rank = 1;
  s.collectives.rows.push_back(all_reduce(28, 16, 100, 0.02, 15));
  auto out = run(s, "nvlink4+ib400");
  ASSERT_EQ(1u, out.size());
  EXPECT_EQ("across nodes", evidence(out[0], "communicator"));
  EXPECT_NE(std::string::npos, evidence(out[0], "expected").find("40 GB/s (fabric ib400"))
      << evidence(out[0], "expected");
  EXPECT_NE(std::string::npos, out[0].fix.find("NCCL_ALGO=Tree")) << out[0].fix;
  EXPECT_NE(std::string::npos, out[0].fix.find("NET/IB")) << out[0].fix;
  // 25 GB/s is healthy for the network, though far below NVLink.
  s.collectives.rows[0].busbw_gbps = 25;
  EXPECT_TRUE(run(s, "nvlink4+ib400").empty());
}

TEST(CollectiveBandwidth, UnknownShapeExpectsTheLowerFigure) {
  // Rank 0 of 16 (node 0): the summary cannot tell whether it spans nodes.
  report::Summary s;
  s.wall_s = 10;
  s.collectives.present = true;
  s.collectives.communicators.push_back({16, 0, 0, true, false});
  s.job.world_size = 16;
  s.job.node_rank = 0;
  s.collectives.rows.push_back(all_reduce(28, 16, 100, 0.02, 25));
  EXPECT_TRUE(run(s, "nvlink4+ib400").empty());
  auto out = run(s, "nvlink4");  // the only link named
  ASSERT_EQ(1u, out.size());
  EXPECT_EQ("shape unknown", evidence(out[0], "communicator"));
}

TEST(CollectiveBandwidth, SetAlgorithmIsNamedInTheFix) {
  report::Summary s = with_ranks(8);
  s.collectives.rows.push_back(all_reduce(28, 8, 100, 0.02, 40));
  s.collectives.env = {{"NCCL_ALGO", "Tree"}, {"NCCL_MIN_NCHANNELS", "4"}};
  auto out = run(s, "nvlink4");
  ASSERT_EQ(1u, out.size());
  EXPECT_EQ("Tree", evidence(out[0], "NCCL_ALGO"));
  EXPECT_EQ("4", evidence(out[0], "NCCL_MIN_NCHANNELS"));
  EXPECT_NE(std::string::npos, out[0].fix.find("NCCL_ALGO=Tree is set")) << out[0].fix;
}

TEST(CollectiveBandwidth, CostBelowThresholdIsQuiet) {
  report::Summary s = with_ranks(8);
  s.collectives.rows.push_back(all_reduce(28, 8, 2, 0.02, 40));  // 0.04 s of GPU time in 10 s
  EXPECT_TRUE(run(s, "nvlink4").empty());
}

TEST(LatencyBound, FiresOnManySmallCalls) {
  report::Summary s = one_rank_of(2);
  // 2000 calls of 16 KiB at 30 us each: 60 ms, nearly all latency.
  s.collectives.rows.push_back(all_reduce(14, 2, 2000, 30e-6, 0.5));
  s.wall_s = 1;
  auto out = run(s, "auto", 0, /*pytorch=*/true);
  ASSERT_EQ(1u, out.size());
  const report::Finding& f = out[0];
  EXPECT_EQ("latency_bound_collectives", f.rule);
  EXPECT_NEAR(30e-6 * (2000 - 2), f.cost_s, 1e-9);  // 31.25 MiB merge into two 25 MiB buckets
  EXPECT_NE(std::string::npos, f.fix.find("bucket_cap_mb")) << f.fix;
  EXPECT_EQ("2000, 31.2 MiB in all", evidence(f, "calls under 1 MiB, per rank"));
  EXPECT_EQ("2", evidence(f, "calls in 25 MiB buckets"));
}

TEST(LatencyBound, NearMissLargeBucketsDominate) {
  report::Summary s = one_rank_of(2);
  s.wall_s = 1;
  s.collectives.rows.push_back(all_reduce(14, 2, 2000, 30e-6, 0.5));     // 60 ms
  s.collectives.rows.push_back(all_reduce(26, 2, 100, 2e-3, 60));        // 200 ms
  EXPECT_TRUE(run(s, "auto").empty());
}

TEST(LatencyBound, NearMissFewCallsOrNotTimed) {
  report::Summary s = one_rank_of(2);
  s.wall_s = 0.1;
  s.collectives.rows.push_back(all_reduce(14, 2, 99, 30e-6, 0.5));
  EXPECT_TRUE(run(s, "auto").empty());
  s.collectives.rows[0] = all_reduce(14, 2, 2000, 30e-6, 0.5);
  s.collectives.rows[0].timed = 0;
  EXPECT_TRUE(run(s, "auto").empty());
  s.collectives.rows[0] = all_reduce(14, 2, 2000, 30e-6, 0.5);
  s.wall_s = 100;  // 60 ms of 100 s: below the threshold
  EXPECT_TRUE(run(s, "auto").empty());
}

}  // namespace
}  // namespace findings
}  // namespace gpuslack

namespace gpuslack {
namespace findings {
namespace {

TEST(LatencyBound, CallsOfSeveralRanksHereCountPerRank) {
  report::Summary s = with_ranks(2);  // one process, two GPUs: each call twice
  s.wall_s = 1;
  s.collectives.rows.push_back(all_reduce(14, 2, 4000, 30e-6, 0.5));
  auto out = run(s, "auto");
  ASSERT_EQ(1u, out.size());
  EXPECT_NEAR(30e-6 * (2000 - 2), out[0].cost_s, 1e-9);
  EXPECT_EQ("2000, 31.2 MiB in all", evidence(out[0], "calls under 1 MiB, per rank"));
  // The same calls, counted once per process, would cost 60 ms; per rank,
  // half of 2000 calls (30 ms) is below the threshold.
  s.collectives.rows[0] = all_reduce(14, 2, 2000, 30e-6, 0.5);
  EXPECT_TRUE(run(s, "auto").empty());
}

}  // namespace
}  // namespace findings
}  // namespace gpuslack

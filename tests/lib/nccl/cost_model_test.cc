// The collectives cost model (lib/nccl/cost_model.h): worked examples by
// hand from NCCL's tuning.cc constants, the field report of issue 26 (ring
// loses to tree across nodes on a slow network), ring's lead within one
// NVLink node, the protocols' factors, and what is not modeled.
#include "nccl/cost_model.h"

#include <gtest/gtest.h>

namespace gpuslack {
namespace nccl {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

// The field report: NVLink 4 at 450 GB/s per direction within a node, one
// NDR 400 Gb/s NIC (50 GB/s) per GPU between nodes.
Links field_links() {
  Links l;
  l.intra_gbps = 450;
  l.inter_gbps = 50;
  return l;
}

TEST(CostModel, RingAcrossNodesWorkedByHand) {
  // 2 nodes × 4 GPUs, 1 GiB all-reduce by Ring/Simple.
  // Bandwidth: the slowest link is the network: 50 × 0.8 = 40 GB/s of bus
  // bandwidth; algbw = 40 × n / (2(n−1)) = 40 × 8/14 = 22.857 GB/s.
  // Latency: baseLat 8.4 + 12 intra steps × max(NVLink 3.4, 3 × 1.0 net
  // overhead) + 2 inter steps × 14.0 = 77.2 µs, × 1.4 (ring's plateau across
  // nodes) = 108.08 µs.
  Cost c = collective_cost(CollectiveOp::kAllReduce, kGiB, Algo::kRing, Proto::kSimple, {2, 4}, field_links());
  ASSERT_TRUE(c.valid);
  EXPECT_NEAR(108.08e-6 + kGiB / (40.0 * 8 / 14 * 1e9), c.time_s, 1e-7);
  EXPECT_NEAR(40, c.busbw_gbps, 0.2);
}

TEST(CostModel, TreeAcrossNodesWorkedByHand) {
  // The node's NICs together: 4 × 40 = 160 against NVLink's 370; × 0.92
  // (tree) = 147.2 bus, × 0.5 (tree's ratio) = 73.6 GB/s algbw. 1 GiB is
  // past the tree correction table. Latency: 8.4 + 2 × (3 chain hops × 4.0
  // + log2(2) × 14.0) = 60.4 µs.
  Cost c = collective_cost(CollectiveOp::kAllReduce, kGiB, Algo::kTree, Proto::kSimple, {2, 4}, field_links());
  ASSERT_TRUE(c.valid);
  EXPECT_NEAR(60.4e-6 + kGiB / 73.6e9, c.time_s, 1e-7);
  EXPECT_GE(c.channels, 4);  // enough that 41.4 GB/s per channel does not bind
}

TEST(CostModel, FieldReportRingLosesAQuarterToTree) {
  for (uint64_t bytes : {64 * kMiB, 256 * kMiB, kGiB}) {
    Cost ring = collective_cost(CollectiveOp::kAllReduce, bytes, Algo::kRing, Proto::kSimple, {2, 4}, field_links());
    Choice best = best_choice(CollectiveOp::kAllReduce, bytes, {2, 4}, field_links());
    ASSERT_TRUE(best.cost.valid);
    EXPECT_EQ(Algo::kTree, best.algo) << bytes;
    EXPECT_LE(best.cost.time_s, 0.75 * ring.time_s) << bytes;
  }
  // At the largest sizes Simple wins (LL128 is 120/128 of it across nodes).
  Choice big = best_choice(CollectiveOp::kAllReduce, kGiB, {2, 4}, field_links());
  EXPECT_EQ(Proto::kSimple, big.proto);
}

TEST(CostModel, RingStaysBestWithinOneNvlinkNode) {
  Links l = field_links();
  for (uint64_t bytes : {64 * kMiB, 256 * kMiB, kGiB}) {
    Choice best = best_choice(CollectiveOp::kAllReduce, bytes, {1, 8}, l);
    EXPECT_EQ(Algo::kRing, best.algo) << bytes;
    EXPECT_EQ(Proto::kSimple, best.proto) << bytes;
  }
  // 1 GiB on 8 H100s reaches nearly nccl-tests' 370 GB/s.
  Choice big = best_choice(CollectiveOp::kAllReduce, kGiB, {1, 8}, l);
  EXPECT_GT(big.cost.busbw_gbps, 360);
  EXPECT_LE(big.cost.busbw_gbps, 370);
  // Small calls go to LL: latency 6.6 + 14 × 0.6 = 15 µs against Simple's 56.
  Choice small = best_choice(CollectiveOp::kAllReduce, 8 << 10, {1, 8}, l);
  EXPECT_EQ(Proto::kLL, small.proto);
  EXPECT_NEAR(15e-6, small.cost.time_s, 1e-6);
}

TEST(CostModel, ProtocolFactors) {
  Links l = field_links();
  // Ring/LL: half the bandwidth, at most NCCL's llMaxBw (141 on one Hopper
  // node; 39 across 2 nodes).
  Cost simple = collective_cost(CollectiveOp::kAllReduce, 4 * kGiB, Algo::kRing, Proto::kSimple, {1, 8}, l);
  Cost ll = collective_cost(CollectiveOp::kAllReduce, 4 * kGiB, Algo::kRing, Proto::kLL, {1, 8}, l);
  EXPECT_NEAR(141, ll.busbw_gbps, 1);
  EXPECT_GT(simple.busbw_gbps, 2 * ll.busbw_gbps);
  Cost ll_nodes = collective_cost(CollectiveOp::kAllReduce, 4 * kGiB, Algo::kRing, Proto::kLL, {2, 4}, l);
  EXPECT_NEAR(20, ll_nodes.busbw_gbps, 0.5);  // min(39, 40 × 0.5)
  // Ring/LL128: 0.92 of the link.
  Cost ll128 = collective_cost(CollectiveOp::kAllReduce, 4 * kGiB, Algo::kRing, Proto::kLL128, {1, 8}, l);
  EXPECT_NEAR(0.92, ll128.busbw_gbps / simple.busbw_gbps, 0.01);
  // LL128 needs NVLink.
  Links pcie;
  pcie.intra_gbps = 64;
  pcie.intra_is_nvlink = false;
  EXPECT_FALSE(collective_cost(CollectiveOp::kAllReduce, kGiB, Algo::kRing, Proto::kLL128, {1, 8}, pcie).valid);
  Cost pcie_ring = collective_cost(CollectiveOp::kAllReduce, 4 * kGiB, Algo::kRing, Proto::kSimple, {1, 8}, pcie);
  EXPECT_NEAR(35, pcie_ring.busbw_gbps, 0.5);
}

TEST(CostModel, TooFewChannelsLimitTheCall) {
  Links l = field_links();
  Cost own = collective_cost(CollectiveOp::kAllReduce, kGiB, Algo::kRing, Proto::kSimple, {1, 8}, l);
  Cost two = collective_cost(CollectiveOp::kAllReduce, kGiB, Algo::kRing, Proto::kSimple, {1, 8}, l, 2);
  EXPECT_EQ(2, two.channels);
  EXPECT_GE(own.channels, 10);  // 370 / 38.7 per channel
  EXPECT_NEAR(2 * 38.7, two.busbw_gbps, 0.5);
  EXPECT_GT(two.time_s, 4 * own.time_s);
}

TEST(CostModel, OtherOpsAreRings) {
  Links l = field_links();
  // All-gather of S (the total): Ring's n−1 steps, busbw the link's.
  Cost ag = collective_cost(CollectiveOp::kAllGather, 4 * kGiB, Algo::kRing, Proto::kSimple, {1, 8}, l);
  ASSERT_TRUE(ag.valid);
  EXPECT_NEAR(370, ag.busbw_gbps, 2);
  EXPECT_FALSE(collective_cost(CollectiveOp::kAllGather, kGiB, Algo::kTree, Proto::kSimple, {1, 8}, l).valid);
  Choice best = best_choice(CollectiveOp::kReduceScatter, kGiB, {2, 4}, l);
  EXPECT_EQ(Algo::kRing, best.algo);
  // Point-to-point: Ring/Simple only, over the slowest link.
  Cost send = collective_cost(CollectiveOp::kSend, kGiB, Algo::kRing, Proto::kSimple, {2, 4}, l);
  ASSERT_TRUE(send.valid);
  EXPECT_NEAR(40, send.busbw_gbps, 0.5);
  EXPECT_FALSE(collective_cost(CollectiveOp::kSend, kGiB, Algo::kRing, Proto::kLL, {2, 4}, l).valid);
}

TEST(CostModel, NothingWithoutTheLinksItNeeds) {
  Links intra_only;
  intra_only.intra_gbps = 450;
  EXPECT_TRUE(collective_cost(CollectiveOp::kAllReduce, kGiB, Algo::kRing, Proto::kSimple, {1, 8}, intra_only).valid);
  EXPECT_FALSE(collective_cost(CollectiveOp::kAllReduce, kGiB, Algo::kRing, Proto::kSimple, {2, 4}, intra_only).valid);
  EXPECT_FALSE(best_choice(CollectiveOp::kAllReduce, kGiB, {2, 4}, intra_only).cost.valid);
  EXPECT_FALSE(collective_cost(CollectiveOp::kAllReduce, kGiB, Algo::kRing, Proto::kSimple, {1, 1}, intra_only).valid);
  EXPECT_FALSE(collective_cost(CollectiveOp::kAllReduce, kGiB, Algo::kRing, Proto::kSimple, {0, 8}, intra_only).valid);
  // One GPU per node needs no link within a node.
  Links inter_only;
  inter_only.inter_gbps = 50;
  EXPECT_TRUE(collective_cost(CollectiveOp::kAllReduce, kGiB, Algo::kTree, Proto::kSimple, {4, 1}, inter_only).valid);
}

TEST(CostModel, LinkTableAndEfficiency) {
  int n = 0;
  for (const LinkKind* k = link_kinds(); k->name; ++k, ++n) {
    EXPECT_GT(k->busbw_gbps, 0) << k->name;
    EXPECT_LT(k->busbw_gbps, k->line_gbps) << k->name;
    EXPECT_EQ(k, find_link_kind(k->name));
  }
  EXPECT_EQ(9, n);
  EXPECT_EQ(nullptr, find_link_kind("nvlink9"));
  EXPECT_DOUBLE_EQ(370.0 / 450, link_efficiency(false, true, 450));
  EXPECT_DOUBLE_EQ(370.0 / 450, link_efficiency(false, true, 400));  // nearest NVLink: 4
  EXPECT_DOUBLE_EQ(0.8, link_efficiency(true, false, 50));
  EXPECT_DOUBLE_EQ(35.0 / 64, link_efficiency(false, false, 60));
  Links k = links_of(find_link_kind("nvlink4"), find_link_kind("ib400"));
  EXPECT_EQ(450, k.intra_gbps);
  EXPECT_EQ(50, k.inter_gbps);
  EXPECT_DOUBLE_EQ(40, link_busbw({2, 4}, k));
  EXPECT_DOUBLE_EQ(370, link_busbw({1, 8}, k));
  EXPECT_EQ(0, link_busbw({2, 4}, links_of(find_link_kind("nvlink4"), nullptr)));
}

TEST(CostModel, NamesAsNcclSpellsThem) {
  Algo a;
  Proto p;
  EXPECT_TRUE(parse_algo("tree", &a));
  EXPECT_EQ(Algo::kTree, a);
  EXPECT_TRUE(parse_algo("Ring", &a));
  EXPECT_EQ(Algo::kRing, a);
  EXPECT_FALSE(parse_algo("NVLS", &a));
  EXPECT_FALSE(parse_algo(nullptr, &a));
  EXPECT_TRUE(parse_proto("ll128", &p));
  EXPECT_EQ(Proto::kLL128, p);
  EXPECT_STREQ("Simple", proto_name(Proto::kSimple));
  EXPECT_STREQ("Tree", algo_name(Algo::kTree));
}

}  // namespace
}  // namespace nccl
}  // namespace gpuslack

// The simulated NCCL's choice of algorithm and protocol (nccl_tuning.h):
// NCCL_ALGO / NCCL_PROTO parsed as NCCL's parseList does (src/graph/
// tuning.cc, 2.24 and later; NCCL's environment variable documentation),
// and the choice among what they leave: the cost model's fastest (tuned)
// or Ring whenever allowed (the ring default). Pure functions: no device.
#include <gtest/gtest.h>

#include <string>

#include "nccl_tuning.h"

namespace {

using namespace ncclsim::tuning;
namespace gn = gpuslack::nccl;

constexpr int kBroadcast = 0, kAllGather = 2, kAllReduce = 4;
constexpr int kLL = 0, kLL128 = 1, kSimple = 2;
constexpr int kNvls = 4;

Enabled parsed(const char* algo, const char* proto = nullptr) {
  Enabled e;
  std::string error;
  if (proto) EXPECT_TRUE(parse_list(proto, false, &e, &error)) << proto << ": " << error;
  if (algo) EXPECT_TRUE(parse_list(algo, true, &e, &error)) << algo << ": " << error;
  return e;
}

std::string refused(const char* value, bool algos) {
  Enabled e;
  std::string error;
  EXPECT_FALSE(parse_list(value, algos, &e, &error)) << value;
  return error;
}

TEST(NcclTuningParse, AListEnablesOnlyItsNamesForEveryFunctionWithoutRegardToCase) {
  Enabled e = parsed("tree,RING");
  for (int f = 0; f < kFuncCount; ++f)
    for (int a = 0; a < kNcclAlgoCount; ++a) EXPECT_EQ(a == kTree || a == kRing, e.algo[f][a]) << f << " " << a;
}

TEST(NcclTuningParse, ACaretExcludesItsNames) {
  Enabled e = parsed(nullptr, "^LL128");
  for (int f = 0; f < kFuncCount; ++f) {
    EXPECT_TRUE(e.proto[f][kLL]);
    EXPECT_FALSE(e.proto[f][kLL128]);
    EXPECT_TRUE(e.proto[f][kSimple]);
  }
}

TEST(NcclTuningParse, PerFunctionEntriesOverrideTheFirstForTheirFunctionOnly) {
  // NCCL's own examples (tuning.cc, parseList).
  Enabled e = parsed("ring,collnetdirect;allreduce:tree,collnetdirect;broadcast:ring");
  EXPECT_TRUE(e.algo[kAllReduce][kTree]);
  EXPECT_FALSE(e.algo[kAllReduce][kRing]);
  EXPECT_TRUE(e.algo[kBroadcast][kRing]);
  EXPECT_FALSE(e.algo[kBroadcast][2]);  // CollNetDirect: only ring for broadcast
  EXPECT_TRUE(e.algo[kAllGather][kRing]);
  EXPECT_TRUE(e.algo[kAllGather][2]);
  EXPECT_FALSE(e.algo[kAllGather][kTree]);

  Enabled p = parsed(nullptr, "^LL128;allreduce:LL128");
  EXPECT_TRUE(p.proto[kAllReduce][kLL128]);
  EXPECT_FALSE(p.proto[kAllReduce][kLL]);
  EXPECT_FALSE(p.proto[kAllReduce][kSimple]);
  EXPECT_FALSE(p.proto[kAllGather][kLL128]);
  EXPECT_TRUE(p.proto[kAllGather][kSimple]);

  Enabled only = parsed("allreduce:^tree");  // the other functions keep everything
  EXPECT_FALSE(only.algo[kAllReduce][kTree]);
  EXPECT_TRUE(only.algo[kAllReduce][kRing]);
  EXPECT_TRUE(only.algo[kAllGather][kTree]);
}

TEST(NcclTuningParse, WhatNcclRefusesIsRefusedWithNcclsWords) {
  EXPECT_NE(std::string::npos, refused("Ring;Tree", true).find("all entries except the first must have a prefix"));
  EXPECT_NE(std::string::npos, refused("Rnig", true).find("unrecognized element token \"Rnig\""));
  EXPECT_NE(std::string::npos, refused("allreduc:tree", true).find("unrecognized prefix token \"allreduc\""));
  EXPECT_NE(std::string::npos, refused("LL256", false).find("NCCL_PROTO"));
  EXPECT_NE(std::string::npos, refused("CollNet", true).find("CollNet"));  // 2.28 names CollNetDirect/Chain
}

// A 2 x 4 job on NVLink 4 x 18 and a network of 50 GB/s per GPU: the field
// report's fabric.
gn::Links field_links() {
  gn::Links l;
  l.intra_gbps = 450;
  l.inter_gbps = 50;
  l.intra_is_nvlink = true;
  return l;
}
gn::Shape two_by_four() {
  gn::Shape s;
  s.nodes = 2;
  s.ranks_per_node = 4;
  return s;
}

TEST(NcclTuningChoice, TunedIsTheModelsBestChoiceAtEverySize) {
  for (const gn::Shape& shape : {two_by_four(), gn::Shape{1, 8}, gn::Shape{4, 2}})
    for (uint64_t bytes = 256; bytes <= (1ull << 30); bytes *= 8)
      for (gn::CollectiveOp op : {gn::CollectiveOp::kAllReduce, gn::CollectiveOp::kAllGather,
                                  gn::CollectiveOp::kBroadcast}) {
        const Decision d = choose(op, bytes, shape, field_links(), Enabled(), false);
        const gn::Choice best = gn::best_choice(op, bytes, shape, field_links());
        EXPECT_EQ(best.algo, d.algo) << bytes << " bytes, " << shape.nodes << " x " << shape.ranks_per_node;
        EXPECT_EQ(best.proto, d.proto) << bytes << " bytes, " << shape.nodes << " x " << shape.ranks_per_node;
        EXPECT_DOUBLE_EQ(best.cost.time_s, d.cost.time_s);
        EXPECT_FALSE(d.algo_fallback || d.proto_fallback);
      }
}

TEST(NcclTuningChoice, TheRingDefaultRunsRingWithTheModelsBestProtocolForRing) {
  for (uint64_t bytes = 256; bytes <= (1ull << 30); bytes *= 8) {
    const Decision d = choose(gn::CollectiveOp::kAllReduce, bytes, two_by_four(), field_links(), Enabled(), true);
    EXPECT_EQ(gn::Algo::kRing, d.algo) << bytes;
    for (gn::Proto p : {gn::Proto::kLL, gn::Proto::kLL128, gn::Proto::kSimple})
      EXPECT_LE(d.cost.time_s,
                gn::collective_cost(gn::CollectiveOp::kAllReduce, bytes, gn::Algo::kRing, p, two_by_four(),
                                    field_links())
                    .time_s)
          << bytes;
  }
}

TEST(NcclTuningChoice, NcclAlgoAndNcclProtoOverrideTheDefault) {
  const uint64_t bytes = 64ull << 20;
  Decision tree = choose(gn::CollectiveOp::kAllReduce, bytes, two_by_four(), field_links(), parsed("Tree", "Simple"), true);
  EXPECT_EQ(gn::Algo::kTree, tree.algo);
  EXPECT_EQ(gn::Proto::kSimple, tree.proto);
  Decision ll = choose(gn::CollectiveOp::kAllReduce, bytes, two_by_four(), field_links(), parsed(nullptr, "LL"), false);
  EXPECT_EQ(gn::Proto::kLL, ll.proto);
  // Excluding Ring leaves Tree even under the ring default.
  EXPECT_EQ(gn::Algo::kTree,
            choose(gn::CollectiveOp::kAllReduce, bytes, two_by_four(), field_links(), parsed("^ring"), true).algo);
}

TEST(NcclTuningChoice, NothingModeledLeftFallsBackToTheModeledOnesAndSaysSo) {
  // NVLS alone (not modeled), and Tree for all-gather (Tree runs all-reduce only).
  Decision nvls = choose(gn::CollectiveOp::kAllReduce, 1 << 20, two_by_four(), field_links(), parsed("NVLS"), true);
  EXPECT_TRUE(nvls.algo_fallback);
  EXPECT_EQ(gn::Algo::kRing, nvls.algo);
  EXPECT_TRUE(nvls.cost.valid);
  Decision gather = choose(gn::CollectiveOp::kAllGather, 1 << 20, two_by_four(), field_links(), parsed("Tree"), false);
  EXPECT_TRUE(gather.algo_fallback);
  EXPECT_EQ(gn::Algo::kRing, gather.algo);
  // Every protocol excluded.
  Decision none = choose(gn::CollectiveOp::kAllReduce, 1 << 20, two_by_four(), field_links(),
                         parsed(nullptr, "^LL,LL128,Simple"), false);
  EXPECT_TRUE(none.proto_fallback);
  EXPECT_TRUE(none.cost.valid);
  Enabled e;
  EXPECT_TRUE(e.algo[kAllReduce][kNvls]);  // untouched by the fallback
}

TEST(NcclTuningChoice, PointToPointOpsHaveNoAlgorithmToChoose) {
  for (gn::CollectiveOp op : {gn::CollectiveOp::kSend, gn::CollectiveOp::kAlltoAll}) {
    EXPECT_EQ(-1, func_of(op));
    Decision d = choose(op, 1 << 20, two_by_four(), field_links(), parsed("Tree", "LL"), false);
    EXPECT_EQ(gn::Algo::kRing, d.algo);
    EXPECT_EQ(gn::Proto::kSimple, d.proto);
  }
}

}  // namespace

// NCCL's choices in the summary (report/collectives.h, add_algorithms): the
// profiler plugin's records become the section's algorithms and each
// ledger row's algorithm, protocol, channels and nodes; JSON, its read-back,
// the text and Prometheus carry them.
#include <gtest/gtest.h>

#include <string>

#include "report/collectives.h"
#include "report/json.h"
#include "report/prometheus.h"
#include "report/summary.h"
#include "report/summary_reader.h"
#include "report/text.h"
#include "sample_summary.h"
#include "text_lines.h"

namespace gpuslack {
namespace report {
namespace {

using testing_sample::sample_summary;
using testing_text::unwrapped;

nccl::CollectiveFigures row(nccl::CollectiveOp op, int bucket, int nranks, uint64_t count, uint64_t bytes_per_call) {
  nccl::CollectiveFigures f;
  f.op = op;
  f.datatype = 7;  // float32
  f.bucket = bucket;
  f.nranks = nranks;
  f.count = count;
  f.bytes = count * bytes_per_call;
  f.host_ticks = count * 1000;
  return f;
}

nccl::profiler::Record record(nccl::CollectiveOp op, int bucket, int nranks, const char* algo, const char* proto,
                              uint64_t calls, uint64_t channels_each) {
  nccl::profiler::Record r;
  r.comm_hash = 0xfeedbeef12345678ull;
  r.nranks = nranks;
  r.nnodes = nranks > 0 ? 2 : 0;
  r.op = op;
  r.bucket = bucket;
  r.algo = nccl::profiler::algo_index(algo);
  r.proto = nccl::profiler::proto_index(proto);
  r.calls = calls;
  r.channels_sum = calls * channels_each;
  r.bytes = calls << bucket;
  return r;
}

Summary with_profiler(const RunInfo& run) {
  Summary s = sample_summary();
  s.collectives = build_collectives(run, 1e-9, 10);
  return s;
}

RunInfo run_info() {
  RunInfo run;
  run.reason = "exit";
  run.wall_s = 10;
  run.tick_seconds = 1e-9;
  // 64 MiB all-reduces on 8 ranks: NCCL chose Ring/Simple for 30 of them,
  // Tree/LL128 for 10.
  run.collectives.rows = {row(nccl::CollectiveOp::kAllReduce, 26, 8, 40, 64 << 20)};
  nccl::profiler::Record ring = record(nccl::CollectiveOp::kAllReduce, 26, 8, "RING", "SIMPLE", 30, 16);
  ring.timed = 30;
  ring.timed_bytes = 30ull << 26;
  ring.gpu_ns = 3'000'000'000ull;  // 30 calls, 0.1 s each
  run.profiler.rows = {ring, record(nccl::CollectiveOp::kAllReduce, 26, 8, "TREE", "LL128", 10, 8)};
  run.profiler.version = 5;
  run.profiler.records = 40;
  run.profiler.dropped = 2;
  run.profiler_status = "on (v5)";
  return run;
}

TEST(Algorithms, RowsTakeTheChoiceOfMostOfTheirCalls) {
  Summary s = with_profiler(run_info());
  const CollectivesSection& c = s.collectives;
  EXPECT_EQ("on (v5)", c.profiler);
  EXPECT_EQ(40u, c.profiler_records);
  EXPECT_EQ(2u, c.profiler_dropped);
  ASSERT_EQ(1u, c.rows.size());
  EXPECT_EQ("Ring", c.rows[0].algo);
  EXPECT_EQ("Simple", c.rows[0].proto);
  EXPECT_DOUBLE_EQ((30.0 * 16 + 10.0 * 8) / 40, c.rows[0].channels);
  EXPECT_EQ(2, c.rows[0].nnodes);
  ASSERT_EQ(2u, c.algorithms.size());
  const AlgoProtoRow& a = c.algorithms[0];  // most calls first
  EXPECT_EQ("Ring", a.algo);
  EXPECT_EQ("Simple", a.proto);
  EXPECT_EQ("all-reduce", a.op);
  EXPECT_EQ(30u, a.calls);
  EXPECT_DOUBLE_EQ(16, a.channels);
  EXPECT_DOUBLE_EQ(3.0, a.gpu_s);
  // busbw: 64 MiB / 0.1 s × 2·7/8.
  EXPECT_NEAR(67108864.0 / 0.1 / 1e9 * 1.75, a.busbw_gbps, 1e-9);
  EXPECT_EQ("Tree", c.algorithms[1].algo);
  EXPECT_EQ(0, c.algorithms[1].gpu_s);  // no timestamps: no GPU time, no busbw
  EXPECT_EQ(0, c.algorithms[1].busbw_gbps);
}

TEST(Algorithms, OldInterfaceRecordsMatchByOneRanksBytes) {
  RunInfo run = run_info();
  // An all-gather of 1 MiB per rank on 4 ranks: nccl-tests' S is 4 MiB
  // (bucket 22); a v2 record does not know the size and sizes it as one
  // rank's 1 MiB (bucket 20).
  run.collectives.rows = {row(nccl::CollectiveOp::kAllGather, 22, 4, 5, 4 << 20)};
  run.profiler.rows = {record(nccl::CollectiveOp::kAllGather, 20, 0, "RING", "LL", 5, 2)};
  Summary s = with_profiler(run);
  EXPECT_EQ("Ring", s.collectives.rows.at(0).algo);
  EXPECT_EQ("LL", s.collectives.rows.at(0).proto);
  EXPECT_EQ(0, s.collectives.rows.at(0).nnodes);  // unknown
}

TEST(Algorithms, NoRecordsLeaveTheRowsUnknown) {
  RunInfo run = run_info();
  run.profiler = {};
  run.profiler_status = "stepped aside: NCCL_PROFILER_PLUGIN=/site/inspector.so";
  Summary s = with_profiler(run);
  EXPECT_EQ("", s.collectives.rows.at(0).algo);
  EXPECT_EQ(0, s.collectives.rows.at(0).channels);
  EXPECT_TRUE(s.collectives.algorithms.empty());
  std::string text = unwrapped(format_text(s));
  EXPECT_NE(std::string::npos, text.find("NCCL profiler plugin: stepped aside: NCCL_PROFILER_PLUGIN=/site/inspector.so"))
      << text;
}

TEST(Algorithms, JsonRoundTripsAndTextSaysIt) {
  Summary s = with_profiler(run_info());
  const std::string json = format_json(s);
  EXPECT_NE(std::string::npos, json.find("\"comm_hash\": \"feedbeef12345678\"")) << json;
  EXPECT_NE(std::string::npos, json.find("\"profiler\": \"on (v5)\"")) << json;
  Summary back;
  std::string error;
  ASSERT_TRUE(summary_from_json(json, &back, &error)) << error;
  EXPECT_EQ(json, format_json(back));
  ASSERT_EQ(2u, back.collectives.algorithms.size());
  EXPECT_EQ(0xfeedbeef12345678ull, back.collectives.algorithms[0].comm_hash);
  EXPECT_EQ("Ring", back.collectives.rows.at(0).algo);
  const std::string text = unwrapped(format_text(s));
  EXPECT_NE(std::string::npos, text.find("NCCL profiler plugin: on (v5); 40 collectives recorded, 2 dropped")) << text;
  EXPECT_NE(std::string::npos, text.find("NCCL chose Ring/Simple for all-reduce >=64.0 MiB (8 ranks on 2 nodes")) << text;
  EXPECT_NE(std::string::npos, text.find("Ring/Simple")) << text;
}

TEST(Algorithms, PrometheusLabelsTheChoice) {
  Summary s = with_profiler(run_info());
  const std::string p = format_prometheus(s);
  EXPECT_NE(std::string::npos, p.find("gpuslack_collective_calls_total{")) << p;
  EXPECT_NE(std::string::npos, p.find("op=\"all-reduce\",algo_proto=\"Ring/Simple\"} 40")) << p;
  EXPECT_NE(std::string::npos, p.find("gpuslack_nccl_algorithm_calls_total{")) << p;
  EXPECT_NE(std::string::npos, p.find("op=\"all-reduce\",size_bucket=\"26\",algo_proto=\"Tree/LL128\"} 10")) << p;
}

}  // namespace
}  // namespace report
}  // namespace gpuslack

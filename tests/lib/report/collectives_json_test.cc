// The summary's "collectives" as JSON and back (report/collectives_json.h):
// every member of the section set, written, read back and written again
// the same; the communicator's hash as 16 hex digits; and an older summary's
// rows without the later members read as unknown.
#include "report/collectives_json.h"

#include <gtest/gtest.h>

#include <string>

#include "report/json.h"
#include "report/summary_reader.h"
#include "sample_summary.h"

namespace gpuslack {
namespace report {
namespace {

CollectivesSection every_member_set() {
  CollectivesSection c;
  c.present = true;
  c.nccl_version = 22703;
  c.timing_every = 4;
  c.host_s = 1.25;
  c.host_share = 0.125;
  c.gpu_s_estimated = 2.5;
  c.gpu_share = 0.25;
  c.gpu_estimate_timed = 12;
  c.gpu_estimate_devices = 2;
  c.gpu_estimate_capped = true;
  c.pending = 3;
  c.dropped = 1;
  CollectiveRow r;
  r.op = "all-reduce";
  r.datatype = "float32";
  r.bucket = 26;
  r.nranks = 8;
  r.count = 40;
  r.captured = 4;
  r.timed = 10;
  r.mostly_captured = false;
  r.bytes = 1ull << 32;
  r.host_s = 0.5;
  r.gpu_s = 0.75;
  r.gpu_s_estimated = 2.5;
  r.gpu_typical_s = 0.07;
  r.gpu_p50_s = 0.07;
  r.gpu_p99_s = 0.09;
  r.algbw_gbps = 100;
  r.busbw_gbps = 175;
  r.expected_busbw_gbps = 300;
  r.expected_from = "measured: nvml";
  r.best_algo = "Tree";
  r.best_proto = "Simple";
  r.best_channels = 16;
  r.best_time_s = 0.05;
  r.chosen_time_s = 0.06;
  r.algo = "Ring";
  r.proto = "LL128";
  r.channels = 12.5;
  r.nnodes = 2;
  c.rows.push_back(r);
  c.communicators.push_back({8, 3, 1, false, true});
  c.env = {{"NCCL_ALGO", "Ring"}, {"NCCL_IB_HCA", "mlx5"}};
  c.warnings = {"all-reduce ran at 175.0 GB/s bus bandwidth, expected 300.0"};
  AlgoProtoRow a;
  a.comm_hash = 0xfeedbeef12345678ull;
  a.nranks = 8;
  a.nnodes = 2;
  a.op = "all-reduce";
  a.bucket = 26;
  a.algo = "Ring";
  a.proto = "LL128";
  a.calls = 36;
  a.channels = 12.5;
  a.gpu_s = 0.75;
  a.busbw_gbps = 175;
  c.algorithms.push_back(a);
  c.profiler = "on (v5)";
  c.profiler_records = 36;
  c.profiler_dropped = 2;
  return c;
}

Summary read_back(const std::string& json) {
  Summary back;
  std::string error;
  EXPECT_TRUE(summary_from_json(json, &back, &error)) << error;
  return back;
}

TEST(CollectivesJson, EveryMemberRoundTrips) {
  Summary s = testing_sample::sample_summary();
  s.collectives = every_member_set();
  const std::string json = format_json(s);
  const Summary back = read_back(json);
  EXPECT_EQ(json, format_json(back));
  const CollectivesSection& c = back.collectives;
  ASSERT_TRUE(c.present);
  EXPECT_EQ(22703, c.nccl_version);
  EXPECT_TRUE(c.gpu_estimate_capped);
  ASSERT_EQ(1u, c.rows.size());
  EXPECT_EQ("LL128", c.rows[0].proto);
  EXPECT_EQ(1ull << 32, c.rows[0].bytes);
  ASSERT_EQ(1u, c.communicators.size());
  EXPECT_EQ(3, c.communicators[0].rank);
  EXPECT_FALSE(c.communicators[0].alive);
  EXPECT_TRUE(c.communicators[0].aborted);
  ASSERT_EQ(2u, c.env.size());
  EXPECT_EQ("NCCL_IB_HCA", c.env[1].first);
  ASSERT_EQ(1u, c.algorithms.size());
  EXPECT_EQ(0xfeedbeef12345678ull, c.algorithms[0].comm_hash);
  EXPECT_EQ("on (v5)", c.profiler);
  EXPECT_EQ(2u, c.profiler_dropped);
  EXPECT_NE(std::string::npos, json.find("\"comm_hash\": \"feedbeef12345678\""));
}

TEST(CollectivesJson, TheHashIsSixteenHexDigits) {
  EXPECT_EQ("feedbeef12345678", comm_hash_hex(0xfeedbeef12345678ull));
  EXPECT_EQ("000000000000002a", comm_hash_hex(42));
}

// A row from before NCCL's profiler plugin and the typical time: no algo,
// proto, gpu_typical_s; no gpu_s_estimated either (scaled from the timed
// calls), and mostly_captured by the same rule as the builder's.
TEST(CollectivesJson, AnOlderRowReadsItsMissingMembersAsUnknown) {
  Summary s = testing_sample::sample_summary();
  s.collectives = every_member_set();
  std::string json = format_json(s);
  for (const char* key : {"\"algo\": \"Ring\",", "\"proto\": \"LL128\",", "\"gpu_s_estimated\": 2.5,",
                          "\"gpu_typical_s\": 0.07,", "\"mostly_captured\": false,"}) {
    const size_t at = json.find(key, json.find("\"rows\""));
    ASSERT_NE(std::string::npos, at) << key;
    json.erase(at, std::string(key).size());
  }
  const CollectiveRow row = read_back(json).collectives.rows.at(0);
  EXPECT_EQ("", row.algo);
  EXPECT_EQ("", row.proto);
  EXPECT_EQ(0, row.gpu_typical_s);
  EXPECT_DOUBLE_EQ(0.75 * 36 / 10, row.gpu_s_estimated);  // (count - captured) / timed of gpu_s
  EXPECT_FALSE(row.mostly_captured);                        // 4 of 40 captured
}

}  // namespace
}  // namespace report
}  // namespace gpuslack

// The figures issue 17 found misleading, each from build_summary (or
// build_collectives) through the text and JSON writers:
//   - no "natively ~" estimate of the staged copies (Note [No native
//     estimate] in stage/staged_copy.h);
//   - a copy rate only where host time is the transfer's (Note [Copy rates]
//     in report/summary.h);
//   - no algbw/busbw for collectives mostly captured in CUDA graphs (Note
//     [Captured collectives] in report/collectives.h);
//   - copies passed through because the capture query failed are not
//     "graph capture";
//   - no share of wall time above 100% (Note [Thread-seconds] in text_parts.h).
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "report/collectives.h"
#include "report/json.h"
#include "report/summary.h"
#include "report/summary_reader.h"
#include "report/text.h"
#include "sample_summary.h"
#include "text_lines.h"

namespace gpuslack {
namespace report {
namespace {

using testing_text::lines_of;
using testing_text::contains_line;
using testing_text::unwrapped;

using testing_sample::sample_summary;

constexpr uint64_t kSecond = 1000000000ull;
const ApiCall kMalloc{0, "cudaMalloc", Category::kAllocation};
const ApiCall kMemcpy{1, "cudaMemcpy", Category::kCopy};

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }


// Every "NNN.N%" in `text` at or above 100.05%.
std::vector<std::string> shares_above_100(const std::string& text) {
  std::vector<std::string> found;
  static const std::regex kShare("([0-9]+\\.[0-9])%");
  for (std::sregex_iterator it(text.begin(), text.end(), kShare), end; it != end; ++it)
    if (std::stod((*it)[1].str()) > 100.0) found.push_back(it->str());
  return found;
}

RunInfo run_info(double wall_s) {
  RunInfo run;
  run.reason = "exit";
  run.wall_s = wall_s;
  run.tick_seconds = 1e-9;
  return run;
}

// ---- natively ~ ----

TEST(Figures, StagedCopiesShowNoNativeEstimate) {
  Summary s = sample_summary();
  std::string text = format_text(s);
  EXPECT_TRUE(contains_line(text, "gpuslack:   staged copies blocked 40.0 ms (H2D 40.0 ms, D2H 0)")) << text;
  EXPECT_FALSE(has(text, "natively ~")) << text;
  EXPECT_FALSE(has(text, "estimate")) << text;
  std::string json = format_json(s);
  EXPECT_FALSE(has(json, "native_estimate")) << json;
  EXPECT_FALSE(has(json, "drains_")) << json;
}

// ---- copies by kind ----

TEST(Figures, CopyRatesOnlyWhereHostTimeIsTheTransfers) {
  ledger::ThreadFigures t;
  t.tid = 1;
  t.ticks[1] = 3 * kSecond;
  using ledger::CopyFigures;
  t.copies = {// synchronous H2D, pageable: 2 GB in 1 s
              CopyFigures{CopyKind::kHostToDevice, HostMemory::kPageable, false, 2, 2 * kSecond, kSecond},
              // asynchronous H2D, pinned: 4 GB enqueued in 1 ms
              CopyFigures{CopyKind::kHostToDevice, HostMemory::kPinned, true, 4, 4 * kSecond, kSecond / 1000},
              // synchronous D2D: returns at once, 179 GB in 1 ms
              CopyFigures{CopyKind::kDeviceToDevice, HostMemory::kNone, false, 1, 179 * kSecond, kSecond / 1000},
              // asynchronous D2D
              CopyFigures{CopyKind::kDeviceToDevice, HostMemory::kNone, true, 1, kSecond, kSecond / 1000},
              // memset, synchronous API
              CopyFigures{CopyKind::kMemset, HostMemory::kNone, false, 1, kSecond, kSecond / 1000}};
  Summary s = build_summary({t}, run_info(10));
  ASSERT_EQ(5u, s.copies.size());
  for (const CopyRow& r : s.copies) {
    const bool transfer = r.copy == CopyKind::kHostToDevice && !r.async_api;
    EXPECT_EQ(transfer ? 2.0 : 0.0, r.host_time_gbps) << copy_kind_name(r.copy) << " async " << r.async_api;
  }
  std::string text = format_text(s);
  EXPECT_TRUE(contains_line(text, "gpuslack:   kind    host      call   count      bytes  host time  GB/s (host time)"))
      << text;
  EXPECT_TRUE(contains_line(text, "gpuslack:   H2D     pageable  sync       2    1.9 GiB     1.00 s              2.00"))
      << text;
  EXPECT_TRUE(contains_line(text, "gpuslack:   H2D     pinned    async      4    3.7 GiB     1.0 ms                 -"))
      << text;
  EXPECT_TRUE(contains_line(text, "gpuslack:   D2D     -         sync       1  166.7 GiB     1.0 ms                 -"))
      << text;
  EXPECT_TRUE(contains_line(text, "gpuslack:   memset  -         sync       1  953.7 MiB     1.0 ms                 -"))
      << text;
  EXPECT_FALSE(has(text, "179000")) << text;  // bytes / host time of the D2D row
  std::string json = format_json(s);
  EXPECT_TRUE(has(json, "\"async_api\": true,\n      \"host_time_gbps\": 0")) << json;
  EXPECT_TRUE(has(json, "\"async_api\": false,\n      \"host_time_gbps\": 2")) << json;
  EXPECT_FALSE(has(json, "\"gbps\"")) << json;
  // Read back, the same rows.
  Summary back;
  std::string error;
  ASSERT_TRUE(summary_from_json(json, &back, &error)) << error;
  ASSERT_EQ(5u, back.copies.size());
  for (size_t i = 0; i < back.copies.size(); ++i) {
    EXPECT_EQ(s.copies[i].async_api, back.copies[i].async_api);
    EXPECT_DOUBLE_EQ(s.copies[i].host_time_gbps, back.copies[i].host_time_gbps);
  }
}

// ---- collectives in CUDA graphs ----

nccl::CollectiveFigures all_reduce(uint64_t count, uint64_t captured, double gpu_s_each) {
  nccl::CollectiveFigures f;
  f.op = nccl::CollectiveOp::kAllReduce;
  f.datatype = 7;  // float32
  f.bucket = 20;   // 1 MiB
  f.nranks = 2;
  f.count = count;
  f.captured = captured;
  f.bytes = count << 20;
  f.host_ticks = count * 1000;
  f.timed = count - captured;
  f.timed_bytes = f.timed << 20;
  f.gpu_s = f.bw_s = gpu_s_each * static_cast<double>(f.timed);  // each call timed alone
  for (uint64_t i = 0; i < f.timed; ++i) {
    f.gpu_ns.add(static_cast<uint64_t>(gpu_s_each * 1e9));
    f.gpu_ns_sums[ledger::Histogram::bucket_of(static_cast<uint64_t>(gpu_s_each * 1e9))] += gpu_s_each * 1e9;
  }
  return f;
}

Summary with_collectives(const nccl::CollectiveFigures& f) {
  RunInfo run = run_info(10);
  run.collectives.rows = {f};
  run.expected_busbw_gbps = 1000;
  Summary s;
  s.wall_s = 10;
  s.collectives = build_collectives(run, 1e-9, 10);
  return s;
}

TEST(Figures, CollectivesMostlyCapturedInGraphsShowNoBandwidth) {
  // 80 of 86 calls captured: the 6 timed ones were warm-ups, 1 MiB in 1.5 ms.
  Summary s = with_collectives(all_reduce(86, 80, 0.0015));
  ASSERT_EQ(1u, s.collectives.rows.size());
  const CollectiveRow& r = s.collectives.rows[0];
  EXPECT_TRUE(r.mostly_captured);
  EXPECT_EQ(0, r.algbw_gbps);
  EXPECT_EQ(0, r.busbw_gbps);
  EXPECT_TRUE(s.collectives.warnings.empty());  // no bandwidth, no check
  std::string text = format_text(s);
  EXPECT_TRUE(has(unwrapped(text), " all-reduce float32 >=1.0 MiB: 80 of 86 calls captured in CUDA graphs, "
                                   "not timed; no algbw/busbw"))
      << text;
  EXPECT_FALSE(has(text, "0.70")) << text;
  std::vector<std::string> lines = lines_of(text);
  bool row = false;
  for (const std::string& l : lines)
    if (has(l, "all-reduce  float32") && has(l, " 80 ")) {
      row = true;
      EXPECT_TRUE(std::regex_search(l, std::regex(" -  +-$"))) << l;  // algbw, busbw
    }
  EXPECT_TRUE(row) << text;
  std::string json = format_json(s);
  EXPECT_TRUE(has(json, "\"captured\": 80,\n        \"timed\": 6,\n        \"mostly_captured\": true,")) << json;
  EXPECT_TRUE(has(json, "\"algbw_gbps\": 0,")) << json;
}

// Near miss: 1 of 10 captured, the 9 others stand for the row.
TEST(Figures, CollectivesWithAFewCapturedCallsKeepTheirBandwidth) {
  Summary s = with_collectives(all_reduce(10, 1, 0.001));
  const CollectiveRow& r = s.collectives.rows.at(0);
  EXPECT_FALSE(r.mostly_captured);
  EXPECT_NEAR(1.048576, r.algbw_gbps, 1e-6);
  std::string text = format_text(s);
  EXPECT_TRUE(has(unwrapped(text), " all-reduce float32 >=1.0 MiB: 1 of 10 calls captured in CUDA graphs, "
                                   "not timed"))
      << text;
  EXPECT_TRUE(std::regex_search(text, std::regex(" 1\\.05 +1\\.05\n"))) << text;
  EXPECT_TRUE(has(format_json(s), "\"mostly_captured\": false,")) << format_json(s);
}

// ---- passed through: capture query failed ----

TEST(Figures, AFailedCaptureQueryHasItsOwnReason) {
  Summary s = sample_summary();
  s.staging.stats.passed_capture_unknown = 3;
  std::string text = format_text(s);
  EXPECT_TRUE(has(unwrapped(text), "capture status unknown (stream query failed) 3")) << text;
  EXPECT_FALSE(has(text, "graph capture")) << text;
  std::string json = format_json(s);
  EXPECT_TRUE(has(json, "\"capture\": 0,\n      \"capture_unknown\": 3,")) << json;
  Summary back;
  std::string error;
  ASSERT_TRUE(summary_from_json(json, &back, &error)) << error;
  EXPECT_EQ(3u, back.staging.stats.passed_capture_unknown);
  EXPECT_EQ(0u, back.staging.stats.passed_capture);
}

// ---- thread-seconds ----

// A program of 2,001 threads, each blocked 4.7 ms in cudaMalloc over a
// 2.82 s run (9.4 thread-s in all), and one worker blocked 1.161 s.
std::vector<ledger::ThreadFigures> many_threads() {
  std::vector<ledger::ThreadFigures> threads;
  for (int i = 0; i < 2000; ++i) {
    ledger::ThreadFigures t;
    t.tid = 1000 + i;
    t.ticks[0] = 4700000;
    t.ticks[3] = 2000000;  // waiting for the GPU
    ledger::CallFigures c;
    c.call = &kMalloc;
    c.count = 1;
    c.ticks = 4700000;
    c.max_ticks = 4700000;
    c.histogram.add(4700000);
    t.calls = {c};
    threads.push_back(t);
  }
  ledger::ThreadFigures worker;
  worker.tid = 7;
  worker.name = "worker";
  worker.ticks[1] = 1161000000;
  ledger::CallFigures c;
  c.call = &kMemcpy;
  c.count = 1;
  c.ticks = worker.ticks[1];
  c.max_ticks = c.ticks;
  c.histogram.add(c.ticks);
  worker.calls = {c};
  threads.push_back(worker);
  return threads;
}

TEST(Figures, NoShareOfWallTimeAboveOneHundredPercent) {
  Summary s = build_summary(many_threads(), run_info(2.82));
  ASSERT_GT(s.lost_share, 3.0);  // the JSON keeps the sum over threads
  std::string text = format_text(s);
  EXPECT_TRUE(shares_above_100(text).empty()) << shares_above_100(text).front() << "\n" << text;
  EXPECT_EQ(0u, unwrapped(text).find("gpuslack: lost 10.6 thread-s over 2,001 threads; worst thread 41.2% of 2.82 s (pid "))
      << text;
  EXPECT_TRUE(has(unwrapped(text), "): allocation 9.4 thread-s, copies 1.16 s (41.2%), collectives 0 s; "
                                        "waiting for the GPU 4 thread-s (not counted as lost)"))
      << text;
  EXPECT_TRUE(contains_line(text, "gpuslack: allocation 9.4 thread-s:")) << text;
}

// Near miss: one thread, 23.4% of wall: a share, as before.
TEST(Figures, ASingleThreadsLossIsStillAShareOfWallTime) {
  std::vector<ledger::ThreadFigures> threads = many_threads();
  threads.erase(threads.begin(), threads.end() - 1);
  Summary s = build_summary(threads, run_info(2.82));
  EXPECT_EQ(0u, format_text(s).find("gpuslack: 41.2% of 2.82 s lost (pid ")) << format_text(s);
}

}  // namespace
}  // namespace report
}  // namespace gpuslack

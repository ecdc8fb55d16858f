// summary_from_json / read_summary_file: the round trip (write, read,
// write gives the same bytes; the read-back renders the same text), and
// corrupt documents and files, which get one line and never a crash.
#include "report/summary_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "report/json.h"
#include "report/text.h"
#include "sample_summary.h"

namespace gpuslack {
namespace report {
namespace {

using testing_sample::sample_summary;

Summary empty_summary() {
  RunInfo run;
  run.reason = "exit";
  run.tick_seconds = 1e-9;
  return build_summary({}, run);
}

Summary read_back(const std::string& json) {
  Summary s;
  std::string error;
  EXPECT_TRUE(summary_from_json(json, &s, &error)) << error;
  return s;
}

// The reason summary_from_json gives for `json`, checked to be one line.
std::string refused(const std::string& json) {
  Summary s;
  std::string error;
  EXPECT_FALSE(summary_from_json(json, &s, &error)) << json;
  EXPECT_FALSE(error.empty());
  EXPECT_EQ(std::string::npos, error.find('\n')) << error;
  return error;
}

// `json` with the first `from` replaced by `to`.
std::string replaced(std::string json, const std::string& from, const std::string& to) {
  size_t at = json.find(from);
  EXPECT_NE(std::string::npos, at) << from;
  if (at != std::string::npos) json.replace(at, from.size(), to);
  return json;
}

TEST(SummaryReader, SampleRoundTripsByteForByteAndRendersTheSameText) {
  const Summary original = sample_summary();
  const std::string json = format_json(original);
  const Summary back = read_back(json);
  EXPECT_EQ(json, format_json(back));
  EXPECT_EQ(format_text(original), format_text(back));
}

TEST(SummaryReader, EmptySummaryRoundTrips) {
  const Summary original = empty_summary();
  const std::string json = format_json(original);
  const Summary back = read_back(json);
  EXPECT_EQ(json, format_json(back));
  EXPECT_EQ(format_text(original), format_text(back));
  EXPECT_TRUE(back.threads.empty());
  EXPECT_FALSE(back.collectives.present || back.staging.present || back.pinned.present);
}

TEST(SummaryReader, FiguresBeyondTheWrittenDigitsSettleAfterOneRoundTrip) {
  Summary s = sample_summary();
  s.wall_s = 12.345678912345;
  s.lost_share = 0.2345678912345;
  s.calls[0].total_s = 1.0 / 3;
  s.staging.stats.h2d.blocked_ns = 12345678901234;  // more digits than 9
  s.pinned.stats.cap = ~0ull;                        // written as -1
  s.collectives.present = true;
  s.collectives.env = {{"NCCL_\"ODD\"", "1"}};  // a name that needs escaping
  s.allocator.push_back(AllocatorRow{});
  s.allocator[0].timeline.t_s = {0.1, 1.0 / 7};
  s.allocator[0].timeline.allocated = {1, 2};
  s.allocator[0].timeline.reserved = {3, 4};
  const std::string once = format_json(read_back(format_json(s)));
  EXPECT_EQ(once, format_json(read_back(once)));
  EXPECT_EQ(~0ull, read_back(once).pinned.stats.cap);
  EXPECT_EQ("NCCL_\"ODD\"", read_back(once).collectives.env.at(0).first);
}

// Issue 28: the allocator's status (selected, off where and why), the calls
// that may synchronize the device, what the driver refused at creation.
TEST(SummaryReader, AllocatorStatusAndDriverCallsRoundTrip) {
  Summary s = sample_summary();
  s.allocator_status.selected = "vmm";
  s.allocator_status.off.push_back({1, "the driver does not support virtual memory management on this device"});
  AllocatorRow row;
  row.device = 0;
  row.stats.unmap_calls = 12;
  row.stats.set_access_calls = 34;
  row.stats.created_without = kCreatedWithoutPosixFd | kCreatedWithoutRdma;
  s.allocator.push_back(row);
  const std::string json = format_json(s);
  EXPECT_NE(std::string::npos, json.find("\"created_without\": [\n        \"posix_fd_handle\",\n        \"gpu_direct_rdma\"\n      ]")) << json;
  const Summary back = read_back(json);
  EXPECT_EQ(json, format_json(back));
  EXPECT_EQ("vmm", back.allocator_status.selected);
  ASSERT_EQ(1u, back.allocator_status.off.size());
  EXPECT_EQ(1, back.allocator_status.off[0].device);
  EXPECT_EQ(12u, back.allocator.at(0).stats.unmap_calls);
  EXPECT_EQ(34u, back.allocator.at(0).stats.set_access_calls);
  EXPECT_EQ(alloc::kCreatedWithoutPosixFd | alloc::kCreatedWithoutRdma, back.allocator.at(0).stats.created_without);
  std::string text = format_text(back);
  for (size_t at; (at = text.find("\ngpuslack:  ")) != std::string::npos;) {  // continuation lines joined back
    size_t end = at + 11;
    while (end < text.size() && text[end] == ' ') ++end;
    text.replace(at, end - at, " ");
  }
  EXPECT_NE(std::string::npos, text.find("vmm allocator, device 1: off (the driver does not support")) << text;
  EXPECT_NE(std::string::npos, text.find("calls that may synchronize the device: 12 cuMemUnmap, 34 cuMemSetAccess"))
      << text;
  EXPECT_NE(std::string::npos, text.find("without the GPUDirect RDMA flag")) << text;
  // What the reader refuses, in one line.
  std::string bad = json;
  bad.replace(bad.find("\"selected\": \"vmm\""), 17, "\"selected\": \"odd\"");
  EXPECT_NE(std::string::npos, refused(bad).find("allocator_status.selected: expected native or vmm")) << refused(bad);
}

TEST(SummaryReader, CollectiveExpectationsRoundTrip) {
  Summary s = sample_summary();
  s.collectives.present = true;
  CollectiveRow r;
  r.op = "all-reduce";
  r.nranks = 8;
  r.expected_busbw_gbps = 40.125;
  r.expected_from = "between nodes: measured: sysfs \"mlx5_0\"";
  r.best_algo = "Tree";
  r.best_proto = "Simple";
  r.best_channels = 4;
  r.best_time_s = 0.004112934;
  r.chosen_time_s = 0.011852123;
  s.collectives.rows.push_back(r);
  const CollectiveRow back = read_back(format_json(s)).collectives.rows.at(0);
  EXPECT_EQ(r.expected_busbw_gbps, back.expected_busbw_gbps);
  EXPECT_EQ(r.expected_from, back.expected_from);
  EXPECT_EQ("Tree", back.best_algo);
  EXPECT_EQ("Simple", back.best_proto);
  EXPECT_EQ(4, back.best_channels);
  EXPECT_DOUBLE_EQ(r.best_time_s, back.best_time_s);
  EXPECT_DOUBLE_EQ(r.chosen_time_s, back.chosen_time_s);
}

TEST(SummaryReader, OlderDocumentsMayLackTheMembersAddedSince) {
  Summary s = read_back(R"({"schema_version": 1, "pid": 7, "wall_s": 2, "lost_share": 0.5,
                            "categories": {"allocation": {"seconds": 1, "share": 0.5}},
                            "threads": [], "calls": [], "copies": [], "call_sites": [], "future": [1]})");
  EXPECT_EQ(7, s.pid);
  EXPECT_EQ(-1, s.rank);
  EXPECT_EQ(1, s.categories[0].seconds);
  EXPECT_EQ(0, format_text(s).find("gpuslack: 50.0% of 2 s lost (pid 7): allocation 1 s (50.0%)"));
}

TEST(SummaryReader, SaysWhatIsWrongInOneLine) {
  const std::string json = format_json(sample_summary());
  EXPECT_EQ(0u, refused("{\"schema_version\": 1,").find("is not a JSON document: line 1, column 22: "));
  EXPECT_EQ("is not a gpuslack summary: not a JSON object", refused("[1, 2]"));
  EXPECT_EQ("is not a gpuslack summary: no pid, wall_s, lost_share, categories, threads, calls, copies, call_sites",
            refused("{\"schema_version\": 1}"));
  EXPECT_EQ("has schema_version 2; this gpuslack reads version 1",
            refused(replaced(json, "\"schema_version\": 1", "\"schema_version\": 2")));
  EXPECT_EQ("has schema_version \"1\"; this gpuslack reads version 1",
            refused(replaced(json, "\"schema_version\": 1", "\"schema_version\": \"1\"")));
  EXPECT_EQ("is not a valid gpuslack summary: pid: expected an integer in [-2^63, 2^63)",
            refused(replaced(json, "\"pid\": 123", "\"pid\": \"123\"")));
  EXPECT_EQ("is not a valid gpuslack summary: pid: expected an integer that fits an int",
            refused(replaced(json, "\"pid\": 123", "\"pid\": 12345678901")));
  EXPECT_EQ("is not a valid gpuslack summary: calls[1].count: expected an integer in [0, 2^64)",
            refused(replaced(json, "\"count\": 120", "\"count\": 1e999")));
  EXPECT_EQ("is not a valid gpuslack summary: calls[1].count: expected an integer in [0, 2^64)",
            refused(replaced(json, "\"count\": 120", "\"count\": 99999999999999999999")));
  EXPECT_EQ("is not a valid gpuslack summary: wall_s: expected a finite number",
            refused(replaced(json, "\"wall_s\": 12.5", "\"wall_s\": 1e400")));
  EXPECT_EQ("is not a valid gpuslack summary: calls[0].category: expected a category (allocation, copy, "
            "collective, sync, other)",
            refused(replaced(json, "\"category\": \"sync\"", "\"category\": \"nap\"")));
  EXPECT_EQ("is not a valid gpuslack summary: threads[0]: expected an object",
            refused(replaced(json, "\"threads\": [", "\"threads\": [1, ")));
  EXPECT_EQ("is not a valid gpuslack summary: staging.h2d.blocked_s: expected seconds in [0, 2^64 ns)",
            refused(replaced(json, "\"blocked_s\": 0.04", "\"blocked_s\": 1e11")));
  EXPECT_EQ("is not a valid gpuslack summary: collectives: expected an object or null",
            refused(replaced(json, "\"collectives\": null", "\"collectives\": []")));
  EXPECT_EQ("is not a JSON document: line 1, column 65: nested deeper than 64 levels",
            refused(std::string(100000, '[')));
}

TEST(SummaryReader, EveryTruncationIsRefused) {
  const std::string json = format_json(sample_summary());
  for (size_t n = 0; n + 1 < json.size(); ++n) {  // the last byte is a newline: the document is whole without it
    Summary s;
    std::string error;
    ASSERT_FALSE(summary_from_json(json.substr(0, n), &s, &error)) << n;
    ASSERT_EQ(0u, error.find("is not a JSON document: ")) << n << ": " << error;
  }
}

// Random mutations of the sample (bytes flipped, cut, repeated, JSON
// punctuation dropped in), a fixed seed, bounded time: each is read back or
// refused in one line; one read back writes a document that reads back to
// itself and renders.
TEST(SummaryReader, MutatedDocumentsAreReadOrRefusedNeverACrash) {
  const std::string json = format_json(sample_summary());
  std::mt19937 random(12);
  const std::string alphabet = "{}[]\":,-.0123456789eEtrufalsn \\u\n\x01\xff";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  int read = 0, refused_count = 0;
  for (int round = 0; round < 3000 && std::chrono::steady_clock::now() < deadline; ++round) {
    std::string doc = json;
    const int edits = 1 + static_cast<int>(random() % 4);
    for (int e = 0; e < edits && !doc.empty(); ++e) {
      size_t at = random() % doc.size();
      size_t len = 1 + random() % 16;
      switch (random() % 4) {
        case 0: doc[at] = alphabet[random() % alphabet.size()]; break;
        case 1: doc.erase(at, len); break;
        case 2: doc.insert(at, doc.substr(at, len)); break;
        default: doc.insert(at, 1, alphabet[random() % alphabet.size()]); break;
      }
    }
    Summary s;
    std::string error;
    if (summary_from_json(doc, &s, &error)) {
      ++read;
      const std::string again = format_json(s);
      Summary s2;
      ASSERT_TRUE(summary_from_json(again, &s2, &error)) << error << "\n" << doc;
      ASSERT_EQ(again, format_json(s2)) << doc;
      ASSERT_EQ(0u, format_text(s2).find("gpuslack: "));
    } else {
      ++refused_count;
      ASSERT_FALSE(error.empty());
      ASSERT_EQ(std::string::npos, error.find('\n')) << error;
    }
  }
  EXPECT_GT(read, 0);
  EXPECT_GT(refused_count, 0);
}

class SummaryFile : public ::testing::Test {
 protected:
  void SetUp() override { path_ = ::testing::TempDir() + "gpuslack_summary_reader_" + std::to_string(getpid()) + ".json"; }
  void TearDown() override { unlink(path_.c_str()); }
  void write(const std::string& contents) { std::ofstream(path_, std::ios::binary) << contents; }
  std::string path_;
};

TEST_F(SummaryFile, ReadsAFileTheWriterWrote) {
  write(format_json(sample_summary()));
  Summary s;
  std::string error;
  ASSERT_TRUE(read_summary_file(path_, &s, &error)) << error;
  EXPECT_EQ(format_text(sample_summary()), format_text(s));
}

TEST_F(SummaryFile, NamesTheFileInItsOneLine) {
  Summary s;
  std::string error;
  EXPECT_FALSE(read_summary_file(path_ + ".missing", &s, &error));
  EXPECT_EQ("cannot read " + path_ + ".missing: No such file or directory", error);
  write("\xff\xfe");
  EXPECT_FALSE(read_summary_file(path_, &s, &error));
  EXPECT_EQ(path_ + " is not a JSON document: line 1, column 1: expected a JSON value, found byte 0xff", error);
  EXPECT_FALSE(read_summary_file("/tmp/odd\nname.json", &s, &error));
  EXPECT_EQ("cannot read /tmp/odd?name.json: No such file or directory", error);
}

}  // namespace
}  // namespace report
}  // namespace gpuslack

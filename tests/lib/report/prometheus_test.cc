// Metrics in the textfile collector's format: every family has one HELP and
// one TYPE line before its samples, every sample carries the job's labels,
// counters end in _total, values are the summary's, label values escaped.
// (The real node_exporter and promtool read the file in
// tests/interpose/prometheus_test.py.)
#include "report/prometheus.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sample_summary.h"
#include "text_lines.h"

namespace gpuslack {
namespace report {
namespace {

using testing_text::lines_of;

using testing_sample::sample_summary;
using testing_sample::sample_summary_with_gpu_timeline;

// The sample lines, keyed by "name{labels}".
std::map<std::string, std::string> samples_of(const std::string& text) {
  std::map<std::string, std::string> out;
  for (const std::string& line : lines_of(text)) {
    if (line.empty() || line[0] == '#') continue;
    size_t space = line.rfind(' ');
    out[line.substr(0, space)] = line.substr(space + 1);
  }
  return out;
}

Summary full_summary() {
  Summary s = sample_summary_with_gpu_timeline();
  s.job.id = "12345";
  s.job.restart = 1;
  s.collectives.present = true;
  CollectiveRow a;
  a.op = "all-reduce";
  a.count = 100;
  a.timed = 10;
  a.bytes = 1000;
  a.host_s = 0.5;
  a.gpu_s = 1.0;
  a.busbw_gbps = 100;
  CollectiveRow b = a;
  b.gpu_s = 3.0;
  b.busbw_gbps = 200;
  CollectiveRow c = a;
  c.op = "all-gather";
  c.timed = 0;
  c.gpu_s = 0;
  c.busbw_gbps = 0;
  s.collectives.rows = {a, b, c};
  AllocatorRow row;
  row.device = 1;
  row.stats.allocated = 5ull << 30;
  row.stats.reserved = 6ull << 30;
  row.stats.peak_allocated = 7ull << 30;
  row.stats.peak_reserved = 8ull << 30;
  s.allocator = {row};
  return s;
}

const char* kLabels = "job_id=\"12345\",rank=\"0\",local_rank=\"0\",restart=\"1\",host=\"node01\"";

std::string key(const std::string& name, const std::string& extra = "") {
  return name + "{" + kLabels + (extra.empty() ? "" : "," + extra) + "}";
}

TEST(Prometheus, EveryFamilyHasHelpAndTypeOnceBeforeItsSamples) {
  std::string text = format_prometheus(full_summary());
  std::set<std::string> helped, typed;
  std::string current;
  for (const std::string& line : lines_of(text)) {
    ASSERT_FALSE(line.empty());
    if (line.rfind("# HELP ", 0) == 0) {
      std::string name = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_TRUE(helped.insert(name).second) << name;
      current = name;
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      std::string name = line.substr(7, line.find(' ', 7) - 7);
      std::string type = line.substr(line.rfind(' ') + 1);
      EXPECT_EQ(current, name);
      EXPECT_TRUE(typed.insert(name).second) << name;
      EXPECT_TRUE(type == "counter" || type == "gauge") << line;
      bool total = name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0;
      EXPECT_EQ(type == "counter", total) << name;
      continue;
    }
    EXPECT_EQ(0u, line.find(current + "{" + kLabels)) << line;
  }
  EXPECT_EQ(helped, typed);
  EXPECT_GE(helped.size(), 20u);
  EXPECT_EQ('\n', text.back());
}

TEST(Prometheus, ValuesAreTheSummarys) {
  Summary s = full_summary();
  std::map<std::string, std::string> m = samples_of(format_prometheus(s));
  EXPECT_EQ("12.5", m[key("gpuslack_wall_seconds_total")]);
  EXPECT_EQ("2.925", m[key("gpuslack_lost_seconds_total")]);
  EXPECT_EQ("2.1", m[key("gpuslack_blocked_seconds_total", "category=\"allocation\"")]);
  EXPECT_EQ("0.825", m[key("gpuslack_blocked_seconds_total", "category=\"copy\"")]);
  EXPECT_EQ("0", m[key("gpuslack_blocked_seconds_total", "category=\"collective\"")]);
  EXPECT_EQ("3.2", m[key("gpuslack_blocked_seconds_total", "category=\"sync\"")]);
  EXPECT_EQ("1", m[key("gpuslack_gpu_timeline_measured")]);
  const GpuDeviceRow& d0 = s.gpu_timeline.devices.at(0);
  std::ostringstream idle;
  idle << d0.idle_by[static_cast<int>(timeline::Idle::kHostBound)];
  EXPECT_EQ(idle.str(), m[key("gpuslack_gpu_idle_seconds_total", "device=\"0\",cause=\"host_bound\"")]);
  EXPECT_EQ(1u, m.count(key("gpuslack_gpu_busy_seconds_total", "device=\"1\",kind=\"compute\"")));
  EXPECT_EQ(1u, m.count(key("gpuslack_gpu_wall_seconds_total", "device=\"1\"")));
  EXPECT_EQ("200", m[key("gpuslack_collective_calls_total", "op=\"all-reduce\",algo_proto=\"unknown\"")]);
  EXPECT_EQ("2000", m[key("gpuslack_collective_bytes_total", "op=\"all-reduce\",algo_proto=\"unknown\"")]);
  EXPECT_EQ("1", m[key("gpuslack_collective_host_seconds_total", "op=\"all-reduce\",algo_proto=\"unknown\"")]);
  EXPECT_EQ("4", m[key("gpuslack_collective_gpu_seconds_total", "op=\"all-reduce\",algo_proto=\"unknown\"")]);
  EXPECT_EQ("20", m[key("gpuslack_collective_timed_calls_total", "op=\"all-reduce\",algo_proto=\"unknown\"")]);
  // Weighted by GPU time: (100 × 1 + 200 × 3) / 4 GB/s.
  EXPECT_EQ("1.75e+11", m[key("gpuslack_collective_busbw_bytes_per_second", "op=\"all-reduce\",algo_proto=\"unknown\"")]);
  EXPECT_EQ("0", m[key("gpuslack_collective_busbw_bytes_per_second", "op=\"all-gather\",algo_proto=\"unknown\"")]);
  EXPECT_EQ(std::to_string(5ull << 30), m[key("gpuslack_allocator_allocated_bytes", "device=\"1\"")]);
  EXPECT_EQ(std::to_string(6ull << 30), m[key("gpuslack_allocator_reserved_bytes", "device=\"1\"")]);
  EXPECT_EQ(std::to_string(8ull << 30), m[key("gpuslack_allocator_peak_reserved_bytes", "device=\"1\"")]);
  EXPECT_EQ(std::to_string(64ull << 20), m[key("gpuslack_pinned_heap_pinned_bytes")]);
  EXPECT_EQ(std::to_string(3ull << 20), m[key("gpuslack_pinned_heap_live_bytes")]);
  EXPECT_EQ("30", m[key("gpuslack_pageable_copies_total", "direction=\"h2d\"")]);
  EXPECT_EQ("28", m[key("gpuslack_staged_copies_total", "direction=\"h2d\"")]);
  EXPECT_EQ(std::to_string((2ull << 30) - (2u << 20)), m[key("gpuslack_staged_bytes_total", "direction=\"h2d\"")]);
  EXPECT_EQ("0", m[key("gpuslack_staged_copies_total", "direction=\"d2h\"")]);
}

// The top kernels' launches: a series per device and kernel whose device
// limits are known (the sample's gemm), none for the others.
TEST(Prometheus, TopKernelsWaves) {
  Summary s = testing_sample::sample_summary_with_gpu_timeline();
  std::map<std::string, std::string> m = samples_of(format_prometheus(s));
  // The one sample of `name` for the gemm on device 0 (whatever the job's labels).
  const auto gemm = [&](const std::string& name) {
    std::string value;
    int n = 0;
    for (const auto& [k, v] : m) {
      if (k.rfind(name + "{", 0) == 0 &&
          k.find(",device=\"0\",kernel=\"gemm_kernel<float, 128>(float const*, float*)\"}") != std::string::npos) {
        value = v;
        ++n;
      }
    }
    EXPECT_EQ(1, n) << name;
    return value;
  };
  EXPECT_EQ("264", gemm("gpuslack_kernel_blocks"));
  EXPECT_EQ("1", gemm("gpuslack_kernel_blocks_per_sm"));
  EXPECT_EQ("2", gemm("gpuslack_kernel_waves"));
  EXPECT_EQ("0.613636", gemm("gpuslack_kernel_wave_efficiency"));
  for (const auto& [k, v] : m) EXPECT_EQ(std::string::npos, k.find("quoted")) << k;
}

TEST(Prometheus, SectionsNotMeasuredWriteNoSamples) {
  Summary s;
  s.host = "h";
  std::string text = format_prometheus(s);
  std::map<std::string, std::string> m = samples_of(text);
  const std::string labels = "{job_id=\"\",rank=\"\",local_rank=\"\",restart=\"0\",host=\"h\"}";
  EXPECT_EQ("0", m["gpuslack_wall_seconds_total" + labels]);
  EXPECT_EQ("0", m["gpuslack_gpu_timeline_measured" + labels]);
  EXPECT_EQ(std::string::npos, text.find("gpuslack_gpu_idle"));
  EXPECT_EQ(std::string::npos, text.find("gpuslack_collective"));
  EXPECT_EQ(std::string::npos, text.find("gpuslack_allocator"));
  EXPECT_EQ(std::string::npos, text.find("gpuslack_pinned"));
  EXPECT_EQ(std::string::npos, text.find("gpuslack_staged"));
}

// Issue 28, point 5: allocator:vmm selected says on how many devices it is
// off (0: none), and each such device why; the native allocator says nothing.
TEST(Prometheus, AllocatorOffSaysWhereAndWhy) {
  Summary s = full_summary();
  s.allocator_status.selected = "vmm";
  std::map<std::string, std::string> m = samples_of(format_prometheus(s));
  EXPECT_EQ("0", m[key("gpuslack_allocator_vmm_devices_off")]);
  for (const auto& [k, v] : m) EXPECT_EQ(std::string::npos, k.find("gpuslack_allocator_vmm_off_info")) << k;
  s.allocator_status.off = {{0, "the driver does not support virtual memory management on this device"},
                            {2, "its \"reservation\" failed"}};
  std::string text = format_prometheus(s);
  m = samples_of(text);
  EXPECT_EQ("2", m[key("gpuslack_allocator_vmm_devices_off")]);
  EXPECT_EQ("1", m[key("gpuslack_allocator_vmm_off_info",
                       "device=\"0\",reason=\"the driver does not support virtual memory management on this device\"")]);
  EXPECT_EQ("1", m[key("gpuslack_allocator_vmm_off_info", "device=\"2\",reason=\"its \\\"reservation\\\" failed\"")]);
  EXPECT_NE(std::string::npos, text.find("# TYPE gpuslack_allocator_vmm_off_info gauge\n"));
  s.allocator_status = AllocatorStatus();  // native
  EXPECT_EQ(std::string::npos, format_prometheus(s).find("gpuslack_allocator_vmm"));
}

TEST(Prometheus, LabelValuesAreEscaped) {
  Summary s;
  s.host = "h\"\\\n\xff";
  s.job.id = "a\"b";
  std::string text = format_prometheus(s);
  EXPECT_NE(std::string::npos, text.find("job_id=\"a\\\"b\""));
  EXPECT_NE(std::string::npos, text.find("host=\"h\\\"\\\\__\""));
}

TEST(Prometheus, APidLabelOnlyWhenAsked) {
  Summary s = full_summary();
  EXPECT_EQ(std::string::npos, format_prometheus(s).find("pid="));
  std::string text = format_prometheus(s, true);
  EXPECT_NE(std::string::npos, text.find(std::string(kLabels) + ",pid=\"123\""));
}

}  // namespace
}  // namespace report
}  // namespace gpuslack

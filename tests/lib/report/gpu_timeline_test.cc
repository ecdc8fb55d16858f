// The GPU timeline section of the summary: the headline it puts first, its
// details, its JSON round trip, and what a summary says when the timeline
// did not measure.
#include "report/gpu_timeline.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "report/json.h"
#include "report/summary_reader.h"
#include "report/text.h"
#include "report/wrap.h"
#include "sample_summary.h"
#include "text_lines.h"

namespace gpuslack {
namespace report {
namespace {

using testing_text::lines_of;

using testing_sample::sample_summary;
using testing_sample::sample_summary_with_gpu_timeline;

TEST(GpuTimelineText, TheFirstLinesAreEachDevicesIdleShareAndItsCauses) {
  // Each device's line, wrapped at 80 columns (wrap.h), then the host's headline.
  const std::string text = format_text(sample_summary_with_gpu_timeline());
  const std::string first =
      wrap_line("gpuslack: ",
                "device 0: GPU idle 31.0% of 412 s: host-bound 22.0% (no CUDA call in flight), allocation 6.0% "
                "(cudaFree at train_step), copies 3.0% (cudaMemcpy); busy 69.0%: compute 55.0%, communication "
                "11.0%, copies 3.0%") +
      wrap_line("gpuslack: ",
                "device 1: GPU idle 100.0% of 412 s: host-bound 100.0% (no CUDA call in flight); busy 0.0%");
  EXPECT_EQ(0u, text.find(first + "gpuslack: 23.4% of 12.5 s lost (pid 123, rank 0): ")) << text;
  EXPECT_EQ(0u, text.find("gpuslack: device 0: GPU idle 31.0% of 412 s: host-bound 22.0% (no CUDA call in\n"))
      << text;
}

TEST(GpuTimelineText, DetailsListKernelsIdleSitesStepsAndDrops) {
  const std::string text = format_text(sample_summary_with_gpu_timeline());
  EXPECT_NE(std::string::npos,
            text.find(wrap_line("gpuslack: ",
                                "GPU timeline, device 0: busy 284.28 s, idle 127.72 s of 412.00 s; 250000 kernels "
                                "(200000 launches through the launch API), 0.9% of busy time in kernels under 10 us")))
      << text;
  EXPECT_NE(std::string::npos, text.find("gpuslack:   idle 24.00 s while blocked in cudaFree (allocation)\n"
                                         "gpuslack:       at train_step+0x1a (train.so)\n"))
      << text;
  EXPECT_NE(std::string::npos, text.find("gemm_kernel<float, 128>(float const*, float*)   1000  200.00 s  200.0 ms"))
      << text;
  EXPECT_NE(std::string::npos,
            text.find("gpuslack:   steps: 400, busy p50 70.0%, p99 40.0%, wall p50 1.00 s, p99 1.50 s\n"
                      "gpuslack:     step 17: idle 960.0 ms of 1.60 s\n"))
      << text;
  EXPECT_NE(std::string::npos,
            text.find(wrap_line("gpuslack: ",
                                "GPU timeline: measured for the first 400.00 s only: CUPTI (unnamed subscriber) then "
                                "took CUPTI")))
      << text;
  EXPECT_NE(std::string::npos,
            text.find(wrap_line("gpuslack: ", "  dropped: 2 activity buffers refused (pool 64.0 MiB), 10 records by "
                                              "CUPTI, 1 host intervals")))
      << text;
}

// The top kernels' launch shapes: ranges over a name's shapes, "-" where
// the device's limits are unknown.
TEST(GpuTimelineText, TopKernelsShowBlocksWavesAndWaveEfficiency) {
  const std::string text = format_text(sample_summary_with_gpu_timeline());
  EXPECT_NE(std::string::npos,
            text.find("gpuslack:   kernel                                         count     total      mean  blocks  "
                      "blocks/SM      waves  wave eff.\n"
                      "gpuslack:   gemm_kernel<float, 128>(float const*, float*)   1000  200.00 s  200.0 ms  64-264  "
                      "        1  0.48-2.00      61.4%\n"
                      "gpuslack:   \"quoted\" kernel                                    3    3.0 ms    1.0 ms       1  "
                      "        -          -          -\n"))
      << text;
}

TEST(GpuTimelineText, NotMeasuredSaysWhyAfterTheHostHeadline) {
  Summary s = sample_summary();
  s.gpu_timeline.status = timeline::Status::kHeldByOther;
  s.gpu_timeline.detail = "CUPTI for Nsight Systems";
  std::vector<std::string> lines = lines_of(format_text(s));
  EXPECT_EQ(0u, lines.at(0).find("gpuslack: 23.4% of 12.5 s lost")) << lines[0];
  // After the headline (three lines at 80 columns) and its context line (two).
  EXPECT_EQ("gpuslack: GPU timeline: not measured: CUPTI for Nsight Systems holds CUPTI", lines.at(5));

  s.gpu_timeline.status = timeline::Status::kOff;
  s.gpu_timeline.how_to_enable = "gpu_timeline:on takes CUPTI's only subscription";
  EXPECT_EQ("gpuslack: GPU timeline: not measured; gpu_timeline:on takes CUPTI's only", lines_of(format_text(s)).at(5));
  EXPECT_EQ("gpuslack:   subscription", lines_of(format_text(s)).at(6));

  // Nothing to say: no line.
  EXPECT_EQ(lines_of(format_text(sample_summary())).size(),
            lines_of(format_text(sample_summary())).size());
  Summary quiet = sample_summary();
  quiet.gpu_timeline.status = timeline::Status::kOff;
  EXPECT_EQ(format_text(sample_summary()), format_text(quiet));
}

TEST(GpuTimelineJson, RoundTripsByteForByteAndRendersTheSameText) {
  const Summary original = sample_summary_with_gpu_timeline();
  const std::string json = format_json(original);
  EXPECT_NE(std::string::npos, json.find("\"status\": \"measured\"")) << json;
  EXPECT_NE(std::string::npos, json.find("\"host_bound\": 90.64")) << json;
  Summary back;
  std::string error;
  ASSERT_TRUE(summary_from_json(json, &back, &error)) << error;
  EXPECT_EQ(json, format_json(back));
  EXPECT_EQ(format_text(original), format_text(back));
}

TEST(GpuTimelineJson, AnUnknownStatusIsRefusedInOneLine) {
  std::string json = format_json(sample_summary_with_gpu_timeline());
  const std::string from = "\"status\": \"measured\"";
  json.replace(json.find(from), from.size(), "\"status\": \"sometimes\"");
  Summary back;
  std::string error;
  EXPECT_FALSE(summary_from_json(json, &back, &error));
  EXPECT_NE(std::string::npos, error.find("gpu_timeline.status: expected one of off, not_started, measured")) << error;
  EXPECT_EQ(std::string::npos, error.find('\n'));
}

TEST(GpuTimelineSection, BuiltFromTheSnapshotWithSitesKeptAndCausesByCategory) {
  static constexpr ApiCall kFree{1, "cudaFree", Category::kAllocation};
  static constexpr ApiCall kSync{2, "cudaStreamSynchronize", Category::kSync};
  timeline::Snapshot snap;
  snap.status = timeline::Status::kMeasured;
  timeline::DeviceTimeline d;
  d.device = 3;
  d.wall_s = 2;
  d.busy_s = 1;
  d.idle_s = 1;
  d.idle_by[static_cast<int>(timeline::Idle::kAllocation)] = 0.6;
  d.idle_sites = {timeline::IdleSite{&kFree, {}, 0.6}, timeline::IdleSite{&kSync, {}, 0.3},
                  timeline::IdleSite{nullptr, {}, 0.1}};
  snap.devices.push_back(d);
  GpuTimelineSection g = build_gpu_timeline(snap, 1);
  ASSERT_EQ(1u, g.devices.size());
  EXPECT_EQ(3, g.devices[0].device);
  ASSERT_EQ(1u, g.devices[0].idle_sites.size());
  EXPECT_EQ("allocation", g.devices[0].idle_sites[0].cause);
  EXPECT_EQ("cudaFree", g.devices[0].idle_sites[0].api);
  EXPECT_EQ(timeline::Idle::kSync, idle_cause_of(Category::kSync));
  EXPECT_EQ(2u, build_gpu_timeline(snap, 5).devices[0].idle_sites.size());  // the null call is skipped
}

}  // namespace
}  // namespace report
}  // namespace gpuslack

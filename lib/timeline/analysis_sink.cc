// make_device_analysis (sink.h): the Sink the CUPTI reader feeds, over the
// TimelineAnalysis (timeline_analysis.h). The reader serializes every call
// (sink.h), which is the analysis's one-owner rule.
#include <memory>

#include "base/clock.h"
#include "base/time_buckets.h"
#include "ledger/host_activity.h"
#include "timeline/sink.h"
#include "timeline/timeline_analysis.h"

namespace gpuslack {
namespace timeline {
namespace {

constexpr double kShortKernelSeconds = 10e-6;  // timeline.h: "kernels shorter than 10 us"

class AnalysisSink : public Sink {
 public:
  explicit AnalysisSink(const SinkOptions& o) : tick_seconds_(o.tick_seconds), analysis_(analysis_options(o)) {}

  void add(const GpuActivity& a) override { analysis_.add(a); }
  void add(const ledger::HostInterval& h) override { analysis_.add(h); }
  void add_step(uint64_t ticks) override { analysis_.add_step(ticks); }
  void commit(uint64_t watermark) override { analysis_.commit(watermark); }
  void commit_final(uint64_t watermark) override { analysis_.commit(watermark, /*final=*/true); }
  void fill(uint64_t, uint64_t end_ticks, std::vector<DeviceTimeline>* out) override {
    analysis_.set_launches(ledger::launches());
    analysis_.add_interval_boundary(end_ticks);
    analysis_.fill(end_ticks, tick_seconds_, &ledger::call_site_frames, out);
  }

 private:
  static AnalysisOptions analysis_options(const SinkOptions& o) {
    AnalysisOptions a;
    // The window opens now: the session subscribes and enables right after
    // making its sink, and no record can precede that.
    a.start_ticks = clock::ticks();
    a.launch_bound_gap_ticks = o.launch_bound_gap_ticks;
    a.device_limits = o.device_limits;
    a.series_origin_ticks = series_origin_ticks();
    a.tick_seconds = o.tick_seconds;
    a.short_kernel_ticks = o.tick_seconds > 0 ? static_cast<uint64_t>(kShortKernelSeconds / o.tick_seconds) : 0;
    return a;
  }

  double tick_seconds_;
  TimelineAnalysis analysis_;
};

}  // namespace

std::unique_ptr<Sink> make_device_analysis(const SinkOptions& options) {
  return std::make_unique<AnalysisSink>(options);
}

}  // namespace timeline
}  // namespace gpuslack

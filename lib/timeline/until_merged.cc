// PLACEHOLDERS, so that this branch builds and links alone: delete this file
// when the parts written in parallel land (issue 15):
//   - make_device_analysis: the device analysis (timeline/device_analysis.*);
//     here a sink that only counts what it gets;
//   - the consumer side of ledger/host_activity.h (lib/ledger): here no
//     interval, no step, no launch.
#include <algorithm>

#include "ledger/host_activity.h"
#include "timeline/sink.h"

namespace gpuslack {
namespace timeline {
namespace {

class CountingSink : public Sink {
 public:
  void add(const GpuActivity& a) override {
    if (devices_.size() <= static_cast<size_t>(std::max(a.device, 0))) devices_.resize(a.device + 1);
    devices_[a.device].busy_by[static_cast<int>(a.kind)] += static_cast<double>(a.end_ticks - a.start_ticks);
  }
  void add(const ledger::HostInterval&) override {}
  void add_step(uint64_t) override {}
  void commit(uint64_t) override {}
  void fill(uint64_t start_ticks, uint64_t end_ticks, std::vector<DeviceTimeline>* out) override {
    for (size_t d = 0; d < devices_.size(); ++d) {
      DeviceTimeline t;
      t.device = static_cast<int>(d);
      t.wall_s = static_cast<double>(end_ticks - start_ticks) * options_.tick_seconds;
      for (int k = 0; k < kBusyCount; ++k) {
        t.busy_by[k] = devices_[d].busy_by[k] * options_.tick_seconds;  // overlaps counted twice here
        t.busy_s += t.busy_by[k];
      }
      t.idle_s = t.wall_s > t.busy_s ? t.wall_s - t.busy_s : 0;
      t.idle_by[0] = t.idle_s;
      out->push_back(t);
    }
  }
  SinkOptions options_;

 private:
  struct Totals {
    double busy_by[kBusyCount] = {};
  };
  std::vector<Totals> devices_;
};

}  // namespace

std::unique_ptr<Sink> make_device_analysis(const SinkOptions& options) {
  auto sink = std::make_unique<CountingSink>();
  sink->options_ = options;
  return sink;
}

}  // namespace timeline

namespace ledger {
void set_interval_threshold(uint64_t) {}
uint64_t drain_intervals(std::vector<HostInterval>*) { return 0; }
uint64_t drain_steps(std::vector<uint64_t>*) { return 0; }
uint64_t launches() { return 0; }
}  // namespace ledger
}  // namespace gpuslack

// See prometheus.h. Report time only.
#include "report/prometheus.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ledger/api_call.h"
#include "timeline/timeline.h"

namespace gpuslack {
namespace report {
namespace {

std::string number(double v) {
  if (!std::isfinite(v) || v <= 0) return "0";
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::general, 9);
  if (result.ec != std::errc()) return "0";
  return std::string(buf, result.ptr);
}

std::string number(uint64_t v) { return std::to_string(v); }

std::string label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u >= 0x7f) {
      out += '_';
    } else {
      out += c;
    }
  }
  return out;
}

std::string whole(int v) { return v < 0 ? std::string() : std::to_string(v); }

// One metric family: its HELP and TYPE once, then its samples.
class Exposition {
 public:
  Exposition(const Summary& s, bool with_pid) {
    common_ = "job_id=\"" + label_value(s.job.id) + "\",rank=\"" + whole(s.rank) + "\",local_rank=\"" +
              whole(s.local_rank) + "\",restart=\"" + std::to_string(s.job.restart < 0 ? 0 : s.job.restart) +
              "\",host=\"" + label_value(s.host) + "\"";
    if (with_pid) common_ += ",pid=\"" + std::to_string(s.pid) + "\"";
  }

  void family(const char* name, const char* type, const char* help) {
    name_ = name;
    out_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }

  // A sample of the current family; `labels` as name="value" pairs.
  void sample(const std::string& value, std::initializer_list<std::pair<const char*, std::string>> labels = {}) {
    out_ += name_ + "{" + common_;
    for (const auto& l : labels) out_ += std::string(",") + l.first + "=\"" + label_value(l.second) + "\"";
    out_ += "} " + value + "\n";
  }

  std::string take() { return std::move(out_); }

 private:
  std::string common_;
  std::string name_;
  std::string out_;
};

struct OpFigures {
  uint64_t calls = 0, bytes = 0, timed = 0;
  double host_s = 0, gpu_s = 0, busbw_weighted = 0, busbw_weight = 0;
};

// NCCL's choice for the row (its profiler plugin), "unknown" without one.
std::string algo_proto(const CollectiveRow& r) { return r.algo.empty() ? "unknown" : r.algo + "/" + r.proto; }

void collectives(const CollectivesSection& c, Exposition* e) {
  // By operation and NCCL's algorithm/protocol.
  std::map<std::pair<std::string, std::string>, OpFigures> ops;
  for (const CollectiveRow& r : c.rows) {
    OpFigures& f = ops[{r.op, algo_proto(r)}];
    f.calls += r.count;
    f.bytes += r.bytes;
    f.timed += r.timed;
    f.host_s += r.host_s;
    f.gpu_s += r.gpu_s;
    if (r.timed > 0 && r.gpu_s > 0 && r.busbw_gbps > 0) {
      f.busbw_weighted += r.busbw_gbps * r.gpu_s;
      f.busbw_weight += r.gpu_s;
    }
  }
  if (ops.empty()) return;
  e->family("gpuslack_collective_calls_total", "counter", "NCCL calls made, by operation and NCCL's algorithm/protocol.");
  for (const auto& [k, f] : ops) e->sample(number(f.calls), {{"op", k.first}, {"algo_proto", k.second}});
  e->family("gpuslack_collective_bytes_total", "counter",
            "Bytes moved by NCCL calls (nccl-tests' S), by operation and NCCL's algorithm/protocol.");
  for (const auto& [k, f] : ops) e->sample(number(f.bytes), {{"op", k.first}, {"algo_proto", k.second}});
  e->family("gpuslack_collective_host_seconds_total", "counter",
            "Host time blocked in NCCL calls, by operation and NCCL's algorithm/protocol.");
  for (const auto& [k, f] : ops) e->sample(number(f.host_s), {{"op", k.first}, {"algo_proto", k.second}});
  e->family("gpuslack_collective_timed_calls_total", "counter",
            "NCCL calls whose GPU time was measured (one in collective_timing_every), by operation and NCCL's "
            "algorithm/protocol.");
  for (const auto& [k, f] : ops) e->sample(number(f.timed), {{"op", k.first}, {"algo_proto", k.second}});
  e->family("gpuslack_collective_gpu_seconds_total", "counter",
            "GPU time of the timed NCCL calls, by operation and NCCL's algorithm/protocol.");
  for (const auto& [k, f] : ops) e->sample(number(f.gpu_s), {{"op", k.first}, {"algo_proto", k.second}});
  e->family("gpuslack_collective_busbw_bytes_per_second", "gauge",
            "Bus bandwidth of the timed NCCL calls (nccl-tests' busbw), mean weighted by GPU time, by operation and "
            "NCCL's algorithm/protocol.");
  for (const auto& [k, f] : ops)
    e->sample(number(f.busbw_weight > 0 ? f.busbw_weighted / f.busbw_weight * 1e9 : 0.0),
              {{"op", k.first}, {"algo_proto", k.second}});
  if (c.algorithms.empty()) return;
  e->family("gpuslack_nccl_algorithm_calls_total", "counter",
            "Collectives NCCL's profiler plugin recorded, by operation, log2 size bucket and NCCL's "
            "algorithm/protocol.");
  std::map<std::tuple<std::string, int, std::string>, uint64_t> calls;
  for (const AlgoProtoRow& a : c.algorithms) calls[{a.op, a.bucket, a.algo + "/" + a.proto}] += a.calls;
  for (const auto& [k, n] : calls)
    e->sample(number(n), {{"op", std::get<0>(k)}, {"size_bucket", std::to_string(std::get<1>(k))},
                          {"algo_proto", std::get<2>(k)}});
}

void gpu_timeline(const GpuTimelineSection& g, Exposition* e) {
  const bool measured = g.status == timeline::Status::kMeasured;
  e->family("gpuslack_gpu_timeline_measured", "gauge", "1 when the GPU timeline (CUPTI) measured busy and idle time.");
  e->sample(measured ? "1" : "0");
  if (!measured || g.devices.empty()) return;
  e->family("gpuslack_gpu_wall_seconds_total", "counter", "Time the GPU timeline covered, per device.");
  for (const GpuDeviceRow& d : g.devices) e->sample(number(d.wall_s), {{"device", std::to_string(d.device)}});
  e->family("gpuslack_gpu_busy_seconds_total", "counter", "GPU busy time by what ran (overlaps counted once).");
  for (const GpuDeviceRow& d : g.devices)
    for (int k = 0; k < timeline::kBusyCount; ++k)
      e->sample(number(d.busy_by[k]),
                {{"device", std::to_string(d.device)}, {"kind", timeline::busy_key(static_cast<timeline::Busy>(k))}});
  e->family("gpuslack_gpu_idle_seconds_total", "counter", "GPU idle time by why it idled.");
  for (const GpuDeviceRow& d : g.devices)
    for (int k = 0; k < timeline::kIdleCount; ++k)
      e->sample(number(d.idle_by[k]),
                {{"device", std::to_string(d.device)}, {"cause", timeline::idle_key(static_cast<timeline::Idle>(k))}});
  // The top kernels' launches (KernelLaunches), one series per
  // device and kernel among the top few: bounded by the table's length.
  bool any = false;
  for (const GpuDeviceRow& d : g.devices)
    for (const KernelRow& k : d.top_kernels) any |= k.launches.shapes > 0 && k.launches.sm_count > 0;
  if (!any) return;
  struct Gauge {
    const char* name;
    const char* help;
    double (*value)(const KernelLaunches&);
  };
  const Gauge gauges[] = {
      {"gpuslack_kernel_blocks", "Blocks of a top kernel's largest grid.",
       [](const KernelLaunches& l) { return static_cast<double>(l.blocks_max); }},
      {"gpuslack_kernel_blocks_per_sm", "Theoretical resident blocks per SM of a top kernel (its lowest).",
       [](const KernelLaunches& l) { return static_cast<double>(l.blocks_per_sm_min); }},
      {"gpuslack_kernel_waves", "Waves of a top kernel's largest grid (blocks / (blocks per SM x SMs)).",
       [](const KernelLaunches& l) { return l.waves_max; }},
      {"gpuslack_kernel_wave_efficiency",
       "Work in full waves over the waves' capacity, of a top kernel's launches, weighted by GPU time.",
       [](const KernelLaunches& l) { return l.wave_efficiency; }},
  };
  for (const Gauge& gauge : gauges) {
    e->family(gauge.name, "gauge", gauge.help);
    for (const GpuDeviceRow& d : g.devices)
      for (const KernelRow& k : d.top_kernels)
        if (k.launches.shapes > 0 && k.launches.sm_count > 0)
          e->sample(number(gauge.value(k.launches)), {{"device", std::to_string(d.device)}, {"kernel", k.name}});
  }
}

// Whether allocator:vmm, selected, serves: the devices it is off on
// (Note [Saying the allocator is off] in alloc/process_allocators.h), a
// count to alert on and one info series per device saying why. Nothing
// with the native allocator.
void allocator_status(const AllocatorStatus& st, Exposition* e) {
  if (st.selected != "vmm") return;
  e->family("gpuslack_allocator_vmm_devices_off", "gauge",
            "Devices on which allocator:vmm, selected, is off: their cudaMalloc and cudaFree go to the runtime.");
  e->sample(number(static_cast<uint64_t>(st.off.size())));
  if (st.off.empty()) return;
  e->family("gpuslack_allocator_vmm_off_info", "gauge", "A device on which allocator:vmm is off, and why (always 1).");
  for (const AllocatorOff& o : st.off) e->sample("1", {{"device", std::to_string(o.device)}, {"reason", o.why}});
}

void memory(const Summary& s, Exposition* e) {
  allocator_status(s.allocator_status, e);
  if (!s.allocator.empty()) {
    struct Gauge {
      const char* name;
      const char* help;
      uint64_t AllocatorCounters::*field;
    };
    const Gauge gauges[] = {
        {"gpuslack_allocator_allocated_bytes", "Bytes in live blocks of gpuslack's VMM allocator.",
         &AllocatorCounters::allocated},
        {"gpuslack_allocator_reserved_bytes", "Device memory gpuslack's VMM allocator holds mapped.",
         &AllocatorCounters::reserved},
        {"gpuslack_allocator_peak_allocated_bytes", "Most bytes in live blocks so far.",
         &AllocatorCounters::peak_allocated},
        {"gpuslack_allocator_peak_reserved_bytes", "Most device memory mapped so far.",
         &AllocatorCounters::peak_reserved},
    };
    for (const Gauge& g : gauges) {
      e->family(g.name, "gauge", g.help);
      for (const AllocatorRow& a : s.allocator) e->sample(number(a.stats.*g.field), {{"device", std::to_string(a.device)}});
    }
  }
  if (s.pinned.present) {
    e->family("gpuslack_pinned_heap_pinned_bytes", "gauge", "Host memory gpuslack's pinned heap holds pinned.");
    e->sample(number(s.pinned.stats.pinned));
    e->family("gpuslack_pinned_heap_live_bytes", "gauge", "Bytes in live blocks of the pinned heap.");
    e->sample(number(s.pinned.stats.live));
  }
  if (s.staging.present) {
    const StagingCounters& st = s.staging.stats;
    e->family("gpuslack_pageable_copies_total", "counter", "Copies between device and pageable host memory seen.");
    e->sample(number(st.h2d.seen), {{"direction", "h2d"}});
    e->sample(number(st.d2h.seen), {{"direction", "d2h"}});
    e->family("gpuslack_staged_copies_total", "counter", "Pageable copies gpuslack staged through pinned memory.");
    e->sample(number(st.h2d.staged), {{"direction", "h2d"}});
    e->sample(number(st.d2h.staged), {{"direction", "d2h"}});
    e->family("gpuslack_staged_bytes_total", "counter", "Bytes of the staged pageable copies.");
    e->sample(number(st.h2d.staged_bytes), {{"direction", "h2d"}});
    e->sample(number(st.d2h.staged_bytes), {{"direction", "d2h"}});
  }
}

}  // namespace

std::string format_prometheus(const Summary& s, bool with_pid) {
  Exposition e(s, with_pid);
  e.family("gpuslack_wall_seconds_total", "counter", "Time since the process's first CUDA call.");
  e.sample(number(s.wall_s));
  e.family("gpuslack_lost_seconds_total", "counter",
           "Host time lost in allocation, copies and collectives, all threads.");
  e.sample(number(s.lost_s));
  e.family("gpuslack_blocked_seconds_total", "counter", "Host time blocked in hooked CUDA and NCCL calls, by category.");
  for (int c = 0; c < kCategoryCount; ++c) {
    double seconds = 0;
    for (const CategoryTime& t : s.categories)
      if (static_cast<int>(t.category) == c) seconds = t.seconds;
    e.sample(number(seconds), {{"category", category_key(static_cast<Category>(c))}});
  }
  gpu_timeline(s.gpu_timeline, &e);
  collectives(s.collectives, &e);
  memory(s, &e);
  return e.take();
}

}  // namespace report
}  // namespace gpuslack

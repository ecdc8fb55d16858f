// See text.h. Numbers here are for people: durations in the unit that
// reads best, bytes in binary units, shares as percentages with one
// decimal. The exact figures are in the JSON (json.h).
#include "report/text.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <vector>

#include "report/algorithms_text.h"
#include "report/findings_text.h"
#include "report/health_series.h"
#include "report/idle_explained.h"
#include "report/topology.h"
#include "report/units.h"
#include "report/utf8.h"
#include "report/wrap.h"

namespace gpuslack {
namespace report {
namespace {

constexpr const char* kPrefix = "gpuslack: ";

std::string printf_string(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string printf_string(const char* format, ...) {
  char buf[128];
  va_list args;
  va_start(args, format);
  int n = std::vsnprintf(buf, sizeof(buf), format, args);
  va_end(args);
  if (n < 0) return std::string();
  return std::string(buf, std::min(static_cast<size_t>(n), sizeof(buf) - 1));
}

// Names come from threads, symbols and the environment: no control
// character may reach the log, and a byte that is not UTF-8 prints as
// U+FFFD, as the JSON writes it (utf8.h), so that a summary read back from
// its file renders the same text.
std::string printable(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t len = utf8_sequence_length(s, i);
    if (c < 0x20 || c == 0x7f) {
      out += '?';
    } else if (len == 0) {
      out += "\xef\xbf\xbd";
    } else {
      out.append(s, i, len);
    }
    i += len != 0 ? len : 1;
  }
  return out;
}

// Seconds for a headline, to three significant digits ("0.0502 s", "2.1 s",
// "12.5 s"; a short run's 0.05 s must not read 0.1), whole above 1000 s,
// and as every other duration (units.h) below 10 ms ("26.1 us", not
// "2.61e-05 s"): the headline's precision, not another unit
// (Note [One formatter per unit]).
std::string headline_seconds(double s) {
  if (s > 0 && s < 0.01) return seconds_text(s);
  return printf_string(s >= 1000 ? "%.0f s" : "%.3g s", s);
}

// A byte count in a table or line here: "-" for none, else units.h's.
std::string bytes_cell(uint64_t bytes) { return bytes == 0 ? "-" : bytes_text(static_cast<double>(bytes)); }

std::string count_text(uint64_t n) { return printf_string("%" PRIu64, n); }

// Rows of cells, rendered with aligned columns: the first `left_columns`
// left-aligned, the rest right-aligned, two spaces between columns.
class Table {
 public:
  explicit Table(size_t left_columns) : left_columns_(left_columns) {}
  void add(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  bool empty() const { return rows_.empty(); }

  void render(const char* indent, std::string* out) const {
    std::vector<size_t> width;
    for (const auto& row : rows_) {
      if (width.size() < row.size()) width.resize(row.size(), 0);
      for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    }
    for (const auto& row : rows_) {
      std::string line = std::string(kPrefix) + indent;
      for (size_t i = 0; i < row.size(); ++i) {
        std::string pad(width[i] - row[i].size(), ' ');
        if (i > 0) line += "  ";
        line += i < left_columns_ ? row[i] + (i + 1 < row.size() ? pad : "") : pad + row[i];
      }
      *out += line + '\n';
    }
  }

 private:
  size_t left_columns_;
  std::vector<std::vector<std::string>> rows_;
};

// One line of prose, wrapped at 80 columns (wrap.h); table rows are not.
void line(std::string* out, const std::string& text) { *out += wrap_line(kPrefix, text); }

CategoryTime category_time(const Summary& s, Category c) {
  for (const CategoryTime& t : s.categories)
    if (t.category == c) return t;
  CategoryTime none;
  none.category = c;
  return none;
}

double category_seconds(const Summary& s, Category c) { return category_time(s, c).seconds; }

// Note [Thread-seconds]: blocked time is summed over threads, so with
// several threads blocking at once a "share of wall time" can pass 100%
// (issue 17: a program of 20,001 threads read "333.8% of 2.82 s lost"). No
// share above 100% is shown: such a figure is written as thread-seconds
// ("6.5 thread-s"), and the headline then names the worst thread's share
// of wall time, which one thread cannot exceed.
bool over_wall(double share) { return share > 1; }

// "6.5 thread-s": blocked time summed over threads (Note [Thread-seconds]).
std::string thread_seconds(double s) {
  std::string t = headline_seconds(s);
  if (t.size() > 2 && t.compare(t.size() - 2, 2, " s") == 0) return t.substr(0, t.size() - 2) + " thread-s";
  return t + " of thread time";
}

// "20,001": thousands grouped, for a count in a headline.
std::string grouped(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// "allocation 2.1 s (16.8%)"; the share is left out when it rounds to 0.0%,
// and a share above 100% reads "allocation 5.0 thread-s".
std::string category_part(const Summary& s, Category c) {
  CategoryTime t = category_time(s, c);
  if (over_wall(t.share)) return std::string(category_name(c)) + " " + thread_seconds(t.seconds);
  std::string part = std::string(category_name(c)) + " " + headline_seconds(t.seconds);
  if (t.share >= 0.0005) part += " (" + percent_text(t.share) + ")";
  return part;
}

void headline(const Summary& s, std::string* out) {
  std::string who = "pid " + std::to_string(s.pid);
  if (s.rank >= 0) who += ", rank " + std::to_string(s.rank);
  if (s.rank >= 0 && s.job.world_size > 0) who += " of " + std::to_string(s.job.world_size);
  if (!s.job.id.empty()) who += ", job " + printable(s.job.id);
  if (s.job.restart > 0) who += ", restart " + std::to_string(s.job.restart);
  const uint64_t all_threads = s.threads.size() + s.other_threads.threads;
  std::string lost = percent_text(s.lost_share) + " of " + headline_seconds(s.wall_s) + " lost";
  if (over_wall(s.lost_share))  // Note [Thread-seconds]
    lost = "lost " + thread_seconds(s.lost_s) + " over " + grouped(all_threads) +
           (all_threads == 1 ? " thread" : " threads") + "; worst thread " + percent_text(s.worst_thread.lost_share) +
           " of " + headline_seconds(s.wall_s);
  const double sync_s = category_seconds(s, Category::kSync);
  line(out, lost + " (" + who + "): " + category_part(s, Category::kAllocation) + ", " +
                category_part(s, Category::kCopy) + ", " + category_part(s, Category::kCollective) + "; " +
                category_name(Category::kSync) + " " +
                (over_wall(category_time(s, Category::kSync).share) ? thread_seconds(sync_s) : headline_seconds(sync_s)) +
                " (not counted as lost)");
  std::string context = "host " + printable(s.host);
  if (s.job.node_rank >= 0) context += ", node rank " + std::to_string(s.job.node_rank);
  if (s.local_rank >= 0) context += ", local rank " + std::to_string(s.local_rank);
  uint64_t exited = s.other_threads.threads;
  for (const ThreadRow& t : s.threads) exited += t.exited ? 1 : 0;
  const uint64_t threads = s.threads.size() + s.other_threads.threads;
  context += ", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
  if (exited > 0) context += " (" + std::to_string(exited) + " exited)";
  if (!s.reason.empty()) context += ", written at " + printable(s.reason);
  context += ", gpuslack " + printable(s.gpuslack_version);
  line(out, context);
}

// "cudaFree+0x1a (train.so)" -> "cudaFree": the function, or the module
// when no symbol was found, for a headline.
std::string short_frame(const std::string& frame) {
  std::string f = frame.substr(0, frame.find(" ("));
  size_t plus = f.find("+0x");
  if (plus != std::string::npos && plus > 0) f.resize(plus);
  return f;
}

// The causes (or kinds) of one device with a share of at least 0.05%, most
// first; ties in enum order.
template <int N>
std::vector<int> by_share(const double (&seconds)[N]) {
  std::vector<int> order;
  for (int i = 0; i < N; ++i)
    if (seconds[i] > 0) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return seconds[a] > seconds[b]; });
  return order;
}

// "device 0: GPU idle 31.0% of 412 s: host-bound 22.0% (no CUDA call in
// flight), allocation 6.0% (cudaFree at train_step), copies 3.0%; busy
// 69.0%: compute 55.0%, communication 11.0%, copies 3.0%"
std::string gpu_device_headline(const GpuDeviceRow& d) {
  auto share = [&](double v) { return d.wall_s > 0 ? v / d.wall_s : 0; };
  std::string text = "device " + std::to_string(d.device) + ": GPU idle " + percent_text(share(d.idle_s)) + " of " +
                     headline_seconds(d.wall_s);
  std::string parts;
  for (int i : by_share(d.idle_by)) {
    if (share(d.idle_by[i]) < 0.0005) continue;
    const auto cause = static_cast<timeline::Idle>(i);
    std::string part = std::string(timeline::idle_name(cause)) + " " + percent_text(share(d.idle_by[i]));
    if (cause == timeline::Idle::kHostBound) part += " (no CUDA call in flight)";
    for (const IdleSiteRow& site : d.idle_sites) {
      if (site.cause != timeline::idle_key(cause)) continue;
      part += " (" + printable(site.api);
      if (!site.frames.empty()) part += " at " + printable(short_frame(site.frames.front()));
      part += ")";
      break;
    }
    parts += (parts.empty() ? "" : ", ") + part;
  }
  if (!parts.empty()) text += ": " + parts;
  text += "; busy " + percent_text(share(d.busy_s));
  std::string kinds;
  for (int i : by_share(d.busy_by)) {
    if (share(d.busy_by[i]) < 0.0005) continue;
    kinds += std::string(kinds.empty() ? "" : ", ") + timeline::busy_name(static_cast<timeline::Busy>(i)) + " " +
             percent_text(share(d.busy_by[i]));
  }
  if (!kinds.empty()) text += ": " + kinds;
  return text;
}

bool timeline_measured(const Summary& s) {
  return s.gpu_timeline.status == timeline::Status::kMeasured && !s.gpu_timeline.devices.empty();
}

// The first lines when the timeline measured: one per device.
void gpu_headline(const Summary& s, std::string* out) {
  if (!timeline_measured(s)) return;
  for (const GpuDeviceRow& d : s.gpu_timeline.devices) line(out, gpu_device_headline(d));
}

// What the GPU was busy with, the idle call sites, steps; or why the
// timeline did not measure.
void gpu_details(const Summary& s, std::string* out) {
  const GpuTimelineSection& g = s.gpu_timeline;
  if (!timeline_measured(s)) {
    if (g.status == timeline::Status::kHeldByOther) {
      line(out, "GPU timeline: not measured: " + printable(g.detail) + " holds CUPTI");
    } else if (g.status == timeline::Status::kUnavailable) {
      std::string text = "GPU timeline: not measured: " + printable(g.detail);
      if (!g.how_to_enable.empty()) text += "; " + printable(g.how_to_enable);
      line(out, text);
    } else if (!g.how_to_enable.empty()) {
      line(out, "GPU timeline: not measured; " + printable(g.how_to_enable));
    }
    return;
  }
  if (!g.stopped_by.empty())
    line(out, "GPU timeline: measured for the first " + seconds_text(g.stopped_after_s) + " only: " +
                  printable(g.stopped_by) + " then took CUPTI");
  for (const GpuDeviceRow& d : g.devices) {
    std::string title = "GPU timeline, device " + std::to_string(d.device) + ": busy " + seconds_text(d.busy_s) +
                        ", idle " + seconds_text(d.idle_s) + " of " + seconds_text(d.wall_s) + "; " +
                        count_text(d.kernels) + " kernels (" + count_text(d.launches) +
                        " launches through the launch API)";
    if (d.busy_s > 0)
      title += ", " + percent_text(d.short_kernel_busy_s / d.busy_s) + " of busy time in kernels under 10 us";
    line(out, title);
    for (const IdleSiteRow& site : d.idle_sites) {
      line(out, "  idle " + seconds_text(site.idle_s) + " while blocked in " + printable(site.api) + " (" +
                    printable(site.cause) + ")");
      for (const std::string& frame : site.frames) line(out, "      at " + printable(frame));
    }
    if (!d.top_kernels.empty()) {
      // Launch shapes (timeline::KernelLaunches): a range where a name ran
      // in several; "-" where no record carried a grid or the device's
      // limits are unknown.
      const auto range = [](const std::string& lo, const std::string& hi) { return lo == hi ? lo : lo + "-" + hi; };
      Table table(1);
      table.add({"kernel", "count", "total", "mean", "blocks", "blocks/SM", "waves", "wave eff."});
      for (const timeline::KernelRow& k : d.top_kernels) {
        const timeline::KernelLaunches& l = k.launches;
        const bool shaped = l.shapes > 0, known = shaped && l.sm_count > 0 && l.wave_efficiency > 0;
        table.add({printable(k.name), count_text(k.count), seconds_text(k.total_s), seconds_text(k.mean_s),
                   shaped ? range(count_text(l.blocks_min), count_text(l.blocks_max)) : "-",
                   known ? range(std::to_string(l.blocks_per_sm_min), std::to_string(l.blocks_per_sm_max)) : "-",
                   known ? range(waves_text(l.waves_min), waves_text(l.waves_max)) : "-",
                   known ? percent_text(l.wave_efficiency) : "-"});
      }
      table.render("  ", out);
    }
    const timeline::Steps& st = d.steps;
    if (st.count > 0) {
      line(out, std::string("  ") + (st.from_marks ? "steps" : "intervals") + ": " + count_text(st.count) +
                    ", busy p50 " + percent_text(st.busy_share_p50) + ", p99 " + percent_text(st.busy_share_p99) +
                    ", wall p50 " + seconds_text(st.wall_p50_s) + ", p99 " + seconds_text(st.wall_p99_s));
      for (const timeline::StepRow& w : st.worst)
        line(out, std::string("    ") + (st.from_marks ? "step " : "interval ") + count_text(w.index) + ": idle " + seconds_text(w.idle_s) + " of " + seconds_text(w.wall_s));
    }
  }
  if (g.dropped_by_pool + g.dropped_by_cupti + g.host_intervals_dropped > 0)
    line(out, "  dropped: " + count_text(g.dropped_by_pool) + " activity buffers refused (pool " +
                  bytes_cell(g.buffer_bytes_limit) + "), " + count_text(g.dropped_by_cupti) + " records by CUPTI, " +
                  count_text(g.host_intervals_dropped) + " host intervals");
  if (g.buffers_beyond_cap > 0)
    line(out, "  " + count_text(g.buffers_beyond_cap) + " activity buffers lent past the pool's ceiling: this CUPTI "
                  "(before 12.9) crashes on a refused buffer");
}

void call_tables(const Summary& s, std::string* out) {
  for (int c = 0; c < kCategoryCount; ++c) {
    Category category = static_cast<Category>(c);
    Table table(1);
    table.add({"call", "count", "total", "share", "p50", "p99", "max", "bytes"});
    bool any = false;
    for (const CallRow& row : s.calls) {
      if (row.category != category) continue;
      any = true;
      double share = s.wall_s > 0 ? row.total_s / s.wall_s : 0;
      table.add({printable(row.name), count_text(row.count), seconds_text(row.total_s),
                 over_wall(share) ? "-" : percent_text(share),  // Note [Thread-seconds]
                 seconds_text(row.p50_s), seconds_text(row.p99_s), seconds_text(row.max_s), bytes_cell(row.bytes)});
    }
    if (!any) continue;
    std::string title = category_part(s, category);
    if (!counts_as_lost(category)) title += ", not counted as lost";
    line(out, title + ":");
    table.render("  ", out);
  }
}

// bytes / host time, as summary.cc computes CopyRow::host_time_gbps: the
// same figure in the process, and from a file closer than the one it holds
// (6 digits against total_s's 9).
double copy_gbps(const CopyRow& row) {
  double gbps = row.total_s > 0 ? static_cast<double>(row.bytes) / row.total_s / 1e9 : 0;
  return std::isfinite(gbps) && gbps > 0 ? gbps : row.host_time_gbps;
}

// Note [Copy rates] (summary.h): a rate only where the host time is the
// transfer's (synchronous calls between host and device or host and host);
// "-" for asynchronous calls, device-to-device, peer copies and memsets.
void copy_table(const Summary& s, std::string* out) {
  if (s.copies.empty()) return;
  Table table(3);
  table.add({"kind", "host", "call", "count", "bytes", "host time", "GB/s (host time)"});
  for (const CopyRow& row : s.copies) {
    const char* kind = copy_kind_name(row.copy);
    const char* host = host_memory_name(row.host);
    table.add({kind[0] != '\0' ? kind : "-", host[0] != '\0' ? host : "-", row.async_api ? "async" : "sync",
               count_text(row.count), bytes_cell(row.bytes), seconds_text(row.total_s),
               row.host_time_gbps > 0 ? gbps_text(copy_gbps(row)) : "-"});
  }
  line(out, "copies by kind (a rate only for synchronous host copies):");
  table.render("  ", out);
}

std::string nccl_version_text(int code) {
  if (code <= 0) return "unknown";
  // NCCL_VERSION(X,Y,Z): X*10000 + Y*100 + Z since 2.9 (X*1000 + Y*100 + Z before).
  if (code >= 10000) return printf_string("%d.%d.%d", code / 10000, code / 100 % 100, code % 100);
  return printf_string("%d.%d.%d", code / 1000, code / 100 % 10, code % 100);
}


// Note: the GPU columns come from one call in `timing_every` (docs/collectives.md).
void collective_table(const Summary& s, std::string* out) {
  const CollectivesSection& c = s.collectives;
  if (!c.present) return;
  const std::string host = over_wall(c.host_share) ? thread_seconds(c.host_s)  // Note [Thread-seconds]
                                                  : headline_seconds(c.host_s) + " (" + percent_text(c.host_share) + " of wall)";
  // Note [Estimated GPU time] (collectives.h): an estimate, from so many
  // timed calls; over several devices a share of their wall time together
  // (never past 100%: the estimate is capped there).
  const int devices = std::max(1, c.gpu_estimate_devices);
  const std::string gpu_share = devices > 1 ? percent_text(c.gpu_share / devices) + " of " + std::to_string(devices) +
                                                  " devices x wall"
                                            : percent_text(c.gpu_share) + " of wall";
  line(out, "collectives: NCCL " + nccl_version_text(c.nccl_version) + ", host " + host + ", GPU ~" +
                headline_seconds(c.gpu_s_estimated) + " (" + gpu_share + (c.gpu_estimate_capped ? ", capped" : "") +
                "), estimated from " + count_text(c.gpu_estimate_timed) + " timed calls (1 in " +
                std::to_string(c.timing_every) + ")");
  for (const std::string& w : c.warnings) line(out, "  warning: " + printable(w));
  if (!c.rows.empty()) {
    Table table(6);
    table.add({"op", "type", "size", "ranks", "NCCL", "count", "captured", "bytes", "host", "GPU", "GPU p50",
               "GPU p99", "algbw GB/s", "busbw GB/s"});
    for (const CollectiveRow& r : c.rows) {
      table.add({printable(r.op), printable(r.datatype), size_bucket_text(r.bucket),
                 r.nranks > 0 ? std::to_string(r.nranks) : "?",
                 r.algo.empty() ? "-" : printable(r.algo + "/" + r.proto), count_text(r.count), count_text(r.captured),
                 bytes_cell(r.bytes), seconds_text(r.host_s), r.timed > 0 ? seconds_text(r.gpu_s) : "-",
                 r.timed > 0 ? seconds_text(r.gpu_p50_s) : "-", r.timed > 0 ? seconds_text(r.gpu_p99_s) : "-",
                 r.mostly_captured ? "-" : gbps_text(r.algbw_gbps), r.mostly_captured ? "-" : gbps_text(r.busbw_gbps)});
    }
    table.render("  ", out);
    // Note [Captured collectives] (collectives.h).
    for (const CollectiveRow& r : c.rows) {
      if (r.captured == 0) continue;
      line(out, "  " + printable(r.op) + " " + printable(r.datatype) + " " +
                    size_bucket_text(r.bucket) + ": " + count_text(r.captured) + " of " +
                    count_text(r.count) + " calls captured in CUDA graphs, not timed" +
                    (r.mostly_captured ? "; no algbw/busbw" : ""));
    }
    // The cost model's expectation per row (report/collective_expectations.h),
    // then where its links came from, each source once.
    std::vector<std::string> sources;
    for (const CollectiveRow& r : c.rows) {
      if (r.expected_busbw_gbps <= 0 && r.best_time_s <= 0) continue;
      std::string l = "  expected: " + printable(r.op) + " " + printable(r.datatype) + " " +
                      size_bucket_text(r.bucket) + ": " + gbps_text(r.expected_busbw_gbps) +
                      " GB/s busbw";
      if (r.best_time_s > 0) {
        l += "; best " + printable(r.best_algo) + "/" + printable(r.best_proto) + " " + seconds_text(r.best_time_s) +
             " a call";
        if (r.chosen_time_s > 0) l += " against " + seconds_text(r.chosen_time_s) + " by NCCL's choice";
      }
      line(out, l);
      if (std::find(sources.begin(), sources.end(), r.expected_from) == sources.end())
        sources.push_back(r.expected_from);
    }
    for (const std::string& from : sources) line(out, "  expected from: " + printable(from));
  }
  std::string comms;
  for (const CommunicatorRow& m : c.communicators) {
    if (!comms.empty()) comms += ", ";
    comms += "rank " + std::to_string(m.rank) + "/" + std::to_string(m.nranks) + " on device " +
             std::to_string(m.device) + (m.aborted ? " (aborted)" : "");
  }
  if (!comms.empty()) line(out, "  communicators: " + comms);
  for (const std::string& l : algorithm_lines(c)) line(out, "  " + l);
  std::string env;
  for (const auto& [k, v] : c.env) env += (env.empty() ? "" : " ") + printable(k) + "=" + printable(v);
  if (!env.empty()) line(out, "  environment: " + env);
  if (c.pending > 0 || c.dropped > 0)
    line(out, "  timed calls still running: " + count_text(c.pending) + ", lost to failed events: " +
                  count_text(c.dropped));
}

// One line per device the VMM allocator served (and what may synchronize
// the device, what the driver refused), one per device it is off on.
void allocator_lines(const Summary& s, std::string* out) {
  for (const AllocatorOff& o : s.allocator_status.off)
    line(out, "vmm allocator, device " + std::to_string(o.device) + ": off (" + o.why +
                  "); cudaMalloc and cudaFree went to the runtime");
  for (const AllocatorRow& a : s.allocator) {
    line(out, "vmm allocator, device " + std::to_string(a.device) + ": peak " + bytes_cell(a.stats.peak_allocated) +
                  " allocated / " + bytes_cell(a.stats.peak_reserved) + " reserved (utilization " +
                  percent_text(a.utilization) + "), " + count_text(a.stats.allocations) + " allocations, " +
                  count_text(a.stats.frees) + " frees without a device sync, granules mapped " +
                  count_text(a.stats.granules_mapped) + " / released " + count_text(a.stats.granules_unmapped) +
                  ", out-of-memory retries " + count_text(a.stats.oom_retries) + " (waited " + headline_seconds(a.stats.stall_s) + ")");
    if (a.stats.unmap_calls + a.stats.set_access_calls > 0)
      line(out, "  calls that may synchronize the device: " + count_text(a.stats.unmap_calls) + " cuMemUnmap, " +
                    count_text(a.stats.set_access_calls) + " cuMemSetAccess");
    if (a.stats.created_without & kCreatedWithoutPosixFd)
      line(out, "  memory created without the POSIX file-descriptor handle type (the driver refused it): not exportable");
    if (a.stats.created_without & kCreatedWithoutRdma)
      line(out, "  memory created without the GPUDirect RDMA flag (the driver refused it)");
  }
}

std::string copies_text(uint64_t n) { return count_text(n) + (n == 1 ? " copy" : " copies"); }

// "H2D 10 copies (417.6 KiB): 9 staged, 1 passed through"
std::string staging_direction(const char* name, const StagingCounters::Direction& d) {
  return std::string(name) + " " + copies_text(d.seen) + " (" + bytes_cell(d.seen_bytes) + "): " +
         count_text(d.staged) + " staged, " + count_text(d.passed) + " passed through";
}

// The staged copies (docs/pinned-and-staged.md), when a pageable copy was seen.
void staging_lines(const Summary& s, std::string* out) {
  const StagingSection& st = s.staging;
  if (!st.present) return;
  const StagingCounters& g = st.stats;
  std::string title = "pageable copies: " + staging_direction("H2D", g.h2d) + "; " + staging_direction("D2H", g.d2h);
  if (!g.enabled) title += " (stage_copies:false)";
  line(out, title);
  double blocked = static_cast<double>(g.h2d.blocked_ns + g.d2h.blocked_ns) * 1e-9;
  // No "natively ~" beside it: Note [No native estimate] (stage/staged_copy.h).
  if (g.h2d.staged + g.d2h.staged > 0)
    line(out, "  staged copies blocked " + seconds_text(blocked) + " (H2D " + seconds_text(g.h2d.blocked_ns * 1e-9) +
                  ", D2H " + seconds_text(g.d2h.blocked_ns * 1e-9) + ")");
  line(out, "  copy stalls: " + count_text(g.host_work_waits) + " waits for the application's D2H copies and host "
                "functions (" + seconds_text(g.host_work_wait_ns * 1e-9) + "), " + count_text(g.budget_waits) +
                " waits for staging memory (" + seconds_text(g.budget_wait_ns * 1e-9) + ")");
  std::string why;
  auto reason = [&](uint64_t n, const char* text) {
    if (n > 0) why += (why.empty() ? "" : ", ") + std::string(text) + " " + count_text(n);
  };
  reason(g.passed_off, "staging off");
  reason(g.passed_small, "below the threshold");
  reason(g.passed_capture, "graph capture");
  reason(g.passed_capture_unknown, "capture status unknown (stream query failed)");
  reason(g.passed_exact, "exact_copy_semantics");
  reason(g.passed_error_pending, "error pending");
  reason(g.passed_unsupported, "2D rows wider than a chunk");
  reason(g.passed_measured, "D2H measured faster natively");
  reason(g.passed_unknown_work, "unknown pending work");
  reason(g.partial, "staged in part");
  if (!why.empty()) line(out, "  passed through: " + why);
  if (g.pinned_bytes > 0)
    line(out, "  staging memory: " + bytes_cell(g.pinned_bytes) + " pinned, peak in use " +
                  bytes_cell(g.peak_in_use_bytes) + ", budget " + bytes_cell(g.budget_bytes));
  if (st.sites.empty()) return;
  line(out, "pin these buffers (pageable copies by call site, sampled by bytes):");
  for (const PageableSiteRow& site : st.sites) {
    line(out, "  " + bytes_cell(site.bytes) + " in ~" + copies_text(site.copies) + " (" + printable(site.api) + ")");
    for (const std::string& frame : site.frames) line(out, "      at " + printable(frame));
    if (site.frames.empty()) line(out, "      (no frames outside gpuslack)");
  }
}

// One line for the pinned heap, once it was made.
void pinned_line(const Summary& s, std::string* out) {
  if (!s.pinned.present) return;
  const PinnedCounters& p = s.pinned.stats;
  std::string text = "pinned heap: " + bytes_cell(p.pinned) + " pinned (peak " + bytes_cell(p.peak_pinned) + ", cap " +
                     bytes_cell(p.cap) + "), peak " + bytes_cell(p.peak_live) + " in live blocks, " +
                     count_text(p.allocations) + " allocations, " + count_text(p.frees) +
                     " frees without a device sync, cap hits " + count_text(p.cap_hits) + ", left to the runtime " +
                     count_text(p.fallbacks + p.passthrough);
  if (p.stall_s > 0) text += " (waited " + headline_seconds(p.stall_s) + " at the cap)";
  line(out, text);
}

void worst_thread(const Summary& s, std::string* out) {
  if (s.threads.empty()) return;
  const ThreadRow& t = s.worst_thread;
  std::string text = "worst thread: tid " + std::to_string(t.tid);
  if (!t.name.empty()) text += " \"" + printable(t.name) + "\"";
  if (t.exited) text += " (exited)";
  text += " lost " + headline_seconds(t.lost_s) + " (" + percent_text(t.lost_share) + " of wall)";
  std::string parts;
  for (const CategoryTime& c : t.categories) {
    if (!counts_as_lost(c.category) || c.seconds <= 0) continue;
    parts += std::string(parts.empty() ? "" : ", ") + category_name(c.category) + " " + headline_seconds(c.seconds);
  }
  if (!parts.empty()) text += ": " + parts;
  line(out, text);
}

void call_sites(const Summary& s, std::string* out) {
  for (int c = 0; c < kCategoryCount; ++c) {
    Category category = static_cast<Category>(c);
    bool titled = false;
    for (const CallSiteRow& site : s.call_sites) {
      if (site.category != category) continue;
      if (!titled) line(out, std::string("top call sites, ") + category_name(category) + ":");
      titled = true;
      line(out, "  " + seconds_text(site.blocked_s) + " in " + count_text(site.count) +
                    (site.count == 1 ? " call to " : " calls to ") + printable(site.api));
      for (const std::string& frame : site.frames) line(out, "      at " + printable(frame));
      if (site.frames.empty()) line(out, "      (no frames outside gpuslack)");
    }
  }
}

}  // namespace

std::string format_text(const Summary& summary, TextDetail detail) {
  std::string out;
  gpu_headline(summary, &out);
  headline(summary, &out);
  if (!idle_explained_line(summary).empty()) line(&out, idle_explained_line(summary));
  for (const std::string& text : findings_lines(summary.findings)) line(&out, printable(text));
  // The findings follow the headline, in the short text too, then the
  // topology's line; the short text ends there.
  // The topology's one line (report/topology.h): what the links carry.
  if (summary.topology.present) line(&out, printable(topology_short_line(summary.topology)));
  if (detail == TextDetail::kShort) return out;
  gpu_details(summary, &out);
  for (const std::string& text : device_health_lines(summary.device_health)) line(&out, printable(text));
  for (const std::string& text : topology_lines(summary.topology)) line(&out, printable(text));
  call_tables(summary, &out);
  copy_table(summary, &out);
  collective_table(summary, &out);
  allocator_lines(summary, &out);
  pinned_line(summary, &out);
  staging_lines(summary, &out);
  worst_thread(summary, &out);
  call_sites(summary, &out);
  return out;
}

}  // namespace report
}  // namespace gpuslack

// See summary_reader.h. json.cc backwards, member for member, in its order;
// a change to one is a change to the other (the round-trip tests in
// tests/lib/report/summary_reader_test.cc hold them together).
#include "report/summary_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "report/collectives_json.h"
#include "report/gpu_timeline.h"
#include "report/findings_json.h"
#include "report/health_series.h"
#include "report/topology_json.h"
#include "report/json_fields.h"
#include "report/json_reader.h"

namespace gpuslack {
namespace report {
namespace {

using detail::Fields;
using detail::Malformed;

Category category_of(const Fields& f, const char* key) {
  std::string name = f.text(key);
  for (int c = 0; c < kCategoryCount; ++c)
    if (name == category_key(static_cast<Category>(c))) return static_cast<Category>(c);
  f.bad(key, "a category (allocation, copy, collective, sync, other)");
}

CopyKind copy_kind_of(const Fields& f, const char* key) {
  std::string name = f.text(key);
  if (name == "none") return CopyKind::kNone;
  for (int k = 1; k < kCopyKindCount; ++k)
    if (name == copy_kind_name(static_cast<CopyKind>(k))) return static_cast<CopyKind>(k);
  f.bad(key, "a copy kind (H2D, D2H, D2D, peer, H2H, memset, none)");
}

HostMemory host_memory_of(const Fields& f, const char* key) {
  std::string name = f.text(key);
  if (name == "none") return HostMemory::kNone;
  for (int m = 1; m < kHostMemoryCount; ++m)
    if (name == host_memory_name(static_cast<HostMemory>(m))) return static_cast<HostMemory>(m);
  f.bad(key, "host memory (pageable, pinned, none)");
}

// Every category, in enum order, as json.cc writes them (missing ones 0).
std::vector<CategoryTime> categories(const Fields& parent, const char* key) {
  std::vector<CategoryTime> out(kCategoryCount);
  const JsonValue* v = nullptr;
  parent.object(key, &v);
  for (int c = 0; c < kCategoryCount; ++c) {
    out[c].category = static_cast<Category>(c);
    if (!v) continue;
    const char* name = category_key(static_cast<Category>(c));
    const JsonValue* t = v->find(name);
    if (!t) continue;
    Fields time(*t, parent.where(key) + "." + name);
    out[c].seconds = time.number("seconds");
    out[c].share = time.number("share");
  }
  return out;
}

ThreadRow thread(const Fields& f) {
  ThreadRow t;
  t.tid = f.whole("tid");
  t.name = f.text("name");
  t.exited = f.flag("exited");
  t.lost_s = f.number("lost_s");
  t.lost_share = f.number("lost_share");
  t.categories = categories(f, "categories");
  return t;
}

CallRow call(const Fields& f) {
  CallRow c;
  c.name = f.text("name");
  c.category = category_of(f, "category");
  c.count = f.count("count");
  c.total_s = f.number("total_s");
  c.max_s = f.number("max_s");
  c.p50_s = f.number("p50_s");
  c.p99_s = f.number("p99_s");
  c.bytes = f.count("bytes");
  c.steady_s = f.number("steady_s");
  return c;
}

CopyRow copy(const Fields& f) {
  CopyRow c;
  c.copy = copy_kind_of(f, "kind");
  c.host = host_memory_of(f, "host");
  c.count = f.count("count");
  c.bytes = f.count("bytes");
  c.total_s = f.number("total_s");
  c.async_api = f.flag("async_api");
  // Summaries written before issue 17 hold "gbps" (bytes / host time for
  // every row, Note [Copy rates] in summary.h): not read.
  c.host_time_gbps = f.number("host_time_gbps");
  return c;
}

CallSiteRow call_site(const Fields& f) {
  CallSiteRow c;
  c.category = category_of(f, "category");
  c.api = f.text("api");
  c.blocked_s = f.number("blocked_s");
  c.count = f.count("count");
  c.frames = f.strings("frames");
  return c;
}

StagingCounters::Direction staging_direction(const Fields& parent, const char* key) {
  StagingCounters::Direction d;
  const JsonValue* v = nullptr;
  if (!parent.object(key, &v)) return d;
  Fields f(*v, parent.where(key));
  d.seen = f.count("seen");
  d.seen_bytes = f.count("seen_bytes");
  d.staged = f.count("staged");
  d.staged_bytes = f.count("staged_bytes");
  d.passed = f.count("passed");
  d.passed_bytes = f.count("passed_bytes");
  d.blocked_ns = f.nanoseconds("blocked_s");
  return d;
}

StagingSection staging(const Fields& f) {
  StagingSection st;
  st.present = true;
  StagingCounters& s = st.stats;
  s.enabled = f.flag("enabled");
  s.exact = f.flag("exact_copy_semantics");
  s.async_d2h = f.flag("async_d2h");
  s.threshold_bytes = f.count("threshold_bytes");
  s.chunk_bytes = f.count("chunk_bytes");
  s.h2d = staging_direction(f, "h2d");
  s.d2h = staging_direction(f, "d2h");
  const JsonValue* why = nullptr;
  if (f.object("passed_because", &why)) {
    Fields p(*why, f.where("passed_because"));
    s.passed_off = p.count("off");
    s.passed_small = p.count("small");
    s.passed_capture = p.count("capture");
    s.passed_capture_unknown = p.count("capture_unknown");
    s.passed_exact = p.count("exact");
    s.passed_error_pending = p.count("error_pending");
    s.passed_unsupported = p.count("unsupported");
    s.passed_measured = p.count("measured_faster");
    s.passed_unknown_work = p.count("unknown_work");
  }
  s.partial = f.count("partial");
  s.host_work_waits = f.count("host_work_waits");
  s.host_work_wait_ns = f.nanoseconds("host_work_wait_s");
  s.budget_waits = f.count("budget_waits");
  s.budget_wait_ns = f.nanoseconds("budget_wait_s");
  s.legacy_h2d = f.count("legacy_h2d");
  s.legacy_other_streams = f.count("legacy_other_streams");
  s.async_d2h_copies = f.count("async_d2h_copies");
  s.budget_bytes = f.count("budget_bytes");
  s.pinned_bytes = f.count("pinned_bytes");
  s.peak_in_use_bytes = f.count("peak_in_use_bytes");
  s.pin_failures = f.count("pin_failures");
  f.each("sites", [&](const JsonValue& item, const std::string& at) {
    Fields r(item, at);
    PageableSiteRow row;
    row.api = r.text("api");
    row.bytes = r.count("bytes");
    row.copies = r.count("copies");
    row.samples = r.count("samples");
    row.frames = r.strings("frames");
    st.sites.push_back(std::move(row));
  });
  return st;
}

AllocatorRow allocator(const Fields& f) {
  AllocatorRow a;
  AllocatorCounters& s = a.stats;
  a.device = f.whole("device");
  s.allocated = f.signed_count("allocated");
  s.peak_allocated = f.signed_count("peak_allocated");
  s.reserved = f.signed_count("reserved");
  s.peak_reserved = f.signed_count("peak_reserved");
  a.utilization = f.number("utilization");
  s.largest_free = f.signed_count("largest_free");
  s.pending_free = f.signed_count("pending_free");
  s.allocations = f.signed_count("allocations");
  s.frees = f.signed_count("frees");
  s.granules_mapped = f.signed_count("granules_mapped");
  s.granules_unmapped = f.signed_count("granules_unmapped");
  s.oom_retries = f.signed_count("oom_retries");
  s.stall_s = f.number("stall_s");
  s.reservations = f.signed_count("reservations");
  s.chunks_mapped = f.signed_count("chunks_mapped");
  s.chunks_unmapped = f.signed_count("chunks_unmapped");
  s.failed_allocations = f.signed_count("failed_allocations");
  s.stream_reuses = f.signed_count("stream_reuses");
  s.deferred_frees = f.signed_count("deferred_frees");
  s.capture_fallbacks = f.signed_count("capture_fallbacks");
  s.unmap_calls = f.signed_count("unmap_calls");
  s.set_access_calls = f.signed_count("set_access_calls");
  for (const std::string& w : f.strings("created_without")) {
    if (w == "posix_fd_handle") s.created_without |= kCreatedWithoutPosixFd;
    else if (w == "gpu_direct_rdma") s.created_without |= kCreatedWithoutRdma;
    else throw Malformed{f.where("created_without") + ": expected posix_fd_handle or gpu_direct_rdma"};
  }
  const JsonValue* timeline = nullptr;
  if (f.object("timeline", &timeline)) {
    Fields t(*timeline, f.where("timeline"));
    t.each("t_s", [&](const JsonValue& item, const std::string& at) {
      double v = 0;
      if (!item.to_double(&v)) throw Malformed{at + ": expected a finite number"};
      a.timeline.t_s.push_back(v);
    });
    auto samples = [&](const char* key, std::vector<uint64_t>* out) {
      t.each(key, [&](const JsonValue& item, const std::string& at) {
        int64_t v = 0;
        if (!item.to_int64(&v)) throw Malformed{at + ": expected an integer in [-2^63, 2^63)"};
        out->push_back(static_cast<uint64_t>(v));
      });
    };
    samples("allocated", &a.timeline.allocated);
    samples("reserved", &a.timeline.reserved);
  }
  return a;
}

PinnedSection pinned(const Fields& f) {
  PinnedSection section;
  section.present = true;
  PinnedCounters& p = section.stats;
  p.pinned = f.signed_count("pinned");
  p.peak_pinned = f.signed_count("peak_pinned");
  p.live = f.signed_count("live");
  p.peak_live = f.signed_count("peak_live");
  p.cap = f.signed_count("cap");
  p.chunk_size = f.signed_count("chunk_size");
  p.chunks = f.signed_count("chunks");
  p.chunks_allocated = f.signed_count("chunks_allocated");
  p.chunks_released = f.signed_count("chunks_released");
  p.allocations = f.signed_count("allocations");
  p.frees = f.signed_count("frees");
  p.pending_free = f.signed_count("pending_free");
  p.epochs = f.signed_count("epochs");
  p.deferred_frees = f.signed_count("deferred_frees");
  p.cap_hits = f.signed_count("cap_hits");
  p.fallbacks = f.signed_count("fallbacks");
  p.passthrough = f.signed_count("passthrough");
  p.trimmed = f.signed_count("trimmed");
  p.stall_s = f.number("stall_s");
  return section;
}

// "job" (report/job.h); missing in files written before it: the top-level
// rank and host stand in.
JobIdentity job(const Fields& top) {
  JobIdentity j;
  j.rank = top.whole("rank", -1);
  j.local_rank = top.whole("local_rank", -1);
  j.node = top.text("host");
  const JsonValue* v = nullptr;
  if (!top.object("job", &v)) return j;
  Fields f(*v, "job");
  j.id = f.text("id");
  j.id_from = f.text("id_from");
  j.rank = f.whole("rank", -1);
  j.rank_from = f.text("rank_from");
  j.local_rank = f.whole("local_rank", -1);
  j.world_size = f.whole("world_size", -1);
  j.node_rank = f.whole("node_rank", -1);
  j.local_world_size = f.whole("local_world_size", -1);
  j.nodes = f.whole("nodes", -1);
  j.node = f.text("node");
  j.restart = f.whole("restart");
  j.launcher = f.text("launcher");
  f.each("nccl_ranks", [&](const JsonValue& item, const std::string& at) {
    Fields r(item, at);
    j.nccl_ranks.push_back({r.whole("nranks"), r.whole("rank", -1)});
  });
  return j;
}

Summary summary(const Fields& f) {
  Summary s;
  s.schema_version = kSchemaVersion;
  s.gpuslack_version = f.text("gpuslack_version");
  s.build_info = f.text("build_info");
  s.reason = f.text("reason");
  s.host = f.text("host");
  s.pid = f.whole("pid");
  s.rank = f.whole("rank", -1);
  s.local_rank = f.whole("local_rank", -1);
  s.job = job(f);
  s.started_utc = f.text("started_utc");
  s.wall_s = f.number("wall_s");
  s.lost_s = f.number("lost_s");
  s.lost_share = f.number("lost_share");
  s.categories = categories(f, "categories");
  const JsonValue* v = nullptr;
  if (f.object("worst_thread", &v)) {
    s.worst_thread = thread(Fields(*v, "worst_thread"));
  } else {
    s.worst_thread.categories = categories(f, "worst_thread");  // null: every category 0, as build_summary
  }
  f.each("threads", [&](const JsonValue& item, const std::string& at) { s.threads.push_back(thread(Fields(item, at))); });
  if (f.object("other_threads", &v)) {
    Fields o(*v, "other_threads");
    s.other_threads.threads = o.count("threads");
    s.other_threads.lost_s = o.number("lost_s");
    s.other_threads.lost_share = o.number("lost_share");
    s.other_threads.categories = categories(o, "categories");
  }
  s.findings = read_findings(f);
  f.each("calls", [&](const JsonValue& item, const std::string& at) { s.calls.push_back(call(Fields(item, at))); });
  f.each("copies", [&](const JsonValue& item, const std::string& at) { s.copies.push_back(copy(Fields(item, at))); });
  f.each("call_sites",
         [&](const JsonValue& item, const std::string& at) { s.call_sites.push_back(call_site(Fields(item, at))); });
  if (f.object("collectives", &v)) s.collectives = read_collectives(Fields(*v, "collectives"));
  f.each("allocator",
         [&](const JsonValue& item, const std::string& at) { s.allocator.push_back(allocator(Fields(item, at))); });
  if (f.object("allocator_status", &v)) {
    Fields st(*v, "allocator_status");
    s.allocator_status.selected = st.text("selected");
    if (s.allocator_status.selected != "native" && s.allocator_status.selected != "vmm")
      throw Malformed{st.where("selected") + ": expected native or vmm"};
    st.each("off", [&](const JsonValue& item, const std::string& at) {
      Fields o(item, at);
      s.allocator_status.off.push_back({o.whole("device"), o.text("why")});
    });
  }
  if (f.object("staging", &v)) s.staging = staging(Fields(*v, "staging"));
  if (f.object("pinned", &v)) s.pinned = pinned(Fields(*v, "pinned"));
  if (f.object("gpu_timeline", &v)) s.gpu_timeline = read_gpu_timeline(Fields(*v, "gpu_timeline"));
  if (f.object("device_health", &v)) s.device_health = read_device_health(Fields(*v, "device_health"));
  if (f.object("topology", &v)) s.topology = read_topology(Fields(*v, "topology"));
  if (f.object("series", &v)) s.series = read_series(Fields(*v, "series"));
  return s;
}

// strerror_r comes in a GNU (char*) and an XSI (int) flavour.
[[maybe_unused]] const char* pick_message(const char* gnu, const char*) { return gnu; }
[[maybe_unused]] const char* pick_message(int xsi, const char* buf) { return xsi == 0 ? buf : "unknown error"; }

std::string errno_text(int err) {
  char buf[256] = {};
  return pick_message(strerror_r(err, buf, sizeof(buf)), buf);
}

// Control characters (a path may hold any) would break the one line.
std::string one_line(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return s;
}

}  // namespace

bool summary_from_json(std::string_view json, Summary* out, std::string* error) {
  JsonValue doc;
  std::string why;
  if (!parse_json(json, &doc, &why)) {
    *error = "is not a JSON document: " + why;
    return false;
  }
  if (!doc.is_object()) {
    *error = "is not a gpuslack summary: not a JSON object";
    return false;
  }
  static const char* const kRequired[] = {"schema_version", "pid",   "wall_s", "lost_share", "categories",
                                          "threads",        "calls", "copies", "call_sites"};
  std::string missing;
  for (const char* key : kRequired)
    if (!doc.find(key)) missing += (missing.empty() ? "" : ", ") + std::string(key);
  if (!missing.empty()) {
    *error = "is not a gpuslack summary: no " + missing;
    return false;
  }
  const JsonValue* version = doc.find("schema_version");
  int64_t v = 0;
  if (!version->to_int64(&v) || v != kSchemaVersion) {
    std::string shown = version->is_number() ? version->text() : version->is_string() ? "\"" + version->text() + "\"" : "of another type";
    *error = one_line("has schema_version " + shown + "; this gpuslack reads version " + std::to_string(kSchemaVersion));
    return false;
  }
  try {
    *out = summary(Fields(doc, ""));
  } catch (const Malformed& m) {
    *error = one_line("is not a valid gpuslack summary: " + m.what);
    return false;
  }
  return true;
}

bool read_summary_file(const std::string& path, Summary* out, std::string* error) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = one_line("cannot read " + path + ": " + errno_text(errno));
    return false;
  }
  std::string data;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      *error = one_line("cannot read " + path + ": " + errno_text(err));
      return false;
    }
    if (n == 0) break;
    if (data.size() + static_cast<size_t>(n) > kMaxSummaryFileBytes) {
      close(fd);
      *error = one_line(path + " is not a gpuslack summary: larger than " +
                        std::to_string(kMaxSummaryFileBytes >> 20) + " MiB");
      return false;
    }
    data.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  std::string why;
  if (!summary_from_json(data, out, &why)) {
    *error = one_line(path + " " + why);
    return false;
  }
  return true;
}

}  // namespace report
}  // namespace gpuslack

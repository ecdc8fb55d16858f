// See staging_json.h.
#include "report/staging_json.h"

#include <string>
#include <utility>

#include "report/json.h"
#include "report/json_fields.h"
#include "report/json_reader.h"
#include "report/json_writer.h"

namespace gpuslack {
namespace report {
namespace {

using detail::Fields;
using json_detail::Writer;

void staging_direction(const StagingCounters::Direction& d, Writer* w) {
  w->begin_object();
  w->key("seen").unsigned_integer(d.seen);
  w->key("seen_bytes").unsigned_integer(d.seen_bytes);
  w->key("staged").unsigned_integer(d.staged);
  w->key("staged_bytes").unsigned_integer(d.staged_bytes);
  w->key("passed").unsigned_integer(d.passed);
  w->key("passed_bytes").unsigned_integer(d.passed_bytes);
  w->key("blocked_s").seconds(static_cast<double>(d.blocked_ns) * 1e-9);
  w->end_object();
}

StagingCounters::Direction read_direction(const Fields& parent, const char* key) {
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

}  // namespace

void write_staging(const StagingSection& st, Writer* w) {
  const StagingCounters& s = st.stats;
  w->begin_object();
  w->key("enabled").boolean(s.enabled);
  w->key("exact_copy_semantics").boolean(s.exact);
  w->key("async_d2h").boolean(s.async_d2h);
  w->key("threshold_bytes").unsigned_integer(s.threshold_bytes);
  w->key("chunk_bytes").unsigned_integer(s.chunk_bytes);
  w->key("h2d");
  staging_direction(s.h2d, w);
  w->key("d2h");
  staging_direction(s.d2h, w);
  w->key("passed_because").begin_object();
  w->key("off").unsigned_integer(s.passed_off);
  w->key("small").unsigned_integer(s.passed_small);
  w->key("capture").unsigned_integer(s.passed_capture);
  w->key("capture_unknown").unsigned_integer(s.passed_capture_unknown);
  w->key("exact").unsigned_integer(s.passed_exact);
  w->key("error_pending").unsigned_integer(s.passed_error_pending);
  w->key("unsupported").unsigned_integer(s.passed_unsupported);
  w->key("measured_faster").unsigned_integer(s.passed_measured);
  w->key("unknown_work").unsigned_integer(s.passed_unknown_work);
  w->end_object();
  w->key("partial").unsigned_integer(s.partial);
  w->key("host_work_waits").unsigned_integer(s.host_work_waits);
  w->key("host_work_wait_s").seconds(static_cast<double>(s.host_work_wait_ns) * 1e-9);
  w->key("budget_waits").unsigned_integer(s.budget_waits);
  w->key("budget_wait_s").seconds(static_cast<double>(s.budget_wait_ns) * 1e-9);
  w->key("legacy_h2d").unsigned_integer(s.legacy_h2d);
  w->key("legacy_other_streams").unsigned_integer(s.legacy_other_streams);
  w->key("async_d2h_copies").unsigned_integer(s.async_d2h_copies);
  w->key("budget_bytes").unsigned_integer(s.budget_bytes);
  w->key("pinned_bytes").unsigned_integer(s.pinned_bytes);
  w->key("peak_in_use_bytes").unsigned_integer(s.peak_in_use_bytes);
  w->key("pin_failures").unsigned_integer(s.pin_failures);
  w->key("sites").begin_array();
  for (const PageableSiteRow& r : st.sites) {
    w->begin_object();
    w->key("api").string(r.api);
    w->key("bytes").unsigned_integer(r.bytes);
    w->key("copies").unsigned_integer(r.copies);
    w->key("samples").unsigned_integer(r.samples);
    w->key("frames").begin_array();
    for (const std::string& f : r.frames) w->string(f);
    w->end_array();
    w->end_object();
  }
  w->end_array();
  w->end_object();
}

StagingSection read_staging(const Fields& f) {
  StagingSection st;
  st.present = true;
  StagingCounters& s = st.stats;
  s.enabled = f.flag("enabled");
  s.exact = f.flag("exact_copy_semantics");
  s.async_d2h = f.flag("async_d2h");
  s.threshold_bytes = f.count("threshold_bytes");
  s.chunk_bytes = f.count("chunk_bytes");
  s.h2d = read_direction(f, "h2d");
  s.d2h = read_direction(f, "d2h");
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

}  // namespace report
}  // namespace gpuslack

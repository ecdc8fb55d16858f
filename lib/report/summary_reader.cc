// See summary_reader.h. json.cc backwards, section by section, each by the
// reader beside its writer (sections.h); the round-trip tests in
// tests/lib/report/summary_reader_test.cc and sections_json_test.cc hold
// them together.
#include "report/summary_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "report/allocator_json.h"
#include "report/calls_json.h"
#include "report/collectives_json.h"
#include "report/device_health_json.h"
#include "report/findings_json.h"
#include "report/gpu_timeline_json.h"
#include "report/job_json.h"
#include "report/json_fields.h"
#include "report/json_reader.h"
#include "report/pinned_json.h"
#include "report/series_json.h"
#include "report/staging_json.h"
#include "report/topology_json.h"

namespace gpuslack {
namespace report {
namespace {

using detail::Fields;
using detail::Malformed;

// The document's members, section by section (sections.h), each by its
// section's reader; the run's are the document's own.
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
  s.job = read_job(f);
  s.started_utc = f.text("started_utc");
  s.wall_s = f.number("wall_s");
  read_calls(f, &s);
  s.findings = read_findings(f);
  const JsonValue* v = nullptr;
  if (f.object("collectives", &v)) s.collectives = read_collectives(Fields(*v, "collectives"));
  read_allocator(f, &s.allocator, &s.allocator_status);
  if (f.object("staging", &v)) s.staging = read_staging(Fields(*v, "staging"));
  if (f.object("pinned", &v)) s.pinned = read_pinned(Fields(*v, "pinned"));
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

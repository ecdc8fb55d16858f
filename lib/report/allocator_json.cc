// See allocator_json.h.
#include "report/allocator_json.h"

#include <string>

#include "report/json.h"
#include "report/json_fields.h"
#include "report/json_reader.h"
#include "report/json_writer.h"

namespace gpuslack {
namespace report {
namespace {

using detail::Fields;
using detail::Malformed;
using json_detail::Writer;

void write_row(const AllocatorRow& a, Writer* w) {
  w->begin_object();
  w->key("device").integer(a.device);
  w->key("allocated").integer(static_cast<int64_t>(a.stats.allocated));
  w->key("peak_allocated").integer(static_cast<int64_t>(a.stats.peak_allocated));
  w->key("reserved").integer(static_cast<int64_t>(a.stats.reserved));
  w->key("peak_reserved").integer(static_cast<int64_t>(a.stats.peak_reserved));
  w->key("utilization").share(a.utilization);
  w->key("largest_free").integer(static_cast<int64_t>(a.stats.largest_free));
  w->key("pending_free").integer(static_cast<int64_t>(a.stats.pending_free));
  w->key("allocations").integer(static_cast<int64_t>(a.stats.allocations));
  w->key("frees").integer(static_cast<int64_t>(a.stats.frees));
  w->key("granules_mapped").integer(static_cast<int64_t>(a.stats.granules_mapped));
  w->key("granules_unmapped").integer(static_cast<int64_t>(a.stats.granules_unmapped));
  w->key("oom_retries").integer(static_cast<int64_t>(a.stats.oom_retries));
  w->key("stall_s").seconds(a.stats.stall_s);
  w->key("reservations").integer(static_cast<int64_t>(a.stats.reservations));
  w->key("chunks_mapped").integer(static_cast<int64_t>(a.stats.chunks_mapped));
  w->key("chunks_unmapped").integer(static_cast<int64_t>(a.stats.chunks_unmapped));
  w->key("failed_allocations").integer(static_cast<int64_t>(a.stats.failed_allocations));
  w->key("stream_reuses").integer(static_cast<int64_t>(a.stats.stream_reuses));
  w->key("deferred_frees").integer(static_cast<int64_t>(a.stats.deferred_frees));
  w->key("capture_fallbacks").integer(static_cast<int64_t>(a.stats.capture_fallbacks));
  w->key("unmap_calls").integer(static_cast<int64_t>(a.stats.unmap_calls));
  w->key("set_access_calls").integer(static_cast<int64_t>(a.stats.set_access_calls));
  w->key("created_without").begin_array();
  if (a.stats.created_without & kCreatedWithoutPosixFd) w->string("posix_fd_handle");
  if (a.stats.created_without & kCreatedWithoutRdma) w->string("gpu_direct_rdma");
  w->end_array();
  w->key("timeline").begin_object();
  w->key("t_s").begin_array();
  for (double t : a.timeline.t_s) w->seconds(t);
  w->end_array();
  w->key("allocated").begin_array();
  for (uint64_t v : a.timeline.allocated) w->integer(static_cast<int64_t>(v));
  w->end_array();
  w->key("reserved").begin_array();
  for (uint64_t v : a.timeline.reserved) w->integer(static_cast<int64_t>(v));
  w->end_array();
  w->end_object();
  w->end_object();
}

AllocatorRow read_row(const Fields& f) {
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

}  // namespace

void write_allocator(const std::vector<AllocatorRow>& rows, const AllocatorStatus& status, Writer* w) {
  w->key("allocator").begin_array();
  for (const AllocatorRow& a : rows) write_row(a, w);
  w->end_array();
  w->key("allocator_status").begin_object();
  w->key("selected").string(status.selected);
  w->key("off").begin_array();
  for (const AllocatorOff& o : status.off) {
    w->begin_object();
    w->key("device").integer(o.device);
    w->key("why").string(o.why);
    w->end_object();
  }
  w->end_array();
  w->end_object();
}

void read_allocator(const Fields& f, std::vector<AllocatorRow>* rows, AllocatorStatus* status) {
  f.each("allocator", [&](const JsonValue& item, const std::string& at) { rows->push_back(read_row(Fields(item, at))); });
  const JsonValue* v = nullptr;
  if (f.object("allocator_status", &v)) {
    Fields st(*v, "allocator_status");
    status->selected = st.text("selected");
    if (status->selected != "native" && status->selected != "vmm")
      throw Malformed{st.where("selected") + ": expected native or vmm"};
    st.each("off", [&](const JsonValue& item, const std::string& at) {
      Fields o(item, at);
      status->off.push_back({o.whole("device"), o.text("why")});
    });
  }
}

}  // namespace report
}  // namespace gpuslack

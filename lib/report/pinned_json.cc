// See pinned_json.h.
#include "report/pinned_json.h"

#include "report/json.h"
#include "report/json_fields.h"
#include "report/json_reader.h"
#include "report/json_writer.h"

namespace gpuslack {
namespace report {

void write_pinned(const PinnedSection& section, json_detail::Writer* w) {
  const PinnedCounters& p = section.stats;
  auto whole = [&](const char* key, uint64_t v) { w->key(key).integer(static_cast<int64_t>(v)); };
  w->begin_object();
  whole("pinned", p.pinned);
  whole("peak_pinned", p.peak_pinned);
  whole("live", p.live);
  whole("peak_live", p.peak_live);
  whole("cap", p.cap);
  whole("chunk_size", p.chunk_size);
  whole("chunks", p.chunks);
  whole("chunks_allocated", p.chunks_allocated);
  whole("chunks_released", p.chunks_released);
  whole("allocations", p.allocations);
  whole("frees", p.frees);
  whole("pending_free", p.pending_free);
  whole("epochs", p.epochs);
  whole("deferred_frees", p.deferred_frees);
  whole("cap_hits", p.cap_hits);
  whole("fallbacks", p.fallbacks);
  whole("passthrough", p.passthrough);
  whole("trimmed", p.trimmed);
  w->key("stall_s").seconds(p.stall_s);
  w->end_object();
}

PinnedSection read_pinned(const detail::Fields& f) {
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

}  // namespace report
}  // namespace gpuslack

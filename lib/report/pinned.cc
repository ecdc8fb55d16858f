// See pinned.h.
#include "report/pinned.h"

#include "report/text_parts.h"

namespace gpuslack {
namespace report {

PinnedSection build_pinned(bool present, const pin::PinnedStats& stats) {
  PinnedSection p;
  p.present = present;
  p.stats = pinned_counters(stats);
  return p;
}

void pinned_text(const PinnedSection& section, std::string* out) {
  if (!section.present) return;
  const PinnedCounters& p = section.stats;
  std::string text = "pinned heap: " + bytes_cell(p.pinned) + " pinned (peak " + bytes_cell(p.peak_pinned) + ", cap " +
                     bytes_cell(p.cap) + "), peak " + bytes_cell(p.peak_live) + " in live blocks, " +
                     count_text(p.allocations) + " allocations, " + count_text(p.frees) +
                     " frees without a device sync, cap hits " + count_text(p.cap_hits) + ", left to the runtime " +
                     count_text(p.fallbacks + p.passthrough);
  if (p.stall_s > 0) text += " (waited " + headline_seconds(p.stall_s) + " at the cap)";
  line(out, text);
}

}  // namespace report
}  // namespace gpuslack

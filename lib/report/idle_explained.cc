// See idle_explained.h.
#include "report/idle_explained.h"

#include "report/units.h"

namespace gpuslack {
namespace report {

IdleExplained idle_explained(const Summary& s) {
  IdleExplained out;
  out.measured = s.gpu_timeline.status == timeline::Status::kMeasured && !s.gpu_timeline.devices.empty();
  if (!out.measured) return out;
  for (const GpuDeviceRow& d : s.gpu_timeline.devices) out.idle_s += d.idle_s;
  for (const Finding& f : s.findings)
    if (f.gpu_idle_s > 0) out.explained_s += f.gpu_idle_s;
  return out;
}

std::string idle_explained_line(const Summary& s) {
  const IdleExplained e = idle_explained(s);
  if (!e.measured || s.findings.empty() || e.idle_s <= 0) return "";
  return "findings explain " + seconds_text(e.explained_s) + " of the GPU's " + seconds_text(e.idle_s) + " idle (" +
         percent_text(e.share()) + ")";
}

}  // namespace report
}  // namespace gpuslack

// See idle_explained.h.
#include "report/idle_explained.h"

#include <cstdio>

namespace gpuslack {
namespace report {
namespace {

std::string seconds_text(double s) {
  char buf[32];
  if (s >= 1) std::snprintf(buf, sizeof(buf), "%.2f s", s);
  else if (s >= 1e-3) std::snprintf(buf, sizeof(buf), "%.1f ms", s * 1e3);
  else std::snprintf(buf, sizeof(buf), "%.0f us", s * 1e6);
  return buf;
}

}  // namespace

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
  char share[32];
  std::snprintf(share, sizeof(share), "%.1f%%", 100 * e.share());
  return "findings explain " + seconds_text(e.explained_s) + " of the GPU's " + seconds_text(e.idle_s) + " idle (" +
         share + ")";
}

}  // namespace report
}  // namespace gpuslack

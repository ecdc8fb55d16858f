// The kernel rule (lib/findings/findings.h), only when the GPU timeline
// measured and the device's limits were known (report::KernelLaunches):
//
// underfilled_kernels: kernels whose grids leave SMs idle. A top kernel
//   counts when its launches that leave SMs idle (report::KernelLaunches::
//   underfilled_s: a wave efficiency under 75%, Note [Waves] in
//   timeline/occupancy.h, or fewer blocks than the GPU has SMs) took at
//   least kMinBusyShare of its device's busy time. Its cost is the SM time
//   their partial waves left idle (underfilled_idle_s: each launch's GPU
//   time x (1 - its efficiency)). Judged per launch shape, not per name: one
//   kernel (a cuBLAS tile size) runs many GEMMs, and one ill-shaped GEMM
//   among efficient ones is what to fix. The device whose counted kernels
//   cost most is the one reported; the cost must reach the findings'
//   thresholds (figures.h). NCCL's kernels are left out: their grid is the
//   channel count by design, and the collectives rules judge them.
//
// The fix depends on what the kernels are, by name: GEMMs (cuBLAS, CUTLASS:
// "gemm", "xmma", "cutlass", "matmul") want larger per-GPU matrices (fewer
// tensor-parallel ranks, larger micro-batches); anything else is taken for
// small elementwise or reduction work that wants fusing.
//
// Thread safety: pure functions.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "findings/figures.h"
#include "findings/findings.h"

namespace gpuslack {
namespace findings {
namespace {

inline constexpr double kMinBusyShare = 0.10;   // of the device's busy time
inline constexpr size_t kMaxKernels = 3;        // in the evidence

bool contains_word(const std::string& name, std::initializer_list<const char*> words) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* w : words)
    if (lower.find(w) != std::string::npos) return true;
  return false;
}

bool is_gemm(const std::string& name) { return contains_word(name, {"gemm", "xmma", "cutlass", "matmul"}); }

struct Counted {
  const report::KernelRow* kernel;
  double share;  // of busy, in underfilled launches
  double cost_s;
};

std::vector<Counted> counted_kernels(const report::GpuDeviceRow& d) {
  std::vector<Counted> out;
  if (d.busy_s <= 0) return out;
  for (const report::KernelRow& k : d.top_kernels) {
    const report::KernelLaunches& l = k.launches;
    if (l.sm_count <= 0 || l.underfilled_s <= 0) continue;
    if (contains_word(k.name, {"nccl"})) continue;  // NCCL's, demangled or not
    const double share = l.underfilled_s / d.busy_s;
    if (share < kMinBusyShare) continue;
    out.push_back({&k, share, l.underfilled_idle_s});
  }
  std::sort(out.begin(), out.end(), [](const Counted& a, const Counted& b) { return a.cost_s > b.cost_s; });
  return out;
}

// The kernel's underfilled shapes among its top few: "192 blocks: 1.45
// waves of 132 x 1, 73% (0.123 s)".
std::string shapes_text(const report::KernelLaunches& l) {
  std::string out;
  for (const report::KernelShapeRow& r : l.top_shapes) {
    const bool below = r.blocks < static_cast<uint64_t>(l.sm_count);
    if (r.wave_efficiency <= 0 || (!below && r.wave_efficiency >= timeline::kUnderfilledEfficiency)) continue;
    out += absl::StrFormat("%s%u blocks of %u threads: %d/SM, %.2f waves on %d SMs, wave efficiency %.0f%%%s (%.3f s)",
                           out.empty() ? "" : "; ", r.blocks, r.threads_per_block, r.blocks_per_sm, r.waves,
                           l.sm_count, 100 * r.wave_efficiency, below ? ", fewer blocks than SMs" : "", r.total_s);
  }
  return out.empty() ? "its underfilled shapes are not among its top shapes" : out;
}

}  // namespace

void kernel_rules(const report::Summary& s, const Context& ctx, std::vector<report::Finding>* out) {
  if (s.gpu_timeline.status != timeline::Status::kMeasured) return;
  const report::GpuDeviceRow* worst = nullptr;
  std::vector<Counted> worst_kernels;
  double worst_cost = 0;
  for (const report::GpuDeviceRow& d : s.gpu_timeline.devices) {
    std::vector<Counted> k = counted_kernels(d);
    double cost = 0;
    for (const Counted& c : k) cost += c.cost_s;
    if (!k.empty() && cost > worst_cost) {
      worst = &d;
      worst_cost = cost;
      worst_kernels = std::move(k);
    }
  }
  const double wall = worst ? std::max(s.wall_s, worst->wall_s) : 0;
  if (!worst || !worth_reporting(worst_cost, wall)) return;
  report::Finding f;
  f.rule = "underfilled_kernels";
  f.title = "Kernels leave SMs idle: their grids fill the GPU in partial waves";
  f.cost_s = worst_cost;
  f.cost_share = std::min(1.0, worst_cost / wall);
  f.evidence.emplace_back("device", absl::StrFormat("%d", worst->device));
  bool gemm = false, other = false;
  for (size_t i = 0; i < worst_kernels.size(); ++i) {
    const Counted& c = worst_kernels[i];
    (is_gemm(c.kernel->name) ? gemm : other) = true;
    if (i >= kMaxKernels) continue;
    f.evidence.emplace_back(c.kernel->name,
                            absl::StrFormat("%.0f%% of GPU busy time in launches that leave SMs idle (%.3f s of its "
                                            "%.3f s): %s; %.3f s of SM time idle",
                                            100 * c.share, c.kernel->launches.underfilled_s, c.kernel->total_s,
                                            shapes_text(c.kernel->launches), c.cost_s));
  }
  if (worst_kernels.size() > kMaxKernels)
    f.evidence.emplace_back("more kernels", absl::StrFormat("%u", worst_kernels.size() - kMaxKernels));
  std::string fix;
  if (gemm)
    fix += "GEMMs: make the per-GPU matrices larger, so their tiles fill whole waves: fewer tensor-parallel ranks "
           "(e.g. tensor parallelism 4 with more pipeline stages instead of 8), larger micro-batches (more tokens "
           "per GEMM).";
  if (other)
    fix += std::string(fix.empty() ? "" : " ") +
           (ctx.pytorch ? "Small kernels: fuse them into fewer, larger ones: torch.compile(model), or larger batches."
                        : "Small kernels: fuse them into fewer, larger ones, or give each more work (larger batches).");
  f.fix = fix;
  out->push_back(std::move(f));
}

}  // namespace findings
}  // namespace gpuslack

// See algorithms_text.h.
#include "report/algorithms_text.h"

#include <cinttypes>
#include <cstdarg>
#include <cstdio>

#include "report/units.h"

namespace gpuslack {
namespace report {
namespace {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

// Printable: the algorithm and protocol names come from NCCL.
std::string plain(const std::string& s) {
  std::string out;
  for (char ch : s) out += (ch >= 0x20 && ch < 0x7f) ? ch : '?';
  return out;
}

}  // namespace

std::vector<std::string> algorithm_lines(const CollectivesSection& c) {
  std::vector<std::string> lines;
  if (c.profiler.empty() && c.algorithms.empty()) return lines;
  lines.push_back(format("NCCL profiler plugin: %s; %" PRIu64 " collectives recorded, %" PRIu64 " dropped",
                         plain(c.profiler).c_str(), c.profiler_records, c.profiler_dropped));
  size_t n = 0;
  for (const AlgoProtoRow& a : c.algorithms) {
    if (n++ == kAlgorithmLines) {
      lines.push_back(format("... %zu more in the JSON summary", c.algorithms.size() - kAlgorithmLines));
      break;
    }
    std::string shape = a.nranks > 0 ? format("%d ranks", a.nranks) : std::string("? ranks");
    if (a.nnodes > 0) shape += format(" on %d node%s", a.nnodes, a.nnodes == 1 ? "" : "s");
    std::string gpu = a.gpu_s > 0 ? ", GPU " + seconds_text(a.gpu_s) : std::string();
    if (a.gpu_s > 0 && a.busbw_gbps > 0) gpu += ", busbw " + gbps_text(a.busbw_gbps) + " GB/s";
    lines.push_back(format("NCCL chose %s/%s for %s %s (%s, comm %016" PRIx64 "): %" PRIu64 " calls, %.1f channels%s",
                           plain(a.algo).c_str(), plain(a.proto).c_str(), plain(a.op).c_str(),
                           size_bucket_text(a.bucket).c_str(), shape.c_str(), a.comm_hash, a.calls, a.channels,
                           gpu.c_str()));
  }
  return lines;
}

}  // namespace report
}  // namespace gpuslack

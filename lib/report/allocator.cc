// See allocator.h.
#include "report/allocator.h"

#include <utility>

#include "report/text_parts.h"
#include "report/units.h"

namespace gpuslack {
namespace report {

std::vector<AllocatorRow> build_allocator(const std::vector<AllocatorRun>& runs) {
  std::vector<AllocatorRow> rows;
  for (const AllocatorRun& run_row : runs) {
    AllocatorRow a;
    a.device = run_row.device;
    a.stats = allocator_counters(run_row.stats);
    a.timeline = allocator_samples(run_row.timeline);
    const AllocatorCounters& st = a.stats;
    a.utilization = st.peak_reserved ? static_cast<double>(st.peak_allocated) / static_cast<double>(st.peak_reserved) : 0;
    rows.push_back(std::move(a));
  }
  return rows;
}

void allocator_text(const std::vector<AllocatorRow>& rows, const AllocatorStatus& status, std::string* out) {
  for (const AllocatorOff& o : status.off)
    line(out, "vmm allocator, device " + std::to_string(o.device) + ": off (" + o.why +
                  "); cudaMalloc and cudaFree went to the runtime");
  for (const AllocatorRow& a : rows) {
    line(out, "vmm allocator, device " + std::to_string(a.device) + ": peak " + bytes_cell(a.stats.peak_allocated) +
                  " allocated / " + bytes_cell(a.stats.peak_reserved) + " reserved (utilization " +
                  percent_text(a.utilization) + "), " + count_text(a.stats.allocations) + " allocations, " +
                  count_text(a.stats.frees) + " frees without a device sync, granules mapped " +
                  count_text(a.stats.granules_mapped) + " / released " + count_text(a.stats.granules_unmapped) +
                  ", out-of-memory retries " + count_text(a.stats.oom_retries) + " (waited " + headline_seconds(a.stats.stall_s) + ")");
    if (a.stats.unmap_calls + a.stats.set_access_calls > 0)
      line(out, "  calls that may synchronize the device: " + count_text(a.stats.unmap_calls) + " cuMemUnmap, " +
                    count_text(a.stats.set_access_calls) + " cuMemSetAccess");
    if (a.stats.created_without & kCreatedWithoutPosixFd)
      line(out, "  memory created without the POSIX file-descriptor handle type (the driver refused it): not exportable");
    if (a.stats.created_without & kCreatedWithoutRdma)
      line(out, "  memory created without the GPUDirect RDMA flag (the driver refused it)");
  }
}

}  // namespace report
}  // namespace gpuslack

#include "report/staging.h"

#include <algorithm>
#include <map>
#include <utility>

#include "base/top_n.h"
#include "report/symbolize.h"

namespace gpuslack {
namespace report {

StagingSection build_staging(const std::vector<ledger::ThreadFigures>& threads, const RunInfo& run) {
  StagingSection st;
  st.stats = staging_counters(run.staging);
  struct Merged {
    const ApiCall* call = nullptr;
    const std::vector<void*>* frames = nullptr;
    uint64_t samples = 0, copies = 0, bytes = 0;
  };
  std::map<std::pair<uint16_t, std::vector<void*>>, Merged> merged;
  for (const ledger::ThreadFigures& t : threads) {
    for (const ledger::PageableSiteFigures& p : t.pageable_sites) {
      if (p.call == nullptr) continue;
      auto it = merged.try_emplace({p.call->id, p.frames}).first;
      it->second.call = p.call;
      it->second.frames = &it->first.second;
      it->second.samples += p.samples;
      it->second.copies += p.copies;
      it->second.bytes += p.bytes;
    }
  }
  st.present = run.staging_present || !merged.empty();
  std::vector<const Merged*> sites;
  for (const auto& entry : merged) sites.push_back(&entry.second);
  // The map's order (api id, frames) is the tie-break.
  keep_largest(sites, static_cast<size_t>(std::max(run.top_call_sites, 0)), [](const Merged* m) { return m->bytes; });
  for (size_t i = 0; i < sites.size(); ++i) {
    PageableSiteRow row;
    row.api = sites[i]->call->name != nullptr ? sites[i]->call->name : "?";
    row.samples = sites[i]->samples;
    row.copies = sites[i]->copies;
    row.bytes = sites[i]->bytes;
    row.frames = symbolize(*sites[i]->frames);
    st.sites.push_back(std::move(row));
  }
  return st;
}

}  // namespace report
}  // namespace gpuslack

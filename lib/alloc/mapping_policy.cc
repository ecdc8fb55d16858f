#include "alloc/mapping_policy.h"

#include <algorithm>

#include "alloc/block_manager.h"

namespace gpuslack {
namespace alloc {

void MappingPolicy::note_peaks(uint64_t mapped, uint64_t allocated) {
  mapped_high_water_ = std::max(mapped_high_water_, mapped);
  allocated_high_water_ = std::max(allocated_high_water_, allocated);
}

uint64_t MappingPolicy::growth(uint64_t mapped) const {
  uint64_t ceiling = std::max(mapped_high_water_, allocated_high_water_ + allocated_high_water_ / kGrowthSlack);
  return ceiling > mapped ? ceiling - mapped : 0;
}

bool MappingPolicy::in_pages(uint64_t bytes, uint64_t mapped) const {
  return bytes > BlockManager::kSmallLimit && mapped + bytes <= device_bytes_ / kPagesUpTo;
}

uint64_t MappingPolicy::long_run_bytes(uint64_t mapped, uint64_t bytes) const {
  if (mapped + bytes > device_bytes_ / kLongRunsUpTo) return 0;  // Note [Two pages make a long run]
  return allocated_high_water_ / kLongRunShare;
}

void MappingPolicy::note_map_cost(double seconds, uint64_t mapped) {
  if (mapped == 0 || seconds <= 0) return;
  double per_byte = seconds / static_cast<double>(mapped);
  map_seconds_per_byte_ = map_seconds_per_byte_ == 0 ? per_byte : 0.75 * map_seconds_per_byte_ + 0.25 * per_byte;
}

double MappingPolicy::fence_wait(uint64_t size) const {
  return std::clamp(map_seconds_per_byte_ * static_cast<double>(size), kMinFenceWait, kMaxFenceWait);
}

}  // namespace alloc
}  // namespace gpuslack

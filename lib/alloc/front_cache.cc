#include "alloc/front_cache.h"

#include <algorithm>

namespace gpuslack {
namespace alloc {

FrontCache::List* FrontCache::list(cudaStream_t stream, uint64_t size, bool make) {
  Key key{stream, size};
  if (last_ && last_key_ == key) return last_;
  auto it = lists_.find(key);
  if (it == lists_.end()) {
    if (!make) return nullptr;
    last_ = nullptr;  // the insertion may move every list
    it = lists_.emplace(key, List()).first;
  }
  last_key_ = key;
  last_ = &it->second;
  return last_;
}

bool FrontCache::adopt(cudaStream_t stream, uint64_t addr, uint64_t size) {
  if (index_.size() >= limits_.records || cached_blocks_ + 1 > limits_.blocks || cached_bytes_ + size > limits_.bytes)
    return false;
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  slots_[slot] = Record{addr, size, 0, true};
  index_.emplace(addr, slot);
  list(stream, size, true)->push_back(slot);
  cached_bytes_ += size;
  ++cached_blocks_;
  large_records_ += size > limits_.large_above;
  return true;
}

std::optional<uint64_t> FrontCache::take(cudaStream_t stream, uint64_t size, uint64_t requested) {
  List* l = list(stream, size, false);
  if (!l || l->empty()) return std::nullopt;
  Record& r = slots_[l->back()];
  l->pop_back();
  r.cached = false;
  r.requested = requested;
  cached_bytes_ -= size;
  --cached_blocks_;
  low_water_ = std::min(low_water_, cached_bytes_);
  ++counts_.allocations;
  return r.addr;
}

FrontCache::Put FrontCache::put(uint64_t addr, cudaStream_t stream) {
  auto it = index_.find(addr);
  if (it == index_.end()) return Put::kNoRecord;
  Record& r = slots_[it->second];
  if (r.cached) return Put::kFreedAlready;
  list(stream, r.size, true)->push_back(it->second);
  r.cached = true;
  cached_bytes_ += r.size;
  ++cached_blocks_;
  ++counts_.frees;
  return Put::kCached;
}

std::optional<FrontCache::Record> FrontCache::find(uint64_t addr) const {
  auto it = index_.find(addr);
  if (it == index_.end()) return std::nullopt;
  return slots_[it->second];
}

void FrontCache::forget(uint32_t slot) {
  large_records_ -= slots_[slot].size > limits_.large_above;
  index_.erase(slots_[slot].addr);
  free_slots_.push_back(slot);
}

bool FrontCache::detach(uint64_t addr, Record* out) {
  auto it = index_.find(addr);
  if (it == index_.end() || slots_[it->second].cached) return false;
  *out = slots_[it->second];
  forget(it->second);
  return true;
}

void FrontCache::drain_list(cudaStream_t stream, List* l, std::vector<Drained>* out) {
  for (uint32_t slot : *l) {
    const Record& r = slots_[slot];
    out->push_back({stream, r.addr, r.size});
    cached_bytes_ -= r.size;
    --cached_blocks_;
    forget(slot);
  }
  l->clear();
  low_water_ = std::min(low_water_, cached_bytes_);
}

void FrontCache::drain(std::vector<Drained>* out) {
  for (auto& [key, l] : lists_) drain_list(key.first, &l, out);
  lists_.clear();
  last_ = nullptr;
}

void FrontCache::drain(cudaStream_t stream, std::optional<uint64_t> larger_than, std::vector<Drained>* out) {
  if (larger_than && *larger_than >= limits_.large_above && large_records_ == 0) return;
  for (auto it = lists_.begin(); it != lists_.end();) {
    if (it->first.first != stream || (larger_than && it->first.second <= *larger_than)) {
      ++it;
      continue;
    }
    drain_list(stream, &it->second, out);
    lists_.erase(it++);
  }
  last_ = nullptr;
}

void FrontCache::detach_all(std::vector<Drained>* cached, std::vector<Record>* live) {
  drain(cached);
  for (const auto& [addr, slot] : index_) live->push_back(slots_[slot]);
  index_.clear();
  slots_.clear();
  free_slots_.clear();
  large_records_ = 0;
}

}  // namespace alloc
}  // namespace gpuslack

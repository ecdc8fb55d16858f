#include "alloc/stream_cache.h"

#include <algorithm>

namespace gpuslack {
namespace alloc {

size_t StreamCache::put(cudaStream_t stream, uint64_t offset, uint64_t size) {
  PerStream& s = streams_[stream];
  (size > large_above_ ? s.large : s.by_size)[size].push_back(offset);
  s.bytes += size;
  if (size <= large_above_) s.small_bytes += size;
  bytes_ += size;
  ++blocks_;
  return ++s.blocks;
}

std::optional<uint64_t> StreamCache::take(cudaStream_t stream, uint64_t size) {
  auto s = streams_.find(stream);
  if (s == streams_.end()) return std::nullopt;
  auto& buckets = size > large_above_ ? s->second.large : s->second.by_size;
  auto bucket = buckets.find(size);
  // Small buckets are kept when they empty: a size freed once is usually
  // freed again (a training step repeats), and re-creating it would
  // allocate. Large ones go (take_large() visits every one).
  if (bucket == buckets.end() || bucket->second.empty()) return std::nullopt;
  // The most recently freed block: its granules are the likeliest to be
  // warm in the TLBs, and the oldest ones stay together for a flush.
  uint64_t offset = bucket->second.back();
  bucket->second.pop_back();
  if (bucket->second.empty() && size > large_above_) buckets.erase(bucket);
  --s->second.blocks;
  s->second.bytes -= size;
  if (size <= large_above_) s->second.small_bytes -= size;
  bytes_ -= size;
  --blocks_;
  return offset;
}

// Note [A stream's small blocks at any size].
bool StreamCache::take_joined(cudaStream_t stream, uint64_t size, SamePage same_page, Blocks* out) {
  auto s = streams_.find(stream);
  if (s == streams_.end() || s->second.small_bytes < size) return false;
  Blocks blocks;  // (offset, size), by address
  for (const auto& [bucket, offsets] : s->second.by_size)
    for (uint64_t offset : offsets) blocks.emplace_back(offset, bucket);
  std::sort(blocks.begin(), blocks.end());
  // For each block, the shortest run that ends with it and holds `size`
  // (sizes are positive: the run's first block only moves forward).
  size_t first = 0, best_first = 0, best_last = 0;
  uint64_t sum = 0, best = UINT64_MAX;
  for (size_t last = 0; last < blocks.size() && best != size; ++last) {
    if (last > first && !(blocks[last - 1].first + blocks[last - 1].second == blocks[last].first &&
                          same_page(blocks[last - 1].first, blocks[last].first))) {
      first = last;  // a new run
      sum = 0;
    }
    sum += blocks[last].second;
    while (sum - blocks[first].second >= size) sum -= blocks[first++].second;
    if (sum >= size && sum < best) {
      best = sum;
      best_first = first;
      best_last = last;
    }
  }
  if (best == UINT64_MAX) return false;
  for (size_t i = best_first; i <= best_last; ++i) {
    auto [offset, n] = blocks[i];
    std::vector<uint64_t>& bucket = s->second.by_size[n];
    bucket.erase(std::find(bucket.begin(), bucket.end(), offset));  // cached: it is there
    out->emplace_back(offset, n);
  }
  s->second.blocks -= best_last - best_first + 1;
  blocks_ -= best_last - best_first + 1;
  s->second.bytes -= best;
  s->second.small_bytes -= best;
  bytes_ -= best;
  return true;
}

void StreamCache::take_large(cudaStream_t stream, std::vector<uint64_t>* out) {
  auto s = streams_.find(stream);
  if (s == streams_.end()) return;
  for (auto& [bucket, offsets] : s->second.large) {
    out->insert(out->end(), offsets.begin(), offsets.end());
    bytes_ -= bucket * offsets.size();
    blocks_ -= offsets.size();
    s->second.blocks -= offsets.size();
    s->second.bytes -= bucket * offsets.size();
  }
  s->second.large.clear();
}

void StreamCache::flush(cudaStream_t stream, std::vector<uint64_t>* out) {
  auto s = streams_.find(stream);
  if (s == streams_.end()) return;
  for (auto* buckets : {&s->second.by_size, &s->second.large})
    for (auto& [size, offsets] : *buckets) {
      out->insert(out->end(), offsets.begin(), offsets.end());
      bytes_ -= size * offsets.size();
      blocks_ -= offsets.size();
    }
  streams_.erase(s);
}

std::vector<cudaStream_t> StreamCache::streams() const {
  std::vector<cudaStream_t> out;
  for (const auto& [stream, s] : streams_)
    if (s.blocks) out.push_back(stream);
  return out;
}

}  // namespace alloc
}  // namespace gpuslack

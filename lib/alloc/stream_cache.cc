#include "alloc/stream_cache.h"

#include <algorithm>

namespace gpuslack {
namespace alloc {

size_t StreamCache::put(cudaStream_t stream, uint64_t offset, uint64_t size) {
  PerStream& s = streams_[stream];
  (size > large_above_ ? s.large : s.by_size)[size].push_back(offset);
  s.bytes += size;
  if (size <= large_above_) {
    s.small_bytes += size;
    s.small_by_address.emplace(offset, size);
  }
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
  forget(&s->second, &buckets, bucket, offset, size);
  return offset;
}

void StreamCache::forget(PerStream* s, Buckets* buckets, Buckets::iterator bucket, uint64_t offset, uint64_t size) {
  if (bucket->second.empty() && size > large_above_) buckets->erase(bucket);
  --s->blocks;
  s->bytes -= size;
  if (size <= large_above_) {
    s->small_bytes -= size;
    s->small_by_address.erase(offset);
  }
  bytes_ -= size;
  --blocks_;
}

// Note [A stream's small blocks at any size].
void StreamCache::small_blocks(cudaStream_t stream, Blocks* out) const {
  auto s = streams_.find(stream);
  if (s == streams_.end()) return;
  out->insert(out->end(), s->second.small_by_address.begin(), s->second.small_by_address.end());
}

bool StreamCache::remove(cudaStream_t stream, uint64_t offset, uint64_t size) {
  auto s = streams_.find(stream);
  if (s == streams_.end()) return false;
  auto& buckets = size > large_above_ ? s->second.large : s->second.by_size;
  auto bucket = buckets.find(size);
  if (bucket == buckets.end()) return false;
  auto it = std::find(bucket->second.begin(), bucket->second.end(), offset);
  if (it == bucket->second.end()) return false;
  bucket->second.erase(it);  // the rest keep their order (LIFO)
  forget(&s->second, &buckets, bucket, offset, size);
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

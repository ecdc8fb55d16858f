#include "alloc/stream_cache.h"

namespace gpuslack {
namespace alloc {

size_t StreamCache::put(cudaStream_t stream, uint64_t offset, uint64_t size) {
  PerStream& s = streams_[stream];
  s.by_size[size].push_back(offset);
  s.bytes += size;
  bytes_ += size;
  ++blocks_;
  return ++s.blocks;
}

std::optional<uint64_t> StreamCache::take(cudaStream_t stream, uint64_t size) {
  auto s = streams_.find(stream);
  if (s == streams_.end()) return std::nullopt;
  auto bucket = s->second.by_size.find(size);
  // Buckets are kept when they empty: a size freed once is usually freed
  // again (a training step repeats), and re-creating it would allocate.
  if (bucket == s->second.by_size.end() || bucket->second.empty()) return std::nullopt;
  // The most recently freed block: its granules are the likeliest to be
  // warm in the TLBs, and the oldest ones stay together for a flush.
  uint64_t offset = bucket->second.back();
  bucket->second.pop_back();
  --s->second.blocks;
  s->second.bytes -= size;
  bytes_ -= size;
  --blocks_;
  return offset;
}

void StreamCache::take_larger(cudaStream_t stream, uint64_t size, std::vector<uint64_t>* out) {
  auto s = streams_.find(stream);
  if (s == streams_.end()) return;
  for (auto& [bucket, offsets] : s->second.by_size) {
    if (bucket <= size || offsets.empty()) continue;
    out->insert(out->end(), offsets.begin(), offsets.end());
    bytes_ -= bucket * offsets.size();
    blocks_ -= offsets.size();
    s->second.blocks -= offsets.size();
    s->second.bytes -= bucket * offsets.size();
    offsets.clear();
  }
}

void StreamCache::flush(cudaStream_t stream, std::vector<uint64_t>* out) {
  auto s = streams_.find(stream);
  if (s == streams_.end()) return;
  for (auto& [size, offsets] : s->second.by_size) {
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

#include "alloc/held_fences.h"

#include "cuda/runtime_api.h"

namespace gpuslack {
namespace alloc {

HeldFences::~HeldFences() {
  for (Fence& f : fences_) sync::give_event(f.event);
}

bool HeldFences::record(cudaStream_t s) {
  // As FreeEpochs records: never on a capturing stream (the event would be
  // a node of the graph), never when the query fails.
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cuda::stream_is_capturing(s, &status) != cudaSuccess || status != cudaStreamCaptureStatusNone) {
    cuda::get_last_error();
    return false;
  }
  sync::PooledEvent ev = sync::take_event(device_, sync::EventKind::kNoTiming);
  if (!ev.event || cuda::event_record(ev.event, s) != cudaSuccess) {
    cuda::get_last_error();
    sync::give_event(ev);
    return false;
  }
  fences_.push_back({s, ev});
  unfenced_.erase(s);
  return true;
}

bool HeldFences::pending(cudaStream_t stream) const {
  bool pending = false;
  for (const Fence& f : fences_) pending |= f.stream == stream;
  return pending;
}

bool HeldFences::query(size_t i) const {
  // As FreeEpochs polls: cudaErrorNotReady is not recorded as the last
  // error, so there is nothing to clear (and clearing could take an
  // application's own pending error).
  return cuda::event_query(fences_[i].event.event) == cudaSuccess;
}

void HeldFences::remove(size_t i) {
  sync::give_event(fences_[i].event);
  fences_[i] = fences_.back();
  fences_.pop_back();
}

bool HeldFences::drop(cudaStream_t stream) {
  for (size_t i = 0; i < fences_.size(); ++i)
    if (fences_[i].stream == stream) {
      remove(i);
      return true;
    }
  return false;
}

bool HeldFences::due(cudaStream_t stream) const {
  auto it = unfenced_.find(stream);
  return it != unfenced_.end() && it->second >= fence_every_;
}

bool HeldFences::add_unfenced(cudaStream_t stream, uint64_t bytes) {
  uint64_t& unfenced = unfenced_[stream];
  unfenced += bytes;
  return unfenced >= fence_every_;
}

}  // namespace alloc
}  // namespace gpuslack

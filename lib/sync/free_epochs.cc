#include "sync/free_epochs.h"

#include <algorithm>

#include "cuda/runtime_api.h"
#include "base/clock.h"

namespace gpuslack {
namespace sync {

FreeEpochs::~FreeEpochs() {
  for (Epoch& e : closed_) give_back(e);
}

size_t FreeEpochs::pending_blocks() const {
  size_t n = open_.size();
  for (const Epoch& e : closed_) n += e.blocks.size();
  return n;
}

void FreeEpochs::give_back(Epoch& e) {
  for (const sync::PooledEvent& ev : e.events) sync::give_event(ev);
  e.events.clear();
  e.drains.clear();
}

bool FreeEpochs::record(const std::vector<cudaStream_t>& streams, Epoch* epoch) {
  for (cudaStream_t s : streams) {
    // An event recorded on a capturing stream becomes a node of the graph,
    // not a fence: refuse (a capture begun through the driver API, which
    // the capture hooks do not see, ends here).
    // The query itself fails (cudaErrorStreamCaptureImplicit) for the
    // legacy stream while a blocking stream captures: refuse then too.
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    bool queried = cuda::stream_is_capturing(s, &status) == cudaSuccess;
    if (!queried) cuda::get_last_error();
    if (!queried || status != cudaStreamCaptureStatusNone) {
      give_back(*epoch);
      return false;
    }
    sync::PooledEvent ev = sync::take_event(device_, sync::EventKind::kNoTiming);
    if (!ev || cuda::event_record(ev.event, s) != cudaSuccess) {
      cuda::get_last_error();
      sync::give_event(ev);
      give_back(*epoch);
      return false;
    }
    epoch->events.push_back(ev);
  }
  return true;
}

bool FreeEpochs::close() {
  if (open_.empty()) return true;
  Fences f = fences(device_);
  Epoch epoch;
  if (!record(f.streams, &epoch)) return false;
  epoch.drains = std::move(f.drains);
  epoch.blocks.swap(open_);
  closed_.push_back(std::move(epoch));
  ++closed_count_;
  return true;
}

bool FreeEpochs::close_on(std::vector<uint64_t> blocks, std::vector<cudaStream_t> streams, bool with_fences) {
  if (blocks.empty()) return true;
  Epoch epoch;
  Fences f;  // with_fences: holds the registry until the events are recorded
  if (with_fences) {
    f = fences(device_);
    for (cudaStream_t s : f.streams)
      if (std::find(streams.begin(), streams.end(), s) == streams.end()) streams.push_back(s);
    epoch.drains = std::move(f.drains);
  }
  if (!record(streams, &epoch)) {
    open_.insert(open_.end(), blocks.begin(), blocks.end());
    return false;
  }
  epoch.blocks = std::move(blocks);
  closed_.push_back(std::move(epoch));
  ++closed_count_;
  return true;
}

bool FreeEpochs::complete(const Epoch& e) const {
  for (const sync::PooledEvent& ev : e.events)
    if (cuda::event_query(ev.event) != cudaSuccess) return false;
  for (const auto& d : e.drains)
    if (d->event && cuda::event_query(d->event) != cudaSuccess) return false;
  return true;
}

void FreeEpochs::poll(std::vector<uint64_t>* ready) {
  // Every epoch is queried: one fenced on a busy stream must not hold back
  // later ones fenced on idle streams. complete() stops at the first
  // incomplete event, so a pending epoch costs one query.
  for (auto e = closed_.begin(); e != closed_.end();) {
    if (!complete(*e)) {
      ++e;
      continue;
    }
    ready->insert(ready->end(), e->blocks.begin(), e->blocks.end());
    give_back(*e);
    e = closed_.erase(e);
  }
}

double FreeEpochs::wait_all(std::vector<uint64_t>* ready) {
  double start = clock::monotonic_seconds();
  if (!close()) {
    // Could not fence the open epoch: the only safe way left is to wait
    // for the whole device, as cudaFree would have.
    cuda::device_synchronize();
    ready->insert(ready->end(), open_.begin(), open_.end());
    open_.clear();
  }
  for (Epoch& e : closed_) {
    for (const sync::PooledEvent& ev : e.events) cuda::event_synchronize(ev.event);
    for (const auto& d : e.drains)
      if (d->event) cuda::event_synchronize(d->event);
    ready->insert(ready->end(), e.blocks.begin(), e.blocks.end());
    give_back(e);
  }
  closed_.clear();
  return clock::monotonic_seconds() - start;
}

}  // namespace sync
}  // namespace gpuslack

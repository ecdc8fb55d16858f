#include "stage/drain_probe.h"

#include <chrono>

#include "cuda/runtime_api.h"

namespace gpuslack {
namespace stage {
namespace {

constexpr uint64_t kRecalibrateNs = 60ull * 1000 * 1000 * 1000;
constexpr int kPollBatch = 8;
constexpr uint64_t kCalibrateNs = 50 * 1000;
constexpr uint64_t kRetryNs = 10ull * 1000 * 1000;

}  // namespace

uint64_t DrainProbes::now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

DrainProbes::~DrainProbes() {
  for (const Probe& p : pending_) sync::give_event(p.event);
  for (Reference& r : refs_) {
    if (r.event) cuda::event_destroy(r.event);
    if (r.stream) cuda::stream_destroy(r.stream);
  }
  cuda::get_last_error();
}

void DrainProbes::start(const StreamRef& s, uint64_t call_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  sync::PooledEvent e;
  if (pending_.size() < kMaxPending) e = sync::take_event(s.device, sync::EventKind::kTiming);
  if (!e || cuda::event_record(e.event, s.handle) != cudaSuccess) {
    if (e) {
      cuda::get_last_error();
      sync::give_event(e);
    }
    ++figures_.skipped;
    return;
  }
  pending_.push_back({e, call_ns});
}

// The reference of `device` (the current device), made or refreshed now:
// an event on a private non-blocking stream with nothing else on it, so
// that it completes as soon as it is recorded.
DrainProbes::Reference* DrainProbes::reference_locked(int device) {
  Reference* r = nullptr;
  for (Reference& x : refs_)
    if (x.device == device) r = &x;
  if (!r) {
    refs_.push_back({device});
    r = &refs_.back();
  }
  uint64_t now = now_ns();
  if (r->event && r->host_ns != 0 && now - r->host_ns < kRecalibrateNs) return r;
  if (now < r->next_try_ns) return nullptr;  // the last try failed: not again so soon
  r->next_try_ns = now + kRetryNs;
  if (!r->stream && cuda::stream_create_with_flags(&r->stream, cudaStreamNonBlocking) != cudaSuccess) {
    cuda::get_last_error();
    r->stream = nullptr;
    return nullptr;
  }
  if (!r->event && cuda::event_create(&r->event, cudaEventDefault) != cudaSuccess) {
    cuda::get_last_error();
    r->event = nullptr;
    return nullptr;
  }
  uint64_t before = now_ns();
  if (cuda::event_record(r->event, r->stream) != cudaSuccess) {
    cuda::get_last_error();
    return nullptr;
  }
  // The GPU reaches it between the record and the first query that sees
  // it done. Never a long wait on a copy's path: if it is not done within
  // kCalibrateNs (the device is held up), try again at a later poll.
  for (;;) {
    cudaError_t q = cuda::event_query(r->event);
    uint64_t now = now_ns();
    if (q == cudaSuccess) {
      r->host_ns = before + (now - before) / 2;
      return r;
    }
    if (q != cudaErrorNotReady) cuda::get_last_error();
    if (q != cudaErrorNotReady || now - before > kCalibrateNs) {
      r->host_ns = 0;
      return nullptr;
    }
  }
}

void DrainProbes::poll() {
  std::lock_guard<std::mutex> lock(mu_);
  int looked = 0;
  for (auto it = pending_.begin(); it != pending_.end() && looked < kPollBatch; ++looked) {
    cudaError_t q = cuda::event_query(it->event.event);
    if (q == cudaErrorNotReady) {
      ++it;
      continue;
    }
    if (q == cudaSuccess) {
      int current = 0;
      Reference* ref = nullptr;
      if (cuda::get_device(&current) == cudaSuccess && current == it->event.device) ref = reference_locked(current);
      if (!ref) {
        cuda::get_last_error();
        ++it;  // resolved later, from a thread on its device
        continue;
      }
      float ms = 0;
      if (cuda::event_elapsed_ms(&ms, ref->event, it->event.event) == cudaSuccess) {
        double done = static_cast<double>(ref->host_ns) + static_cast<double>(ms) * 1e6;
        double drained = done - static_cast<double>(it->call_ns);
        figures_.drained_ns += drained > 0 ? static_cast<uint64_t>(drained) : 0;
        ++figures_.probes;
      } else {
        cuda::get_last_error();
        ++figures_.skipped;
      }
    } else {
      cuda::get_last_error();
      ++figures_.skipped;
    }
    sync::give_event(it->event);
    it = pending_.erase(it);
  }
}

DrainFigures DrainProbes::figures() const {
  std::lock_guard<std::mutex> lock(mu_);
  DrainFigures f = figures_;
  f.pending = pending_.size();
  return f;
}

}  // namespace stage
}  // namespace gpuslack

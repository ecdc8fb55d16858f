#include "sync/stream_registry.h"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "cuda/runtime_api.h"

namespace gpuslack {
namespace sync {
namespace {

struct Entry {
  cudaStream_t stream;
  int device;
  std::shared_ptr<OwnedEvent> drain;  // set when destroyed: completes when its work has
};

std::mutex g_mu;
std::vector<Entry>* g_streams = nullptr;  // leaked: used until exit
std::vector<cudaStream_t>* g_capturing = nullptr;  // under g_mu; leaked
std::atomic<int> g_capture_count{0};
thread_local bool t_capture_scope = false;  // CaptureScope

std::vector<Entry>& streams() {
  if (!g_streams) g_streams = new std::vector<Entry>();
  return *g_streams;
}

}  // namespace

OwnedEvent::~OwnedEvent() {
  if (event) cuda::event_destroy(event);
}

void stream_created(cudaStream_t stream, int device, unsigned int flags) {
  if (!(flags & cudaStreamNonBlocking)) return;  // covered by the legacy stream's event
  std::lock_guard<std::mutex> lock(g_mu);
  streams().push_back({stream, device, nullptr});
}

void stream_destroying(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(g_mu);
  for (Entry& e : streams()) {
    if (e.stream != stream || e.drain) continue;
    // Its queued work still runs after cudaStreamDestroy returns: fence
    // frees against it until this event completes.
    cudaEvent_t ev = nullptr;
    if (cuda::event_create(&ev, cudaEventDisableTiming) == cudaSuccess &&
        cuda::event_record(ev, stream) == cudaSuccess) {
      e.drain = std::make_shared<OwnedEvent>(ev);
    } else {
      // Cannot fence it: wait for its work now instead (rare; a stall).
      if (ev) cuda::event_destroy(ev);
      cuda::get_last_error();
      cuda::device_synchronize();
      e.drain = std::make_shared<OwnedEvent>();  // an empty event: nothing to wait for
    }
  }
}

Fences fences(int device) {
  Fences f;
  f.streams.push_back(cudaStreamLegacy);
  f.held = std::unique_lock<std::mutex>(g_mu);  // until the caller has recorded
  auto& all = streams();
  // Drop destroyed streams whose work has finished.
  all.erase(std::remove_if(all.begin(), all.end(),
                           [](const Entry& e) {
                             return e.drain && (!e.drain->event || cuda::event_query(e.drain->event) == cudaSuccess);
                           }),
            all.end());
  for (const Entry& e : all) {
    if (e.device != device) continue;
    if (e.drain) f.drains.push_back(e.drain);
    else f.streams.push_back(e.stream);
  }
  return f;
}

void capture_began(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_capturing) g_capturing = new std::vector<cudaStream_t>();
  g_capturing->push_back(stream);
  g_capture_count.store(static_cast<int>(g_capturing->size()), std::memory_order_release);
}

void capture_ended(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_capturing) return;
  auto it = std::find(g_capturing->begin(), g_capturing->end(), stream);
  if (it == g_capturing->end()) return;  // not a capture we saw begin
  g_capturing->erase(it);
  g_capture_count.store(static_cast<int>(g_capturing->size()), std::memory_order_release);
}

bool capturing() { return g_capture_count.load(std::memory_order_acquire) > 0 || t_capture_scope; }

CaptureScope::CaptureScope(bool capturing) : previous_(t_capture_scope) { t_capture_scope = previous_ || capturing; }
CaptureScope::~CaptureScope() { t_capture_scope = previous_; }

void reset_streams() {
  std::lock_guard<std::mutex> lock(g_mu);
  streams().clear();
  if (g_capturing) g_capturing->clear();
  g_capture_count.store(0);
}

}  // namespace sync
}  // namespace gpuslack

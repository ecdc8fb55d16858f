#include "stage/stream_ref.h"

#include <atomic>

#include "cuda/runtime_api.h"

namespace gpuslack {
namespace stage {
namespace {

constexpr uint64_t kLegacyTag = 1ull << 63;
constexpr uint64_t kPerThreadTag = 1ull << 62;

// A small number per thread, never reused within the process.
uint64_t thread_number() {
  static std::atomic<uint64_t> next{1};
  thread_local uint64_t mine = next.fetch_add(1, std::memory_order_relaxed);
  return mine;
}

}  // namespace

StreamRef stream_ref(cudaStream_t s, bool per_thread_default) {
  StreamRef r;
  if (s == nullptr) s = per_thread_default ? cudaStreamPerThread : cudaStreamLegacy;
  r.handle = s;
  int device = 0;
  if (cuda::get_device(&device) != cudaSuccess) {
    cuda::get_last_error();  // no device: the copy itself will say so
    device = 0;
  }
  r.device = device;
  if (s == cudaStreamLegacy) {
    r.legacy = true;
    r.key = kLegacyTag | static_cast<uint32_t>(device);
  } else if (s == cudaStreamPerThread) {
    r.per_thread = true;
    r.key = kPerThreadTag | (thread_number() << 16) | (static_cast<uint32_t>(device) & 0xffff);
  } else {
    r.key = reinterpret_cast<uintptr_t>(s);
  }
  return r;
}

bool is_blocking(const StreamRef& s) {
  if (s.legacy) return false;
  if (s.per_thread) return true;
  unsigned int flags = 0;
  if (cuda::stream_get_flags(s.handle, &flags) != cudaSuccess) {
    cuda::get_last_error();
    return true;
  }
  return !(flags & cudaStreamNonBlocking);
}

}  // namespace stage
}  // namespace gpuslack

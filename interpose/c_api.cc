// The public C API (include/gpuslack/gpuslack.h). Defined here, in the
// shared library's own objects, because symbols from static archives are
// hidden by --exclude-libs.
#include "gpuslack/gpuslack.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "sync/stream_registry.h"
#include "alloc/block_ipc.h"
#include "alloc/process_allocators.h"
#include "pin/process_heap.h"
#include "cuda/runtime_api.h"
#include "ledger/host_activity.h"
#include "hooked_calls.h"
#include "session_start.h"
#include "log/log.h"
#include "build_info.h"
#include "session/session.h"
#include "report/knobs_json.h"
#include "report/labels.h"
#include "report/units.h"
#include "report/summary_reader.h"
#include "report/text.h"

// Helpers of the stream-ordered device memory functions.
namespace {

using gpuslack::alloc::DeviceAllocator;

// Runs `fn` with `device` current (the allocator is made, and its driver
// calls answer, for the current device), restoring the caller's device.
template <typename Fn>
auto on_device(int device, Fn fn) {
  int current = -1;
  bool switched = gpuslack::cuda::get_device(&current) == cudaSuccess && current != device &&
                  gpuslack::cuda::set_device(device) == cudaSuccess;
  auto result = fn();
  if (switched) gpuslack::cuda::set_device(current);
  return result;
}

// One line per kind of misuse, at most: a buggy caller must not flood the log.
void misuse(std::atomic<bool>& logged, const char* what, const void* p) {
  if (!logged.exchange(true)) gpuslack::log::warn("{} {} (ignored; logged once)", what, p);
}

cudaStream_t stream_of(CUstream_st* s) { return reinterpret_cast<cudaStream_t>(s); }

// Whether `stream` captures a graph now, asked of the runtime on every call
// (Note [Capture without hooks] in alloc/device_allocator.h): without
// LD_PRELOAD no hook saw the capture begin. `graph` is null when the
// runtime would not say (an error, such as the legacy stream used while
// another stream captures): then the call is handled as one during an
// unknown capture (Note [Frees during capture]).
struct StreamCapture {
  bool active = false;
  DeviceAllocator::Capture graph{0, nullptr};
};

StreamCapture capture_of(cudaStream_t stream) {
  StreamCapture c;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (gpuslack::cuda::stream_get_capture_info(stream, &status, &c.graph.id, &c.graph.graph) != cudaSuccess) {
    gpuslack::cuda::get_last_error();  // our question's error is not the caller's
    c.active = gpuslack::sync::capturing();
    c.graph = {0, nullptr};
    return c;
  }
  c.active = status != cudaStreamCaptureStatusNone;  // an invalidated capture too: it is not over
  if (!c.active || !c.graph.graph) c.graph = {0, nullptr};
  return c;
}

// A malloc'd copy the caller frees with gpuslack_free; NULL if out of memory.
char* copy_string(const std::string& s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out) std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

// A renderer's answer: 0 with the text, or -1 with the error's line (and
// "out of memory" when the copy fails); either pointer may be NULL.
int answer(const std::string& text, const std::string& error, char** text_out, char** error_out) {
  if (error.empty()) {
    if (text_out && !(*text_out = copy_string(text))) {
      if (error_out) *error_out = copy_string("out of memory");
      return -1;
    }
    return 0;
  }
  if (error_out) *error_out = copy_string(error);
  return -1;
}

}  // namespace

extern "C" {

GPUSLACK_API const char* gpuslack_version(void) { return GPUSLACK_VERSION_STRING; }

GPUSLACK_API const char* gpuslack_build_info(void) {
  // Built once; leaked so that it stays valid during process exit.
  static const std::string* info = new std::string(gpuslack::build_info());
  return info->c_str();
}

GPUSLACK_API char* gpuslack_knobs_json(const char* conf, const char* output, int secure) {
  try {
    return copy_string(gpuslack::report::knobs_json(conf, output, secure != 0));
  } catch (...) {  // std::bad_alloc: the API never throws into its caller
    return nullptr;
  }
}

GPUSLACK_API char* gpuslack_summary_json(void) {
  try {
    std::string json = gpuslack::session::summary_json();
    if (json.empty()) return nullptr;
    return copy_string(json);
  } catch (...) {
    return nullptr;
  }
}

GPUSLACK_API int gpuslack_render_summary(const char* json_path, char** text_out, char** error_out) {
  if (text_out) *text_out = nullptr;
  if (error_out) *error_out = nullptr;
  std::string text, error;
  try {
    gpuslack::report::Summary summary;
    if (!json_path) {
      error = "no summary file named (json_path is NULL)";
    } else if (gpuslack::report::read_summary_file(json_path, &summary, &error) && text_out) {
      text = gpuslack::report::format_text(summary);  // no text asked for: a check only
    }
  } catch (...) {
    error = "out of memory";
  }
  return answer(text, error, text_out, error_out);
}

GPUSLACK_API int gpuslack_format_figure(const char* unit, double value, char* buf, size_t size) {
  if (!buf || size < 32) return -1;
  try {
    std::string text;
    if (!gpuslack::report::format_figure(unit, value, &text)) return -1;
    const size_t n = std::min(text.size(), size - 1);
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
    return static_cast<int>(n);
  } catch (...) {
    return -1;
  }
}

GPUSLACK_API char* gpuslack_labels_json(void) {
  try {
    const gpuslack::interpose::HookedCalls hooked = gpuslack::interpose::hooked_calls();
    return copy_string(gpuslack::report::labels_json(hooked.calls, hooked.count));
  } catch (...) {
    return nullptr;
  }
}

GPUSLACK_API int gpuslack_render_findings(const char* findings_json, int width, int indent, int parts,
                                          char** text_out, char** error_out) {
  if (text_out) *text_out = nullptr;
  if (error_out) *error_out = nullptr;
  std::string text, error;
  try {
    gpuslack::report::FindingsLayout layout;
    layout.width = width > 0 ? static_cast<size_t>(width) : layout.width;
    layout.indent = indent > 0 ? static_cast<size_t>(indent) : 0;
    layout.heading = (parts & (GPUSLACK_FINDINGS_NO_HEADING | GPUSLACK_FINDINGS_BRIEF | GPUSLACK_FINDINGS_BODY)) == 0;
    layout.brief = (parts & GPUSLACK_FINDINGS_BRIEF) != 0;
    layout.body_only = (parts & GPUSLACK_FINDINGS_BODY) != 0;
    if (!findings_json) error = "no findings given (findings_json is NULL)";
    else gpuslack::report::render_findings_json(findings_json, layout, &text, &error);
  } catch (...) {
    error = "out of memory";
  }
  return answer(text, error, text_out, error_out);
}

GPUSLACK_API int gpuslack_write_summary(void) {
  if (!gpuslack::session::active()) return -1;
  gpuslack::session::write_summary("api");
  return 0;
}

GPUSLACK_API void gpuslack_step(void) { gpuslack::ledger::mark_step(); }

GPUSLACK_API unsigned long long gpuslack_launch_count(void) { return gpuslack::ledger::launches(); }

GPUSLACK_API int gpuslack_device_stats_get(int device, gpuslack_device_stats* out) {
  gpuslack::alloc::DeviceAllocator* a = gpuslack::alloc::existing_allocator(device);
  if (!a || !out) return -1;
  gpuslack::alloc::DeviceStats s = a->stats();
  *out = gpuslack_device_stats{s.allocated,       s.peak_allocated,    s.reserved,    s.peak_reserved,
                               s.largest_free,    s.pending_free,      s.allocations, s.frees,
                               s.granules_mapped, s.granules_unmapped, s.oom_retries, s.stall_s,
                               s.failed_allocations};
  return 0;
}

GPUSLACK_API void gpuslack_reset_peak_stats(int device) {
  for (int d = 0; d < gpuslack::alloc::kMaxDevices; ++d) {
    if (device >= 0 && d != device) continue;
    if (gpuslack::alloc::DeviceAllocator* a = gpuslack::alloc::existing_allocator(d)) a->reset_peaks();
  }
}

GPUSLACK_API unsigned long long gpuslack_trim(int device) {
  unsigned long long released = 0;
  for (int d = 0; d < gpuslack::alloc::kMaxDevices; ++d) {
    if (device >= 0 && d != device) continue;
    if (gpuslack::alloc::DeviceAllocator* a = gpuslack::alloc::existing_allocator(d)) released += a->trim();
  }
  return released;
}

GPUSLACK_API int gpuslack_pinned_stats_get(gpuslack_pinned_stats* out) {
  gpuslack::pin::PinnedHeap* heap = gpuslack::pin::existing_pinned_heap();
  if (!heap || !out) return -1;
  gpuslack::pin::PinnedStats s = heap->stats();
  *out = gpuslack_pinned_stats{s.pinned,      s.peak_pinned, s.live,         s.peak_live, s.cap,
                               s.chunks,      s.allocations, s.frees,        s.pending_free,
                               s.cap_hits,    s.fallbacks,   s.passthrough,  s.trimmed,   s.stall_s};
  return 0;
}

GPUSLACK_API unsigned long long gpuslack_pinned_trim(void) {
  gpuslack::pin::PinnedHeap* heap = gpuslack::pin::existing_pinned_heap();
  return heap ? heap->trim() : 0;
}

// ------------------------------------------- stream-ordered device memory ---

GPUSLACK_API void* gpuslack_device_alloc(ssize_t size, int device, CUstream_st* stream) {
  if (size <= 0 || device < 0 || device >= gpuslack::alloc::kMaxDevices) return nullptr;
  gpuslack::interpose::ensure_session();
  const StreamCapture capture = capture_of(stream_of(stream));
  gpuslack::sync::CaptureScope scope(capture.active);
  void* p = on_device(device, [&]() -> void* {
    DeviceAllocator* a = gpuslack::alloc::device_allocator(device);
    if (!a) return nullptr;
    if (capture.graph.graph) return a->allocate_in_capture(static_cast<size_t>(size), capture.graph);
    std::optional<cudaStream_t> on = gpuslack::alloc::ordered_stream(stream_of(stream), false);
    return on ? a->allocate(static_cast<size_t>(size), *on) : a->allocate(static_cast<size_t>(size));
  });
  if (!p)
    gpuslack::log::warn("gpuslack_device_alloc: no block of {} bytes on device {}{}", size, device,
                        capture.active ? " during a CUDA graph capture" : "");
  return p;
}

GPUSLACK_API void gpuslack_device_free(void* ptr, size_t size, int device, CUstream_st* stream) {
  static std::atomic<bool> foreign{false}, mismatch{false}, twice{false};
  if (!ptr) return;
  DeviceAllocator* a = gpuslack::alloc::owner(ptr);
  if (!a) return misuse(foreign, "gpuslack_device_free: not memory of gpuslack's allocator:", ptr);
  size_t block = 0;
  void* start = a->block_of(ptr, &block);
  if (start != ptr) return misuse(twice, "gpuslack_device_free: not a live block (freed twice?):", ptr);
  if (a->device() != device || gpuslack::alloc::BlockManager::round_up(size) != block)
    return misuse(mismatch, "gpuslack_device_free: size or device differ from the allocation's:", ptr);
  const StreamCapture capture = capture_of(stream_of(stream));
  gpuslack::sync::CaptureScope scope(capture.active);
  gpuslack::alloc::ipc_block_freed(ptr);  // its IPC export ends
  bool freed;
  if (capture.graph.graph) {
    freed = a->free_in_capture(ptr, capture.graph);
  } else {
    std::optional<cudaStream_t> on = gpuslack::alloc::ordered_stream(stream_of(stream), false);
    freed = a->free(ptr, on);
  }
  if (!freed) misuse(twice, "gpuslack_device_free: freed twice:", ptr);
}

GPUSLACK_API void gpuslack_record_stream(void* ptr, CUstream_st* stream) {
  if (DeviceAllocator* a = ptr ? gpuslack::alloc::owner(ptr) : nullptr) {
    // The per-thread default stream names a stream only in the calling
    // thread, and the free may run in another: fence on every stream.
    std::optional<cudaStream_t> on = gpuslack::alloc::ordered_stream(stream_of(stream), false);
    a->record_stream(ptr, on ? *on : cudaStreamLegacy);
  }
}

GPUSLACK_API void gpuslack_device_init(int device) {
  if (device < 0 || device >= gpuslack::alloc::kMaxDevices) return;
  gpuslack::interpose::ensure_session();
  on_device(device, [&] { return gpuslack::alloc::device_allocator(device); });
}

GPUSLACK_API void gpuslack_init(int device_count) {
  for (int d = 0; d < device_count && d < gpuslack::alloc::kMaxDevices; ++d) gpuslack_device_init(d);
}

GPUSLACK_API void gpuslack_reset(void) { gpuslack_trim(-1); }

GPUSLACK_API void gpuslack_set_memory_fraction(double fraction, int device) {
  if (device < 0 || device >= gpuslack::alloc::kMaxDevices) return;
  bool done = on_device(device, [&] { return gpuslack::alloc::set_memory_fraction(device, fraction); });
  if (!done) gpuslack::log::warn("gpuslack_set_memory_fraction({}, {}): not applied (fraction must be in (0, 1], "
                                 "and the device served by the VMM allocator)", fraction, device);
}

GPUSLACK_API void* gpuslack_base_alloc(void* ptr, size_t* size) {
  size_t ignored = 0;
  if (!size) size = &ignored;
  *size = 0;
  DeviceAllocator* a = ptr ? gpuslack::alloc::owner(ptr) : nullptr;
  return a ? a->block_of(ptr, size) : nullptr;
}

GPUSLACK_API void gpuslack_free(void* p) { std::free(p); }

}  // extern "C"

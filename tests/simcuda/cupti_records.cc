// libcupti.so.13 of the simulated device: activity records and CUPTI's
// timebase (README.md, "CUPTI"), after docs.nvidia.com/cupti "CUPTI
// Activity API" and the comments of cupti_activity.h 13.2.
//
//   - Records: CUpti_ActivityKernel11 (kind CONCURRENT_KERNEL when enabled,
//     else KERNEL), CUpti_ActivityMemcpy6, CUpti_ActivityMemset4, made from
//     the simulated device's own start and end of each op (libgpusim's
//     activity sink, sim.h, calling on_op on the op's stream worker), packed
//     one after another in each channel's buffers (cupti_activity.cc), which
//     cuptiActivityGetNextRecord walks.
//   - Timestamps: CUPTI's Linux timebase is CLOCK_REALTIME ("By default CUPTI
//     uses ... clock_gettime(CLOCK_REALTIME)", cuptiActivityRegisterTimestampCallback),
//     so records and cuptiGetTimestamp are the device's CLOCK_MONOTONIC stamps
//     moved by a fixed offset sampled once; a registered timestamp callback
//     replaces the timebase, GPU times being converted at post-processing.
#include <cstring>
#include <ctime>

#include "cupti_internal.h"

namespace cuptisim {
namespace {

std::atomic<int64_t> g_grid_id{0};

// ------------------------------------------------------------- timebase --

std::atomic<CUpti_TimestampCallbackFunc> g_timestamp_cb{nullptr};

int64_t realtime_minus_monotonic() {
  static const int64_t offset = [] {
    timespec rt{};
    clock_gettime(CLOCK_REALTIME, &rt);
    int64_t mono = gpusim::now_ns();
    return static_cast<int64_t>(rt.tv_sec) * 1000000000 + rt.tv_nsec - mono;
  }();
  return offset;
}

uint8_t memory_kind(gpusim::Where w) {
  switch (w) {
    case gpusim::Where::kDevice: return CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    case gpusim::Where::kPinned: return CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    case gpusim::Where::kPageable: return CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  }
  return CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN;
}

uint8_t copy_kind(const gpusim::OpInfo& i) {
  using gpusim::Where;
  if (i.src == Where::kDevice && i.dst == Where::kDevice)
    return i.peer ? CUPTI_ACTIVITY_MEMCPY_KIND_PTOP : CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
  if (i.src == Where::kDevice) return CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  if (i.dst == Where::kDevice) return CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  return CUPTI_ACTIVITY_MEMCPY_KIND_HTOH;
}

// libgpusim's sink: one finished op, on its stream's worker thread.
}  // namespace

void on_op(const gpusim::OpRecord& op) {
  set_record_thread(op.info.launcher);  // its buffers: the launching thread's
  const uint64_t start = to_cupti_time(op.start_ns);
  const uint64_t end = start + static_cast<uint64_t>(op.end_ns - op.start_ns);
  const uint32_t device = static_cast<uint32_t>(op.device);
  const uint32_t context = device + 1;  // the primary context's id
  CUpti_ActivityKernel11 k;
  CUpti_ActivityMemcpy6 cp;
  CUpti_ActivityMemset4 ms;
  bool made = false;
  bool woke = false;
  int n = channel_count();
  for (int i = 0; i < n; ++i) {
    Channel& c = channel_at(i);
    Kinds kinds;
    {
      std::lock_guard<std::mutex> l(c.mu);
      kinds = c.kinds;
    }
    switch (op.info.kind) {
      case gpusim::OpKind::kKernel: {
        if (!kinds.kernel && !kinds.concurrent_kernel) continue;
        if (!made) {
          std::memset(&k, 0, sizeof(k));
          k.start = start;
          k.end = end;
          k.completed = end;
          k.deviceId = device;
          k.contextId = context;
          k.streamId = op.stream_id;
          // The launch's shape (sim.h's KernelShape): grid, block,
          // registers, shared memory, as the record's fields.
          const gpusim::KernelShape& sh = op.info.shape;
          k.gridX = static_cast<int32_t>(sh.grid[0]);
          k.gridY = static_cast<int32_t>(sh.grid[1]);
          k.gridZ = static_cast<int32_t>(sh.grid[2]);
          k.blockX = static_cast<int32_t>(sh.block[0]);
          k.blockY = static_cast<int32_t>(sh.block[1]);
          k.blockZ = static_cast<int32_t>(sh.block[2]);
          k.registersPerThread = static_cast<uint16_t>(sh.registers);
          k.staticSharedMemory = static_cast<int32_t>(sh.static_shared);
          k.dynamicSharedMemory = static_cast<int32_t>(sh.dynamic_shared);
          k.correlationId = op.info.correlation;
          k.gridId = g_grid_id.fetch_add(1, std::memory_order_relaxed) + 1;
          k.name = op.info.name ? op.info.name : "gpusim_kernel";
          k.queued = k.submitted = CUPTI_TIMESTAMP_UNKNOWN;
          k.launchType = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
          made = true;
        }
        k.kind = kinds.concurrent_kernel ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL : CUPTI_ACTIVITY_KIND_KERNEL;
        woke |= append(c, &k, sizeof(k));
        break;
      }
      case gpusim::OpKind::kMemcpy: {
        if (!kinds.memcpy) continue;
        if (!made) {
          std::memset(&cp, 0, sizeof(cp));
          cp.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
          cp.copyKind = copy_kind(op.info);
          cp.srcKind = memory_kind(op.info.src);
          cp.dstKind = memory_kind(op.info.dst);
          cp.bytes = op.info.bytes;
          cp.start = start;
          cp.end = end;
          cp.deviceId = device;
          cp.contextId = context;
          cp.streamId = op.stream_id;
          cp.correlationId = op.info.correlation;
          cp.copyCount = 1;
          made = true;
        }
        woke |= append(c, &cp, sizeof(cp));
        break;
      }
      case gpusim::OpKind::kMemset: {
        if (!kinds.memset) continue;
        if (!made) {
          std::memset(&ms, 0, sizeof(ms));
          ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
          ms.value = op.info.memset_value;
          ms.bytes = op.info.bytes;
          ms.start = start;
          ms.end = end;
          ms.deviceId = device;
          ms.contextId = context;
          ms.streamId = op.stream_id;
          ms.correlationId = op.info.correlation;
          ms.memoryKind = memory_kind(op.info.dst);
          made = true;
        }
        woke |= append(c, &ms, sizeof(ms));
        break;
      }
      case gpusim::OpKind::kOther:
        return;
    }
  }
  if (woke) wake_worker();
}

namespace {

size_t record_size(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel11);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    default: return 0;
  }
}

}  // namespace

uint64_t cupti_now() {
  if (CUpti_TimestampCallbackFunc cb = g_timestamp_cb.load(std::memory_order_acquire)) return cb();
  return static_cast<uint64_t>(gpusim::now_ns() + realtime_minus_monotonic());
}

uint64_t to_cupti_time(int64_t steady_ns) {
  if (CUpti_TimestampCallbackFunc cb = g_timestamp_cb.load(std::memory_order_acquire))
    return cb() - static_cast<uint64_t>(gpusim::now_ns() - steady_ns);
  return static_cast<uint64_t>(steady_ns + realtime_minus_monotonic());
}

}  // namespace cuptisim

using namespace cuptisim;

CUPTISIM_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid_bytes, CUpti_Activity** record) {
  if (!buffer || !record) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t offset = 0;
  if (*record) {
    auto* at = reinterpret_cast<uint8_t*>(*record);
    if (at < buffer || at >= buffer + valid_bytes) return CUPTI_ERROR_INVALID_PARAMETER;
    size_t size = record_size((*record)->kind);
    if (size == 0) return CUPTI_ERROR_INVALID_KIND;
    offset = static_cast<size_t>(at - buffer) + size;
  }
  if (offset >= valid_bytes) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  if (valid_bytes - offset < sizeof(CUpti_ActivityKind)) return CUPTI_ERROR_INVALID_KIND;
  auto* next = reinterpret_cast<CUpti_Activity*>(buffer + offset);
  size_t size = record_size(next->kind);
  if (size == 0 || offset + size > valid_bytes) return CUPTI_ERROR_INVALID_KIND;
  *record = next;
  return CUPTI_SUCCESS;
}

// ---- timestamps ----

CUPTISIM_EXPORT CUptiResult cuptiGetTimestamp(uint64_t* timestamp) {
  if (!timestamp) return CUPTI_ERROR_INVALID_PARAMETER;
  *timestamp = cupti_now();
  return CUPTI_SUCCESS;
}

CUPTISIM_EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn) {
  if (!fn) return CUPTI_ERROR_INVALID_PARAMETER;
  g_timestamp_cb.store(fn, std::memory_order_release);
  return CUPTI_SUCCESS;
}

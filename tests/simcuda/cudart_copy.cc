// libcudart.so.13 of the simulated device: copies and memsets, with the
// blocking rules of "API synchronization behavior" for each kind of memory.
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "cudart_internal.h"

using namespace gpusim;
using namespace gpusim::rt;

namespace {

// ---------------------------------------------------------------- copies --

// A (possibly 2D) copy: `height` rows of `width` bytes.
struct Rows {
  char* dst;
  const char* src;
  size_t dpitch, spitch, width, height;
  size_t bytes() const { return width * height; }
  size_t dst_span() const { return height ? dpitch * (height - 1) + width : 0; }
  size_t src_span() const { return height ? spitch * (height - 1) + width : 0; }
  void run() const {
    if (dpitch == width && spitch == width) {
      std::memmove(dst, src, bytes());
      return;
    }
    for (size_t r = 0; r < height; ++r) std::memmove(dst + r * dpitch, src + r * spitch, width);
  }
};

enum class Api { kAsync, kSync };

// The driver's staging memory for pageable host->device copies: reused, as
// the driver's own pinned staging buffers are, so that a copy costs the one
// host copy the model charges for, not fresh pages (faults, zeroing).
std::shared_ptr<char> staging_buffer(size_t n) {
  static std::mutex mu;
  static auto* free_lists = new std::multimap<size_t, char*>();  // by capacity; never freed
  size_t cap = 4096;
  while (cap < n) cap *= 2;
  char* p = nullptr;
  {
    std::lock_guard<std::mutex> l(mu);
    auto it = free_lists->find(cap);
    if (it != free_lists->end()) {
      p = it->second;
      free_lists->erase(it);
    }
  }
  if (!p) p = new char[cap];
  return std::shared_ptr<char>(p, [cap](char* q) {
    std::lock_guard<std::mutex> l(mu);
    free_lists->emplace(cap, q);
  });
}

// A GPU op that performs `rows` and takes `us` of GPU time.
std::function<void()> timed(Rows rows, double us) {
  return [rows, us] {
    auto t0 = Clock::now();
    rows.run();
    wait_until(after(t0, us));
  };
}

// What CUPTI's memcpy record says of a copy that takes `us` of GPU time.
OpInfo copy_info(const Rows& c, Where src, Where dst, int sdev, int ddev, double us) {
  OpInfo info;
  info.modeled_ns = static_cast<uint64_t>(us * 1000);
  info.kind = OpKind::kMemcpy;
  info.src = src;
  info.dst = dst;
  info.peer = src == Where::kDevice && dst == Where::kDevice && sdev != ddev;
  info.bytes = c.bytes();
  return info;
}

cudaError_t copy(Rows c, CUstream_st* s, Api api) {
  if (c.bytes() == 0) return cudaSuccess;
  if (!c.dst || !c.src) return cudaErrorInvalidValue;
  int sdev = 0, ddev = 0;
  Where src = classify(c.src, c.src_span(), &sdev);
  Where dst = classify(c.dst, c.dst_span(), &ddev);
  // A device pointer must lie inside a live allocation.
  Region r;
  if ((src == Where::kPageable && Memory::get().find(c.src, 1, &r)) ||
      (dst == Where::kPageable && Memory::get().find(c.dst, 1, &r)))
    return cudaErrorInvalidValue;
  if (cudaError_t e = check_legacy(s)) return e;
  const Config& cfg = config();
  bool host_src = src != Where::kDevice, host_dst = dst != Where::kDevice;
  bool pageable = src == Where::kPageable || dst == Where::kPageable;

  if (is_capturing(s) && (pageable || (host_src && host_dst))) {
    invalidate_capture(s);
    return cudaErrorStreamCaptureUnsupported;
  }

  if (host_src && host_dst) {
    // Host to host: fully synchronous with respect to the host.
    drain_stream(s);
    auto t0 = Clock::now();
    c.run();
    wait_until(after(t0, transfer_us(c.bytes(), cfg.pageable_gbps)));
    return cudaSuccess;
  }
  if (host_src && src == Where::kPageable) {
    // Pageable to device: the driver synchronizes the stream (Runtime API,
    // "API synchronization behavior"), copies the buffer to pinned staging
    // and returns; the DMA may still be running. A copy of at most
    // pageable_async_bytes (64 KB) is asynchronous to the host, with no
    // drain (Programming Guide, "Concurrent Execution between Host and
    // Device"); GPUSIM_PAGEABLE_ASYNC_BYTES=0 drains every size.
    if (c.bytes() > cfg.pageable_async_bytes) drain_stream(s);
    auto t0 = Clock::now();
    std::shared_ptr<char> staged = staging_buffer(c.bytes());
    Rows in{staged.get(), c.src, c.width, c.spitch, c.width, c.height};
    in.run();
    wait_until(after(t0, transfer_us(c.bytes(), cfg.pageable_gbps)));
    Rows dma{c.dst, staged.get(), c.dpitch, c.width, c.width, c.height};
    double us = cfg.copy_latency_us + transfer_us(c.bytes(), cfg.pinned_h2d_gbps);
    enqueue(s, [dma, us, staged] {
      auto t = Clock::now();
      dma.run();
      wait_until(after(t, us));
    }, copy_info(c, src, dst, sdev, ddev, us));
    return cudaSuccess;
  }
  if (host_dst) {
    // Device to host: pageable returns only once complete (DMA to staging,
    // then the host copy); pinned is asynchronous for the Async API and
    // synchronous for cudaMemcpy.
    double us = cfg.copy_latency_us + transfer_us(c.bytes(), cfg.pinned_d2h_gbps);
    if (dst == Where::kPageable) us += transfer_us(c.bytes(), cfg.pageable_gbps);
    uint64_t seq = enqueue(s, timed(c, us), copy_info(c, src, dst, sdev, ddev, us));
    if (dst == Where::kPageable || api == Api::kSync) wait_op(s, seq);
    return cudaSuccess;
  }
  if (host_src) {
    // Pinned to device: asynchronous for the Async API; cudaMemcpy is
    // synchronous with respect to the host.
    double us = cfg.copy_latency_us + transfer_us(c.bytes(), cfg.pinned_h2d_gbps);
    uint64_t seq = enqueue(s, timed(c, us), copy_info(c, src, dst, sdev, ddev, us));
    if (api == Api::kSync) wait_op(s, seq);
    return cudaSuccess;
  }
  // Device to device (same or peer): no host-side synchronization.
  double us = cfg.copy_latency_us + transfer_us(2 * c.bytes(), cfg.d2d_gbps);
  enqueue(s, timed(c, us), copy_info(c, src, dst, sdev, ddev, us));
  return cudaSuccess;
}

cudaError_t memset_rows(char* dst, size_t pitch, int value, size_t width, size_t height, CUstream_st* s) {
  size_t span = height ? pitch * (height - 1) + width : 0;
  if (span == 0) return cudaSuccess;
  Where w = classify(dst, span);
  if (w == Where::kPageable) return cudaErrorInvalidValue;
  if (cudaError_t e = check_legacy(s)) return e;
  double us = config().copy_latency_us + transfer_us(width * height, config().memset_gbps);
  OpInfo info;
  info.kind = OpKind::kMemset;
  info.dst = w;
  info.bytes = width * height;
  info.memset_value = static_cast<uint8_t>(value);
  info.modeled_ns = static_cast<uint64_t>(us * 1000);
  uint64_t seq = enqueue(s, [=] {
    auto t0 = Clock::now();
    for (size_t r = 0; r < height; ++r) std::memset(dst + r * pitch, value, width);
    wait_until(after(t0, us));
  }, info);
  // Memsets are asynchronous, except to pinned host memory.
  if (w == Where::kPinned && seq) wait_op(s, seq);
  return cudaSuccess;
}

}  // namespace

// ---- copies ----
#define GPUSIM_ARGS_cudaMemcpy dst, src, n, kind
GPUSIM_BOTH(cudaError_t, cudaMemcpy, (void* dst, const void* src, size_t n, cudaMemcpyKind kind), _ptds, {
  READY();
  (void)kind;
  STREAM(s, nullptr, ptds);
  return ret(copy({static_cast<char*>(dst), static_cast<const char*>(src), n, n, n, 1}, s, Api::kSync));
})
GPUSIM_INTERNAL_ALIAS(cudaError_t, cudaMemcpy, (void* dst, const void* src, size_t n, cudaMemcpyKind kind));
#define GPUSIM_ARGS_cudaMemcpyAsync dst, src, n, kind, h
GPUSIM_BOTH(cudaError_t, cudaMemcpyAsync,
            (void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t h), _ptsz, {
  READY();
  (void)kind;
  STREAM(s, h, ptds);
  return ret(copy({static_cast<char*>(dst), static_cast<const char*>(src), n, n, n, 1}, s, Api::kAsync));
})
#define GPUSIM_ARGS_cudaMemcpy2D dst, dpitch, src, spitch, w, h, kind
GPUSIM_BOTH(cudaError_t, cudaMemcpy2D,
            (void* dst, size_t dpitch, const void* src, size_t spitch, size_t w, size_t h, cudaMemcpyKind kind),
            _ptds, {
  READY();
  (void)kind;
  if (w > dpitch || w > spitch) return ret(cudaErrorInvalidPitchValue);
  STREAM(s, nullptr, ptds);
  return ret(copy({static_cast<char*>(dst), static_cast<const char*>(src), dpitch, spitch, w, h}, s, Api::kSync));
})
#define GPUSIM_ARGS_cudaMemcpy2DAsync dst, dpitch, src, spitch, w, h, kind, hs
GPUSIM_BOTH(cudaError_t, cudaMemcpy2DAsync,
            (void* dst, size_t dpitch, const void* src, size_t spitch, size_t w, size_t h, cudaMemcpyKind kind,
             cudaStream_t hs), _ptsz, {
  READY();
  (void)kind;
  if (w > dpitch || w > spitch) return ret(cudaErrorInvalidPitchValue);
  STREAM(s, hs, ptds);
  return ret(copy({static_cast<char*>(dst), static_cast<const char*>(src), dpitch, spitch, w, h}, s, Api::kAsync));
})
GPUSIM_EXPORT cudaError_t cudaMemcpyPeerAsync(void* dst, int dd, const void* src, int sd, size_t n, cudaStream_t h) {
  READY();
  if (!valid_device(dd) || !valid_device(sd)) return ret(cudaErrorInvalidDevice);
  STREAM(s, h, false);
  return ret(copy({static_cast<char*>(dst), static_cast<const char*>(src), n, n, n, 1}, s, Api::kAsync));
}
GPUSIM_INTERNAL_ALIAS(cudaError_t, cudaMemcpyPeerAsync, (void* dst, int dd, const void* src, int sd, size_t n,
                                                        cudaStream_t h));
GPUSIM_EXPORT cudaError_t cudaMemcpyPeer(void* dst, int dd, const void* src, int sd, size_t n) {
  return gpusim_internal_cudaMemcpyPeerAsync(dst, dd, src, sd, n, nullptr);  // Note [Internal calls]
}
// CUDA 12.8/12.9 pass failIdx before the stream: the index of the copy
// that failed, or SIZE_MAX when the error names none (a bad argument or
// stream); untouched on success.
#ifdef GPUSIM_CUDA12
#define GPUSIM_BATCH_FAIL_IDX size_t *fail_idx,
#define GPUSIM_BATCH_FAILED(i) (fail_idx ? (void)(*fail_idx = (i)) : (void)0)
#define GPUSIM_ARGS_cudaMemcpyBatchAsync dsts, srcs, sizes, count, attrs, idxs, nattrs, fail_idx, h
#else
#define GPUSIM_BATCH_FAIL_IDX
#define GPUSIM_BATCH_FAILED(i) (void)0
#define GPUSIM_ARGS_cudaMemcpyBatchAsync dsts, srcs, sizes, count, attrs, idxs, nattrs, h
#endif
GPUSIM_BOTH(cudaError_t, cudaMemcpyBatchAsync,
            (void* const* dsts, const void* const* srcs, const size_t* sizes, size_t count,
             cudaMemcpyAttributes* attrs, size_t* idxs, size_t nattrs, GPUSIM_BATCH_FAIL_IDX cudaStream_t h), _ptsz, {
  READY();
  (void)attrs; (void)idxs; (void)nattrs;
  if (!dsts || !srcs || !sizes || count == 0) {
    GPUSIM_BATCH_FAILED(SIZE_MAX);
    return ret(cudaErrorInvalidValue);
  }
  CUstream_st* s = resolve(h, ptds);
  if (!s) {
    GPUSIM_BATCH_FAILED(SIZE_MAX);
    return ret(cudaErrorInvalidResourceHandle);
  }
  for (size_t i = 0; i < count; ++i) {
    cudaError_t e = copy({static_cast<char*>(dsts[i]), static_cast<const char*>(srcs[i]), sizes[i], sizes[i],
                          sizes[i], 1}, s, Api::kAsync);
    if (e != cudaSuccess) {
      GPUSIM_BATCH_FAILED(i);
      return ret(e);
    }
  }
  return cudaSuccess;
})
#undef GPUSIM_BATCH_FAIL_IDX
#undef GPUSIM_BATCH_FAILED
#define GPUSIM_ARGS_cudaMemset p, v, n
GPUSIM_BOTH(cudaError_t, cudaMemset, (void* p, int v, size_t n), _ptds, {
  READY();
  STREAM(s, nullptr, ptds);
  return ret(memset_rows(static_cast<char*>(p), n, v, n, 1, s));
})
#define GPUSIM_ARGS_cudaMemsetAsync p, v, n, h
GPUSIM_BOTH(cudaError_t, cudaMemsetAsync, (void* p, int v, size_t n, cudaStream_t h), _ptsz, {
  READY();
  STREAM(s, h, ptds);
  return ret(memset_rows(static_cast<char*>(p), n, v, n, 1, s));
})
#define GPUSIM_ARGS_cudaMemset2D p, pitch, v, w, hgt
GPUSIM_BOTH(cudaError_t, cudaMemset2D, (void* p, size_t pitch, int v, size_t w, size_t hgt), _ptds, {
  READY();
  if (w > pitch) return ret(cudaErrorInvalidPitchValue);
  STREAM(s, nullptr, ptds);
  return ret(memset_rows(static_cast<char*>(p), pitch, v, w, hgt, s));
})
#define GPUSIM_ARGS_cudaMemset2DAsync p, pitch, v, w, hgt, h
GPUSIM_BOTH(cudaError_t, cudaMemset2DAsync, (void* p, size_t pitch, int v, size_t w, size_t hgt, cudaStream_t h),
            _ptsz, {
  READY();
  if (w > pitch) return ret(cudaErrorInvalidPitchValue);
  STREAM(s, h, ptds);
  return ret(memset_rows(static_cast<char*>(p), pitch, v, w, hgt, s));
})

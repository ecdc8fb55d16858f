// Memsets, copies (1D, 2D, peer, batched), kernels and fills of
// ThreadGen (generator_thread.h): their targets, sizes past the end or
// zero, pitches, and the streams they run on.
#include <algorithm>

#include "generator_thread.h"

namespace differential {
namespace detail {

Ref ThreadGen::memset_target(uint64_t* room) {
  const uint64_t r = rng_.below(100);
  int s = -1;
  if (r < 65) s = live_device();
  else if (r < 83) s = live_host();
  if (s < 0) {
    *room = 0;
    return bogus_ref();
  }
  const SlotModel& m = slots_[s];
  Ref ref = slot_ref(s, offset_in(m.size));
  *room = device_side(m.kind) ? ~0ull : m.size - ref.off;
  if (pinned_overruns_ && m.kind == BufKind::kPinned && rng_.chance(30)) {
    ref.may_overrun = true;
    *room = ~0ull;
  }
  return ref;
}

void ThreadGen::memset_op(bool two_d) {
  Op op;
  op.kind = two_d ? OpKind::kMemset2D : OpKind::kMemset;
  entry_point(&op);
  uint64_t room = 0;
  op.dst = memset_target(&room);
  op.value = static_cast<int>(rng_.below(256));
  const bool dev = op.dst.slot >= 0 && device_side(slots_[op.dst.slot].kind);
  const uint64_t size = op.dst.slot >= 0 ? slots_[op.dst.slot].size : 0;
  if (!two_d) {
    op.n = op.dst.slot < 0                      ? rng_.range(1, 64 * kKiB)
           : dev || op.dst.may_overrun ? device_bytes(size, op.dst.off, room)
                                       : host_bytes(room);
  } else {
    const SlotModel* m = op.dst.slot >= 0 ? &slots_[op.dst.slot] : nullptr;
    op.n = rng_.range(1, 64 * kKiB);
    op.dpitch = m && m->pitch && rng_.chance(70) ? m->pitch : op.n + (rng_.chance(50) ? 0 : rng_.range(1, 512));
    if (rng_.chance(4)) op.n = op.dpitch + rng_.range(1, 64);  // wider than the pitch
    op.height = rng_.chance(4) ? 0 : rng_.range(1, 40);
    shape_2d(dev || !m, room, op.dpitch, &op.n, &op.height);
  }
  use(slot_of(op.dst), op.ctx);
  emit(op);
}

void ThreadGen::shape_2d(bool may_overrun, uint64_t room, uint64_t pitch, uint64_t* width, uint64_t* height) {
  if (may_overrun) return;
  if (*width > room) *width = room;
  if (*height == 0 || *width == 0) return;
  const uint64_t rows = pitch && room >= *width ? (room - *width) / pitch + 1 : 1;
  *height = std::min(*height, rows);
}

void ThreadGen::memcpy_op() {
  Op op;
  op.kind = OpKind::kMemcpy;
  entry_point(&op);
  const uint64_t r = rng_.below(100);
  int dev = live_device(), dev2 = live_device();
  if (r >= 6 && r < 80 && dev < 0) return alloc();  // a copy to or from device memory needs some
  if (r < 6) {
    // Zero bytes: any pointers at all.
    op.n = 0;
    op.dst = rng_.chance(50) ? bogus_ref() : dev >= 0 ? slot_ref(dev, 0) : bogus_ref();
    op.src = bogus_ref();
    op.copy_kind = rng_.pick({cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDefault});
  } else if (r < 62 && dev >= 0) {
    // Host to device or back. A third of them between the largest
    // buffers, from the start, a little past the end: a copy of more than
    // one staging chunk whose first chunks fit (what a per-chunk check
    // lets through).
    const bool h2d = r < 34;
    uint64_t room;
    Ref host = largest_pageable(&room);
    const int big = rng_.chance(35) && host.slot >= 0 ? largest_device(room > 4096 ? room - 4096 : 0) : -1;
    if (big < 0) host = host_ref(&room);
    else dev = big;
    Ref device = slot_ref(dev, big >= 0 ? 0 : offset_in(slots_[dev].size));
    const uint64_t left = slots_[dev].size - device.off;
    op.n = big >= 0 ? left + rng_.range(1, 4096) : device_bytes(slots_[dev].size, device.off, room);
    op.dst = h2d ? device : host;
    op.src = h2d ? host : device;
    const cudaMemcpyKind right = h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    op.copy_kind = big >= 0 ? rng_.pick({right, cudaMemcpyDefault}) : copy_kind(right);
  } else if (r < 80 && dev >= 0 && dev2 >= 0 && dev != dev2) {  // device to device
    op.dst = slot_ref(dev, offset_in(slots_[dev].size));
    op.src = slot_ref(dev2, offset_in(slots_[dev2].size));
    const bool src_side = rng_.chance(50);
    const SlotModel& m = slots_[src_side ? dev2 : dev];
    op.n = device_bytes(m.size, src_side ? op.src.off : op.dst.off, 4 * kMiB);
    op.copy_kind = copy_kind(cudaMemcpyDeviceToDevice);
  } else {  // host to host, or host memory named as device memory
    uint64_t room_d, room_s;
    op.dst = host_ref(&room_d);
    op.src = host_ref(&room_s);
    if (same_memory(op.dst, op.src)) {  // the same buffer: exactly over itself
      op.src.off = op.dst.off;
      room_s = room_d;
    }
    op.n = host_bytes(std::min({room_d, room_s, 4 * kMiB}));
    op.copy_kind = rng_.pick({cudaMemcpyHostToHost, cudaMemcpyDefault, cudaMemcpyHostToDevice,
                              cudaMemcpyDeviceToHost});
  }
  touch_both(op);
  emit(op);
}

void ThreadGen::touch_both(const Op& op) {
  use(slot_of(op.dst), op.ctx);
  use(slot_of(op.src), op.ctx);
}

void ThreadGen::memcpy_2d() {
  Op op;
  op.kind = OpKind::kMemcpy2D;
  entry_point(&op);
  int dev = live_device();
  const uint64_t r = rng_.below(100);
  op.n = rng_.chance(30) ? rng_.range(1, 512) : rng_.range(512, 96 * kKiB);
  op.height = rng_.chance(4) ? 0 : rng_.range(1, 40);
  auto pitch_for = [&](const Ref& ref) {
    const SlotModel* m = ref.slot >= 0 ? &slots_[ref.slot] : nullptr;
    if (m && m->pitch && rng_.chance(70)) return m->pitch;
    return op.n + (rng_.chance(50) ? 0 : rng_.range(1, 512));
  };
  uint64_t room_d = ~0ull, room_s = ~0ull;
  if (r < 40 && dev >= 0) {
    op.src = host_ref(&room_s);
    op.dst = slot_ref(dev, offset_in(slots_[dev].size));
    op.copy_kind = copy_kind(cudaMemcpyHostToDevice);
  } else if (r < 80 && dev >= 0) {
    op.dst = host_ref(&room_d);
    op.src = slot_ref(dev, offset_in(slots_[dev].size));
    op.copy_kind = copy_kind(cudaMemcpyDeviceToHost);
  } else {
    int dev2 = live_device();
    if (dev < 0 || dev2 < 0 || dev == dev2) return memcpy_op();
    op.dst = slot_ref(dev, offset_in(slots_[dev].size));
    op.src = slot_ref(dev2, offset_in(slots_[dev2].size));
    op.copy_kind = copy_kind(cudaMemcpyDeviceToDevice);
  }
  op.dpitch = pitch_for(op.dst);
  op.spitch = pitch_for(op.src);
  if (rng_.chance(4)) {  // rows wider than a pitch: refused before anything is touched
    op.n = std::min(op.dpitch, op.spitch) + rng_.range(1, 64);
    op.height = rng_.range(1, 3);
  }
  const uint64_t room = std::min(room_d, room_s);
  if (room != ~0ull) {
    const uint64_t host_pitch = room_d < room_s ? op.dpitch : op.spitch;
    shape_2d(false, room, host_pitch, &op.n, &op.height);
  }
  touch_both(op);
  emit(op);
}

void ThreadGen::peer() {
  int dev = live_device(), dev2 = live_device();
  if (dev < 0 || dev2 < 0 || dev == dev2) return memcpy_op();
  Op op;
  op.kind = OpKind::kMemcpyPeer;
  op.variant = static_cast<uint8_t>(rng_.below(2));  // 0 cudaMemcpyPeer, 1 cudaMemcpyPeerAsync
  op.ctx = op.variant ? pick_ctx(3) : Ctx::kLegacy;
  op.dst = slot_ref(dev, offset_in(slots_[dev].size));
  op.src = slot_ref(dev2, offset_in(slots_[dev2].size));
  op.n = device_bytes(slots_[dev2].size, op.src.off, 4 * kMiB);
  touch_both(op);
  emit(op);
}

void ThreadGen::batch() {
  Op op;
  op.kind = OpKind::kMemcpyBatch;
  op.ptsz = rng_.chance(40);
  op.ctx = pick_ctx(3);
  const int parts = static_cast<int>(rng_.range(1, 3));
  for (int i = 0; i < parts; ++i) {
    int dev = live_device();
    if (dev < 0) break;
    Part p;
    uint64_t room;
    if (rng_.chance(50)) {
      p.src = host_ref(&room);
      p.dst = slot_ref(dev, offset_in(slots_[dev].size));
      p.n = device_bytes(slots_[dev].size, p.dst.off, room);
    } else {
      p.dst = host_ref(&room);
      p.src = slot_ref(dev, offset_in(slots_[dev].size));
      p.n = device_bytes(slots_[dev].size, p.src.off, room);
    }
    // One buffer in one batch at most once: copies of a batch may run in any order.
    bool clash = false;
    for (const Part& q : op.parts)
      for (const Ref* a : {&q.dst, &q.src})
        for (const Ref* b : {&p.dst, &p.src}) clash = clash || same_memory(*a, *b);
    if (!clash) op.parts.push_back(p);
  }
  if (op.parts.empty()) return memcpy_op();
  for (const Part& p : op.parts) {
    use(slot_of(p.dst), op.ctx);
    use(slot_of(p.src), op.ctx);
  }
  emit(op);
}

void ThreadGen::kernel() {
  int s = pick_slot([](const SlotModel& m) { return m.live() && device_side(m.kind) && m.size >= 4; });
  if (s < 0) return alloc();
  Op op;
  op.kind = OpKind::kKernel;
  op.ctx = pick_ctx();
  const uint64_t words = slots_[s].size / 4;
  const uint64_t first = rng_.chance(50) ? 0 : rng_.below(words);
  op.dst = slot_ref(s, first * 4);
  op.n = 4 * rng_.range(1, std::min<uint64_t>(words - first, 64 * kKiB));
  op.value = static_cast<int>(rng_.next());
  op.micros = static_cast<uint32_t>(rng_.range(20, 150));
  use(s, op.ctx);
  emit(op);
}

void ThreadGen::fill() {
  int s = live_host();
  if (s < 0) return alloc();
  host_use(s);
  Op op;
  op.kind = OpKind::kFill;
  op.dst = slot_ref(s, offset_in(slots_[s].size));
  op.n = host_bytes(slots_[s].size - op.dst.off);
  op.value = static_cast<int>(rng_.next() & 0x7fffffff);
  emit(op);
}

}  // namespace detail
}  // namespace differential

// See generator.h. One ThreadGen per thread (generator_thread.h): a model
// of its slots (kind, size, pitch, registration, pending stream) and one
// maker per kind of op, each choosing arguments valid, degenerate or
// invalid in the proportions below, within Note [What an op may ask the
// runtime to touch]. This file: the thread's frame, allocation, frees,
// streams; generator_memory.cc: memsets, copies, kernels, fills.
#include "generator_thread.h"

#include <algorithm>
#include <cstdio>

namespace differential {
namespace detail {

void ThreadGen::prologue() {
  for (int i = 0; i < kOwnStreams; ++i) {
    Op op;
    op.kind = OpKind::kStreamCreate;
    op.variant = static_cast<uint8_t>(i);
    emit(op);
  }
  for (int i = 0; i < 4; ++i) alloc();  // something to work on from the start
}

void ThreadGen::random_op() {
  if (rng_.chance(14)) return driver_op();
  const uint64_t r = rng_.below(100);
  if (r < 14) return alloc();
  if (r < 22) return free_op();
  if (r < 32) return memset_op(false);
  if (r < 36) return memset_op(true);
  if (r < 56) return memcpy_op();
  if (r < 63) return memcpy_2d();
  if (r < 65) return peer();
  if (r < 68) return batch();
  if (r < 71) return kernel();
  if (r < 74) return fill();
  if (r < 77) return observe_random();
  if (r < 81) return stream_sync(pick_ctx(5), rng_.chance(50));
  if (r < 82) return device_sync();
  if (r < 84) return event_sync();
  if (r < 86) return host_func();
  if (r < 88) return wait_event();
  if (r < 89) return mem_get_info();
  if (r < 90) return ipc();
  if (r < 93) return registration();
  return edge();
}

void ThreadGen::barrier() {
  if (!ops_.empty()) ops_.back().clear_error = true;
  Op op;
  op.kind = OpKind::kBarrier;
  emit(op);
}

void ThreadGen::epilogue() {
  for (Ctx c : {Ctx::kLegacy, Ctx::kPerThread, Ctx::kOwn0, Ctx::kOwn1, Ctx::kOwn2})
    if (any_pending(c)) stream_sync(c, rng_.chance(50));
  for (size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].live()) observe(static_cast<int>(i));
  for (size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].live()) free_right(static_cast<int>(i), false);
  for (Ctx c : {Ctx::kLegacy, Ctx::kPerThread, Ctx::kOwn0, Ctx::kOwn1, Ctx::kOwn2})
    if (any_pending(c)) stream_sync(c, false);
  for (int i = 0; i < kOwnStreams; ++i) {
    Op op;
    op.kind = OpKind::kStreamDestroy;
    op.variant = static_cast<uint8_t>(i);
    emit(op);
  }
}

void ThreadGen::emit(Op op) {
  if (driver_) to_driver(&op);
  op.clear_error = rng_.chance(85);
  std::string note;
  for (const Ref* ref : {&op.dst, &op.src}) note_slot(ref->slot, &note);
  for (const Part& p : op.parts) {
    note_slot(p.dst.slot, &note);
    note_slot(p.src.slot, &note);
  }
  op.note = note;
  ops_.push_back(std::move(op));
}

void ThreadGen::note_slot(int s, std::string* note) {
  if (s < 0 || !slots_[s].live()) return;
  char buf[96];
  const SlotModel& m = slots_[s];
  std::snprintf(buf, sizeof buf, "%ss%d=%s %llu B%s%s", note->empty() ? "" : ", ", s, kind_name(m.kind),
                static_cast<unsigned long long>(m.size), m.pitch ? " pitched" : "",
                m.registered ? " registered" : "");
  if (note->find(buf + (note->empty() ? 0 : 2)) == std::string::npos) *note += buf;
}

Ctx ThreadGen::pick_ctx(int bogus_percent) {
  if (rng_.chance(bogus_percent)) return Ctx::kBogus;
  const uint64_t r = rng_.below(100);
  if (r < 15) return Ctx::kLegacy;
  if (r < 30) return Ctx::kPerThread;
  if (r < 55) return Ctx::kOwn0;
  if (r < 80) return Ctx::kOwn1;
  return Ctx::kOwn2;
}

bool ThreadGen::any_pending(Ctx c) const {
  for (const SlotModel& m : slots_)
    if (m.pending == c) return true;
  return stack_.pending == c;
}

void ThreadGen::stream_sync(Ctx c, bool ptsz) {
  Op op;
  op.kind = OpKind::kStreamSync;
  op.ctx = c;
  op.ptsz = ptsz;
  emit(op);
  settled(c);
}

void ThreadGen::settled(Ctx c) {
  for (SlotModel& m : slots_)
    if (m.pending == c) m.pending = Ctx::kNone;
  if (stack_.pending == c) stack_.pending = Ctx::kNone;
}

void ThreadGen::use(int s, Ctx c) {
  if (s == -1 || c == Ctx::kBogus || c == Ctx::kNone) return;
  SlotModel& m = model(s);
  if (m.pending != Ctx::kNone && m.pending != c) stream_sync(m.pending, rng_.chance(50));
  m.pending = c;
}

void ThreadGen::host_use(int s) {
  if (s >= 0 && slots_[s].pending != Ctx::kNone) stream_sync(slots_[s].pending, rng_.chance(50));
}

int ThreadGen::live_device() {
  return pick_slot([](const SlotModel& m) { return m.live() && device_side(m.kind); });
}

int ThreadGen::live_host() {
  return pick_slot([](const SlotModel& m) { return m.live() && m.host(); });
}

uint64_t ThreadGen::device_size() {
  const uint64_t r = rng_.below(100);
  if (r < 25) return rng_.range(1, 8 * kKiB);
  if (r < 55) return rng_.range(8 * kKiB, 512 * kKiB);
  if (r < 70) return rng_.range(kMiB - 4 * kKiB, kMiB + 4 * kKiB);
  return rng_.range(kMiB, 3 * kMiB);
}

uint64_t ThreadGen::offset_in(uint64_t size) {
  if (size <= 1) return 0;
  const uint64_t r = rng_.below(100);
  if (r < 50) return 0;
  if (r < 80) return rng_.below(size);
  return size - rng_.range(1, std::min<uint64_t>(size, 4096));
}

uint64_t ThreadGen::device_bytes(uint64_t size, uint64_t off, uint64_t room) {
  const uint64_t left = size - off, r = rng_.below(100);
  uint64_t n;
  if (r < 55) n = rng_.range(1, left);
  else if (r < 62) n = left;
  else if (r < 70) n = 0;
  else if (r < 85) n = left + rng_.range(1, 4096);
  else n = left + rng_.range(kMiB / 2, 5 * kMiB / 2);
  return std::min(n, room);
}

Ref ThreadGen::host_ref(uint64_t* room) {
  Ref ref;
  int s = rng_.chance(12) ? -1 : live_host();
  if (s < 0) {
    ref.bogus = Bogus::kStack;
    ref.off = rng_.below(kStackBytes);
    *room = kStackBytes - ref.off;
    return ref;
  }
  ref.slot = static_cast<int8_t>(s);
  ref.off = rng_.chance(50) ? 0 : rng_.below(slots_[s].size);
  *room = slots_[s].size - ref.off;
  if (pinned_overruns_ && slots_[s].kind == BufKind::kPinned && rng_.chance(30)) {
    ref.may_overrun = true;
    *room = ~0ull;
  }
  return ref;
}

int ThreadGen::largest_device(uint64_t at_most) {
  int best = -1;
  for (size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].live() && device_side(slots_[i].kind) && slots_[i].size <= at_most &&
        (best < 0 || slots_[i].size > slots_[best].size))
      best = static_cast<int>(i);
  return best;
}

Ref ThreadGen::largest_pageable(uint64_t* room) {
  int best = -1;
  for (size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].kind == BufKind::kPageable && (best < 0 || slots_[i].size > slots_[best].size))
      best = static_cast<int>(i);
  if (best < 0) return host_ref(room);
  *room = slots_[best].size;
  return slot_ref(best, 0);
}

Ref ThreadGen::slot_ref(int s, uint64_t off) {
  Ref ref;
  ref.slot = static_cast<int8_t>(s);
  ref.off = off;
  return ref;
}

Ref ThreadGen::bogus_ref() {
  Ref ref;
  ref.bogus = rng_.pick({Bogus::kNull, Bogus::kStack, Bogus::kLow, Bogus::kKernelSpace});
  return ref;
}

cudaMemcpyKind ThreadGen::copy_kind(cudaMemcpyKind right) {
  const uint64_t r = rng_.below(100);
  if (r < 70) return right;
  if (r < 95) return cudaMemcpyDefault;
  return rng_.pick({cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice,
                    cudaMemcpyHostToHost});
}

void ThreadGen::entry_point(Op* op) {
  op->variant = static_cast<uint8_t>(rng_.below(4));
  op->ptsz = op->variant & 1;
  op->ctx = op->variant < 2 ? (op->ptsz ? Ctx::kPerThread : Ctx::kLegacy) : pick_ctx(3);
}

void ThreadGen::alloc() {
  int s = pick_slot([](const SlotModel& m) { return !m.live(); });
  if (s < 0) return free_op();
  Op op;
  op.dst = slot_ref(s, 0);
  SlotModel m;
  const uint64_t r = rng_.below(100);
  if (r < 28) {
    op.kind = OpKind::kMalloc;
    m.kind = BufKind::kDevice;
    m.size = device_size();
  } else if (r < 40) {
    op.kind = OpKind::kMallocAsync;
    m.kind = BufKind::kAsync;
    m.size = device_size();
  } else if (r < 45) {
    op.kind = OpKind::kMallocFromPool;
    m.kind = BufKind::kPool;
    m.size = device_size();
  } else if (r < 52) {
    op.kind = rng_.chance(75) ? OpKind::kMallocPitch : OpKind::kMalloc3D;
    m.kind = BufKind::kPitched;
    op.n = rng_.chance(20) ? rng_.range(1, 512) : rng_.range(1, 96 * kKiB);
    op.height = rng_.range(1, 40);
    m.pitch = (op.n + 511) / 512 * 512;  // the simulated runtime's pitch
    m.size = m.pitch * op.height;
  } else if (r < 56) {
    op.kind = OpKind::kMallocManaged;
    m.kind = BufKind::kManaged;
    m.size = device_size();
  } else if (r < 74) {
    op.kind = rng_.chance(50) ? OpKind::kMallocHost : OpKind::kHostAlloc;
    op.flags = rng_.pick({cudaHostAllocDefault, cudaHostAllocPortable, cudaHostAllocMapped,
                          cudaHostAllocPortable | cudaHostAllocMapped, cudaHostAllocWriteCombined});
    m.kind = BufKind::kPinned;
    m.size = rng_.chance(40) ? rng_.range(1, 64 * kKiB) : rng_.range(64 * kKiB, 5 * kMiB / 2);
  } else {
    op.kind = OpKind::kPageable;
    m.kind = BufKind::kPageable;
    const uint64_t q = rng_.below(100);
    m.size = q < 20 ? rng_.range(1, 64 * kKiB) : q < 50 ? rng_.range(64 * kKiB, kMiB) : rng_.range(kMiB, 9 * kMiB / 2);
  }
  if (op.kind != OpKind::kMallocPitch && op.kind != OpKind::kMalloc3D) op.n = m.size;
  if (stream_ordered(m.kind)) {
    op.ctx = pick_ctx();
    op.ptsz = rng_.chance(40);
    m.alloc_ctx = op.ctx;
  }
  if (m.kind == BufKind::kPageable) host_use(s);
  m.pending = slots_[s].pending;  // Note [Ordering the generator keeps]
  slots_[s] = m;
  if (stream_ordered(m.kind)) use(s, op.ctx);
  emit(op);
  // Every byte gets a value before anything reads it (cudaMalloc's memory
  // is not zeroed; gpuslack hands out reused blocks).
  if (m.kind == BufKind::kPageable) return;  // the executor fills it from the seed
  Op init;
  init.kind = OpKind::kInit;
  init.dst = slot_ref(s, 0);
  init.value = static_cast<int>(rng_.below(256));
  if (m.kind == BufKind::kPinned) {
    host_use(s);
  } else {
    init.ctx = stream_ordered(m.kind) ? m.alloc_ctx : Ctx::kLegacy;
    use(s, init.ctx);
  }
  emit(init);
}

void ThreadGen::free_right(int s, bool look_first) {
  SlotModel& m = slots_[s];
  // What a buffer holds is seen before it goes (an overrun that wrote it
  // shows here even when nothing reads it later).
  if (look_first && m.kind != BufKind::kPageable && rng_.chance(80)) observe(s);
  Op op;
  op.kind = OpKind::kFree;
  op.dst = slot_ref(s, 0);
  if (m.kind == BufKind::kPageable) {
    host_use(s);
    if (m.registered) {
      Op un;
      un.kind = OpKind::kHostUnregister;
      un.dst = slot_ref(s, 0);
      emit(un);
      m.registered = false;
    }
  } else if (stream_ordered(m.kind)) {
    op.ctx = rng_.chance(70) ? m.alloc_ctx : pick_ctx();
    op.ptsz = rng_.chance(40);
    use(s, op.ctx);
  }
  emit(op);
  m.kind = BufKind::kEmpty;  // `pending` stays (Note [Ordering the generator keeps])
}

void ThreadGen::free_op() {
  int s = pick_slot([](const SlotModel& m) { return m.live(); });
  const uint64_t r = rng_.below(100);
  if (r >= 90 || s < 0) return free_bogus();
  if (r < 62) return free_right(s);
  SlotModel& m = slots_[s];
  if (r < 72) return free_wrong(s);
  if (r < 80 && m.size >= 2 && m.kind != BufKind::kPageable) {
    Op op;
    op.kind = OpKind::kFreeInterior;
    op.dst = slot_ref(s, rng_.range(1, m.size - 1));
    if (stream_ordered(m.kind)) op.ctx = m.alloc_ctx;
    return emit(op);
  }
  if (m.kind == BufKind::kPageable) return free_right(s);
  // Twice, with nothing allocated in between by any thread (Op::exclusive);
  // a stream-ordered free is synchronized first, so that the second call
  // meets memory the runtime has taken back.
  if (rng_.chance(80)) observe(s);
  Op op;
  op.kind = OpKind::kDoubleFree;
  op.exclusive = true;
  op.dst = slot_ref(s, 0);
  if (stream_ordered(m.kind)) {
    op.ctx = m.alloc_ctx;
    op.ptsz = rng_.chance(40);
    use(s, op.ctx);
    settled(op.ctx);
  }
  emit(op);
  m.kind = BufKind::kEmpty;
}

void ThreadGen::free_wrong(int s) {
  const SlotModel& m = slots_[s];
  Op op;
  op.kind = OpKind::kFreeWrong;
  op.dst = slot_ref(s, 0);
  switch (m.kind) {
    case BufKind::kDevice:
      // cudaFreeAsync of cudaMalloc memory: the simulated runtime refuses
      // it, the VMM allocator (one heap for both kinds) accepts it. Not
      // compared under allocator:vmm (differential_main.cc).
      op.variant = static_cast<uint8_t>(rng_.pick({1, 2}));
      op.not_under_vmm = op.variant == 2;
      break;
    case BufKind::kAsync:
      // cudaFree of cudaMallocAsync memory: as above. cudaFreeAsync on a
      // stream that does not exist: refused.
      op.variant = static_cast<uint8_t>(rng_.pick({0, 1, 2}));
      op.not_under_vmm = op.variant == 0;
      if (op.variant == 2) {
        op.ctx = Ctx::kBogus;
        return emit(op);
      }
      break;
    case BufKind::kPool:
    case BufKind::kPitched:
    case BufKind::kManaged:
      op.variant = static_cast<uint8_t>(stream_ordered(m.kind) ? rng_.pick({0, 1}) : rng_.pick({1, 2}));
      break;
    case BufKind::kPinned: op.variant = static_cast<uint8_t>(rng_.pick({0, 2})); break;
    default: op.variant = static_cast<uint8_t>(rng_.below(3)); break;
  }
  if (op.variant == 2) op.ctx = pick_ctx(5);
  emit(op);
}

void ThreadGen::free_bogus() {
  Op op;
  op.kind = OpKind::kFreeBogus;
  op.variant = static_cast<uint8_t>(rng_.below(3));
  op.dst = bogus_ref();
  if (op.variant == 2) op.ctx = pick_ctx(5);
  emit(op);
}

void ThreadGen::registration() {
  int s = pick_slot([](const SlotModel& m) { return m.kind == BufKind::kPageable; });
  Op op;
  op.kind = OpKind::kHostRegister;
  if (s >= 0 && slots_[s].registered && rng_.chance(60)) {
    op.kind = OpKind::kHostUnregister;
    op.dst = slot_ref(s, 0);
    host_use(s);  // unregistering gives the pages back: nothing may still use them
    slots_[s].registered = false;
  } else if (s >= 0 && rng_.chance(80)) {
    op.dst = slot_ref(s, 0);
    op.variant = slots_[s].registered ? 1 : 0;
    op.flags = rng_.pick({cudaHostRegisterDefault, cudaHostRegisterPortable, cudaHostRegisterMapped});
    slots_[s].registered = true;
  } else if (rng_.chance(50)) {
    op.kind = OpKind::kHostUnregister;
    op.variant = 1;
  } else {
    op.variant = static_cast<uint8_t>(rng_.pick({2, 3}));
    if (s >= 0) op.dst = slot_ref(s, 0);
  }
  emit(op);
}

void ThreadGen::observe(int s) {
  host_use(s);
  Op op;
  op.kind = OpKind::kObserve;
  op.dst = slot_ref(s, 0);
  emit(op);
}

void ThreadGen::observe_random() {
  int s = pick_slot([](const SlotModel& m) { return m.live(); });
  if (s < 0) return alloc();
  observe(s);
}

void ThreadGen::device_sync() {
  Op op;
  op.kind = OpKind::kDeviceSync;
  emit(op);
  for (SlotModel& m : slots_) m.pending = Ctx::kNone;
  stack_.pending = Ctx::kNone;
}

void ThreadGen::event_sync() {
  Op op;
  op.kind = OpKind::kEventSync;
  op.ctx = pick_ctx();
  op.ptsz = rng_.chance(50);
  emit(op);
  settled(op.ctx);
}

void ThreadGen::host_func() {
  Op op;
  op.kind = OpKind::kHostFunc;
  op.variant = static_cast<uint8_t>(rng_.below(2));  // 0 cudaLaunchHostFunc, 1 cudaStreamAddCallback
  op.ctx = pick_ctx(5);
  op.ptsz = rng_.chance(40);
  emit(op);
}

void ThreadGen::wait_event() {
  Op op;
  op.kind = OpKind::kWaitEvent;
  op.ctx2 = pick_ctx();
  op.ctx = pick_ctx(5);
  op.ptsz = rng_.chance(40);
  emit(op);
}

void ThreadGen::mem_get_info() {
  Op op;
  op.kind = OpKind::kMemGetInfo;
  emit(op);
}

void ThreadGen::ipc() {
  int s = pick_slot([](const SlotModel& m) { return m.live(); });
  Op op;
  op.kind = OpKind::kIpcHandle;
  if (s >= 0) {
    // The base of an allocation, or (one in four) a pointer inside it: both
    // refuse the second.
    op.dst = slot_ref(s, slots_[s].size > 256 && rng_.chance(25) ? 256 : 0);
    // cudaMallocAsync memory: the runtime refuses its handle (a pool's
    // memory is exported with cudaMemPoolExportPointer), the VMM allocator
    // (one heap for both calls) gives one; not compared under allocator:vmm.
    op.not_under_vmm = slots_[s].kind == BufKind::kAsync;
  }
  emit(op);
}

void ThreadGen::edge() {
  Op op;
  op.kind = OpKind::kAllocEdge;
  op.variant = static_cast<uint8_t>(rng_.below(static_cast<uint64_t>(EdgeCase::kCount)));
  op.ctx = pick_ctx();
  op.ptsz = rng_.chance(40);
  op.n = rng_.range(1, 64 * kKiB);
  op.height = rng_.range(1, 8);
  int s = live_device();
  if (s >= 0) op.dst = slot_ref(s, 0);
  // cudaIpcGetMemHandle with a NULL handle on VMM memory: refused either way.
  emit(op);
}

}  // namespace detail

Program generate(const Shape& shape, uint64_t seed) {
  Program p;
  p.seed = seed;
  p.slots = shape.slots;
  p.barriers = std::max(1, shape.phases);
  for (int t = 0; t < shape.threads; ++t) {
    detail::ThreadGen g(shape, seed, t);
    g.prologue();
    for (int phase = 0; phase < p.barriers; ++phase) {
      const int ops = shape.ops / p.barriers;
      for (int i = 0; i < ops; ++i) g.random_op();
      if (phase + 1 == p.barriers) g.epilogue();
      g.barrier();
    }
    p.threads.push_back(ThreadProgram{g.take()});
  }
  return p;
}

}  // namespace differential

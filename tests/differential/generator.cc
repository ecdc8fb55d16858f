// See generator.h. One ThreadGen per thread: a model of its slots (kind,
// size, pitch, registration, pending stream) and one maker per kind of op,
// each choosing arguments valid, degenerate or invalid in the proportions
// below, within Note [What an op may ask the runtime to touch].
#include "generator.h"

#include <algorithm>
#include <cstdio>

namespace differential {
namespace {

constexpr uint64_t kKiB = 1024, kMiB = 1024 * 1024;

// splitmix64: small, fast, and the same everywhere.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return n ? next() % n : 0; }
  uint64_t range(uint64_t lo, uint64_t hi) { return hi <= lo ? lo : lo + below(hi - lo + 1); }  // inclusive
  bool chance(int percent) { return below(100) < static_cast<uint64_t>(percent); }
  template <typename T>
  T pick(std::initializer_list<T> xs) {
    return *(xs.begin() + below(xs.size()));
  }
};

struct SlotModel {
  BufKind kind = BufKind::kEmpty;
  uint64_t size = 0, pitch = 0;
  bool registered = false;
  Ctx alloc_ctx = Ctx::kNone;
  Ctx pending = Ctx::kNone;
  bool live() const { return kind != BufKind::kEmpty; }
  bool host() const { return kind == BufKind::kPinned || kind == BufKind::kPageable; }
};

class ThreadGen {
 public:
  ThreadGen(const Shape& shape, uint64_t seed, int thread)
      : rng_{seed * 0x100000001B3ull + static_cast<uint64_t>(thread) * 0x9E3779B97F4A7C15ull + 1},
        slots_(static_cast<size_t>(shape.slots)) {}

  std::vector<Op> take() { return std::move(ops_); }

  void prologue() {
    for (int i = 0; i < kOwnStreams; ++i) {
      Op op;
      op.kind = OpKind::kStreamCreate;
      op.variant = static_cast<uint8_t>(i);
      emit(op);
    }
  }

  void random_op() {
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

  void barrier() {
    if (!ops_.empty()) ops_.back().clear_error = true;
    Op op;
    op.kind = OpKind::kBarrier;
    emit(op);
  }

  // Everything synchronized, every live buffer read back and freed, the
  // streams destroyed.
  void epilogue() {
    for (Ctx c : {Ctx::kLegacy, Ctx::kPerThread, Ctx::kOwn0, Ctx::kOwn1, Ctx::kOwn2})
      if (any_pending(c)) stream_sync(c, rng_.chance(50));
    for (size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].live()) observe(static_cast<int>(i));
    for (size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].live()) free_right(static_cast<int>(i));
    for (Ctx c : {Ctx::kLegacy, Ctx::kPerThread, Ctx::kOwn0, Ctx::kOwn1, Ctx::kOwn2})
      if (any_pending(c)) stream_sync(c, false);
    for (int i = 0; i < kOwnStreams; ++i) {
      Op op;
      op.kind = OpKind::kStreamDestroy;
      op.variant = static_cast<uint8_t>(i);
      emit(op);
    }
  }

 private:
  // ------------------------------------------------------------ helpers --

  void emit(Op op) {
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
  void note_slot(int s, std::string* note) {
    if (s < 0 || !slots_[s].live()) return;
    char buf[96];
    const SlotModel& m = slots_[s];
    std::snprintf(buf, sizeof buf, "%ss%d=%s %llu B%s%s", note->empty() ? "" : ", ", s, kind_name(m.kind),
                  static_cast<unsigned long long>(m.size), m.pitch ? " pitched" : "",
                  m.registered ? " registered" : "");
    if (note->find(buf + (note->empty() ? 0 : 2)) == std::string::npos) *note += buf;
  }

  // A stream context; `bogus_percent` of the time a handle no stream has.
  Ctx pick_ctx(int bogus_percent = 0) {
    if (rng_.chance(bogus_percent)) return Ctx::kBogus;
    const uint64_t r = rng_.below(100);
    if (r < 15) return Ctx::kLegacy;
    if (r < 30) return Ctx::kPerThread;
    if (r < 55) return Ctx::kOwn0;
    if (r < 80) return Ctx::kOwn1;
    return Ctx::kOwn2;
  }

  // The thread's stack buffer (Bogus::kStack) is ordered like a slot.
  static constexpr int kStackSlot = -2;
  SlotModel& model(int s) { return s == kStackSlot ? stack_ : slots_[s]; }
  static int slot_of(const Ref& r) { return r.slot >= 0 ? r.slot : r.bogus == Bogus::kStack ? kStackSlot : -1; }

  bool any_pending(Ctx c) const {
    for (const SlotModel& m : slots_)
      if (m.pending == c) return true;
    return stack_.pending == c;
  }
  void stream_sync(Ctx c, bool ptsz) {
    Op op;
    op.kind = OpKind::kStreamSync;
    op.ctx = c;
    op.ptsz = ptsz;
    emit(op);
    settled(c);
  }
  void settled(Ctx c) {
    for (SlotModel& m : slots_)
      if (m.pending == c) m.pending = Ctx::kNone;
    if (stack_.pending == c) stack_.pending = Ctx::kNone;
  }
  // Note [Ordering the generator keeps].
  void use(int s, Ctx c) {
    if (s == -1 || c == Ctx::kBogus || c == Ctx::kNone) return;
    SlotModel& m = model(s);
    if (m.pending != Ctx::kNone && m.pending != c) stream_sync(m.pending, rng_.chance(50));
    m.pending = c;
  }
  void host_use(int s) {
    if (s >= 0 && slots_[s].pending != Ctx::kNone) stream_sync(slots_[s].pending, rng_.chance(50));
  }

  template <typename Pred>
  int pick_slot(Pred pred) {
    int n = 0;
    for (const SlotModel& m : slots_) n += pred(m) ? 1 : 0;
    if (n == 0) return -1;
    int k = static_cast<int>(rng_.below(n));
    for (size_t i = 0; i < slots_.size(); ++i)
      if (pred(slots_[i]) && k-- == 0) return static_cast<int>(i);
    return -1;
  }
  int live_device() {
    return pick_slot([](const SlotModel& m) { return m.live() && device_side(m.kind); });
  }
  int live_host() {
    return pick_slot([](const SlotModel& m) { return m.live() && m.host(); });
  }

  uint64_t device_size() {
    const uint64_t r = rng_.below(100);
    if (r < 25) return rng_.range(1, 8 * kKiB);
    if (r < 55) return rng_.range(8 * kKiB, 512 * kKiB);
    if (r < 70) return rng_.range(kMiB - 4 * kKiB, kMiB + 4 * kKiB);
    return rng_.range(kMiB, 3 * kMiB);
  }

  // An offset into a buffer of `size` bytes: the start, anywhere, or near the end.
  uint64_t offset_in(uint64_t size) {
    if (size <= 1) return 0;
    const uint64_t r = rng_.below(100);
    if (r < 50) return 0;
    if (r < 80) return rng_.below(size);
    return size - rng_.range(1, std::min<uint64_t>(size, 4096));
  }
  // Bytes from `off` in a device-side buffer of `size`: in range, past the
  // end (by a little or by more than a staging chunk), or zero; at most `room`.
  uint64_t device_bytes(uint64_t size, uint64_t off, uint64_t room) {
    const uint64_t left = size - off, r = rng_.below(100);
    uint64_t n;
    if (r < 55) n = rng_.range(1, left);
    else if (r < 62) n = left;
    else if (r < 70) n = 0;
    else if (r < 85) n = left + rng_.range(1, 4096);
    else n = left + rng_.range(kMiB / 2, 5 * kMiB / 2);
    return std::min(n, room);
  }
  // Bytes within a host-side range of `room` bytes (zero sometimes).
  uint64_t host_bytes(uint64_t room) { return rng_.chance(6) ? 0 : rng_.range(1, room); }

  // A host-side end of a copy: a live host slot at an offset, or the stack
  // buffer; its room in *room.
  Ref host_ref(uint64_t* room) {
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
    return ref;
  }
  Ref slot_ref(int s, uint64_t off) {
    Ref ref;
    ref.slot = static_cast<int8_t>(s);
    ref.off = off;
    return ref;
  }
  static bool same_memory(const Ref& a, const Ref& b) {
    return a.slot >= 0 ? a.slot == b.slot : b.slot < 0 && a.bogus == Bogus::kStack && b.bogus == Bogus::kStack;
  }
  Ref bogus_ref() {
    Ref ref;
    ref.bogus = rng_.pick({Bogus::kNull, Bogus::kStack, Bogus::kLow, Bogus::kKernelSpace});
    return ref;
  }

  // The kind a correct program passes, or cudaMemcpyDefault, or (rarely) a
  // wrong one (the runtime goes by the pointers; gpuslack must forward).
  cudaMemcpyKind copy_kind(cudaMemcpyKind right) {
    const uint64_t r = rng_.below(100);
    if (r < 70) return right;
    if (r < 95) return cudaMemcpyDefault;
    return rng_.pick({cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice,
                      cudaMemcpyHostToHost});
  }

  // Entry point and stream: variants 0/1 are the synchronous API (legacy or
  // per-thread stream), 2/3 the asynchronous one (any stream).
  void entry_point(Op* op) {
    op->variant = static_cast<uint8_t>(rng_.below(4));
    op->ptsz = op->variant & 1;
    op->ctx = op->variant < 2 ? (op->ptsz ? Ctx::kPerThread : Ctx::kLegacy) : pick_ctx(3);
  }

  // -------------------------------------------------------- allocation --

  void alloc() {
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

  // ------------------------------------------------------------- frees --

  void free_right(int s) {
    SlotModel& m = slots_[s];
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

  void free_op() {
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

  // A free the runtime refuses: it leaves the buffer live.
  void free_wrong(int s) {
    const SlotModel& m = slots_[s];
    Op op;
    op.kind = OpKind::kFreeWrong;
    op.dst = slot_ref(s, 0);
    switch (m.kind) {
      case BufKind::kDevice:
        // cudaFreeAsync of cudaMalloc memory: real CUDA accepts it (and the
        // VMM allocator, which serves both, does); the simulated runtime
        // refuses. Not compared under allocator:vmm.
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

  void free_bogus() {
    Op op;
    op.kind = OpKind::kFreeBogus;
    op.variant = static_cast<uint8_t>(rng_.below(3));
    op.dst = bogus_ref();
    if (op.variant == 2) op.ctx = pick_ctx(5);
    emit(op);
  }

  void registration() {
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

  // ---------------------------------------------------------- memory --

  // The target of a memset: device-side (any range), pinned or pageable
  // (in range), or a bogus pointer; *n and *room set.
  Ref memset_target(uint64_t* room) {
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
    return ref;
  }

  void memset_op(bool two_d) {
    Op op;
    op.kind = two_d ? OpKind::kMemset2D : OpKind::kMemset;
    entry_point(&op);
    uint64_t room = 0;
    op.dst = memset_target(&room);
    op.value = static_cast<int>(rng_.below(256));
    const bool dev = op.dst.slot >= 0 && device_side(slots_[op.dst.slot].kind);
    const uint64_t size = op.dst.slot >= 0 ? slots_[op.dst.slot].size : 0;
    if (!two_d) {
      op.n = op.dst.slot < 0 ? rng_.range(1, 64 * kKiB) : dev ? device_bytes(size, op.dst.off, room)
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

  // Keeps a 2D span of `*height` rows of `*width` bytes, `pitch` apart,
  // within `room` unless `may_overrun`; a device-side span may also be
  // made to overrun on purpose.
  void shape_2d(bool may_overrun, uint64_t room, uint64_t pitch, uint64_t* width, uint64_t* height) {
    if (may_overrun) return;
    if (*width > room) *width = room;
    if (*height == 0 || *width == 0) return;
    const uint64_t rows = pitch && room >= *width ? (room - *width) / pitch + 1 : 1;
    *height = std::min(*height, rows);
  }

  void memcpy_op() {
    Op op;
    op.kind = OpKind::kMemcpy;
    entry_point(&op);
    const uint64_t r = rng_.below(100);
    int dev = live_device(), dev2 = live_device();
    if (r < 6) {
      // Zero bytes: any pointers at all.
      op.n = 0;
      op.dst = rng_.chance(50) ? bogus_ref() : dev >= 0 ? slot_ref(dev, 0) : bogus_ref();
      op.src = bogus_ref();
      op.copy_kind = rng_.pick({cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDefault});
    } else if (r < 34 && dev >= 0) {  // host to device
      uint64_t room;
      op.src = host_ref(&room);
      op.dst = slot_ref(dev, offset_in(slots_[dev].size));
      op.n = device_bytes(slots_[dev].size, op.dst.off, room);
      op.copy_kind = copy_kind(cudaMemcpyHostToDevice);
    } else if (r < 62 && dev >= 0) {  // device to host
      uint64_t room;
      op.dst = host_ref(&room);
      op.src = slot_ref(dev, offset_in(slots_[dev].size));
      op.n = device_bytes(slots_[dev].size, op.src.off, room);
      op.copy_kind = copy_kind(cudaMemcpyDeviceToHost);
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
      op.n = host_bytes(std::min(room_d, room_s));
      op.copy_kind = rng_.pick({cudaMemcpyHostToHost, cudaMemcpyDefault, cudaMemcpyHostToDevice,
                                cudaMemcpyDeviceToHost});
    }
    touch_both(op);
    emit(op);
  }

  void touch_both(const Op& op) {
    use(slot_of(op.dst), op.ctx);
    use(slot_of(op.src), op.ctx);
  }

  void memcpy_2d() {
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
      op.height = 1;
    }
    const uint64_t room = std::min(room_d, room_s);
    if (room != ~0ull) {
      const uint64_t host_pitch = room_d < room_s ? op.dpitch : op.spitch;
      shape_2d(false, room, host_pitch, &op.n, &op.height);
    }
    touch_both(op);
    emit(op);
  }

  void peer() {
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

  void batch() {
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

  void kernel() {
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

  void fill() {
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

  void observe(int s) {
    host_use(s);
    Op op;
    op.kind = OpKind::kObserve;
    op.dst = slot_ref(s, 0);
    emit(op);
  }
  void observe_random() {
    int s = pick_slot([](const SlotModel& m) { return m.live(); });
    if (s < 0) return alloc();
    observe(s);
  }

  // ---------------------------------------------------- synchronization --

  void device_sync() {
    Op op;
    op.kind = OpKind::kDeviceSync;
    emit(op);
    for (SlotModel& m : slots_) m.pending = Ctx::kNone;
    stack_.pending = Ctx::kNone;
  }
  void event_sync() {
    Op op;
    op.kind = OpKind::kEventSync;
    op.ctx = pick_ctx();
    op.ptsz = rng_.chance(50);
    emit(op);
    settled(op.ctx);
  }
  void host_func() {
    Op op;
    op.kind = OpKind::kHostFunc;
    op.variant = static_cast<uint8_t>(rng_.below(2));  // 0 cudaLaunchHostFunc, 1 cudaStreamAddCallback
    op.ctx = pick_ctx(5);
    op.ptsz = rng_.chance(40);
    emit(op);
  }
  void wait_event() {
    Op op;
    op.kind = OpKind::kWaitEvent;
    op.ctx2 = pick_ctx();
    op.ctx = pick_ctx(5);
    op.ptsz = rng_.chance(40);
    emit(op);
  }
  void mem_get_info() {
    Op op;
    op.kind = OpKind::kMemGetInfo;
    emit(op);
  }
  void ipc() {
    int s = pick_slot([](const SlotModel& m) { return m.live(); });
    Op op;
    op.kind = OpKind::kIpcHandle;
    if (s >= 0) {
      op.dst = slot_ref(s, 0);
      // An IPC handle of VMM memory is refused by design (README, "The VMM
      // allocator"): cudaMalloc memory is not compared under allocator:vmm.
      op.not_under_vmm = slots_[s].kind == BufKind::kDevice;
    }
    emit(op);
  }

  void edge() {
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

  Rng rng_;
  std::vector<SlotModel> slots_;
  SlotModel stack_;
  std::vector<Op> ops_;
};

}  // namespace

Program generate(const Shape& shape, uint64_t seed) {
  Program p;
  p.seed = seed;
  p.slots = shape.slots;
  p.barriers = std::max(1, shape.phases);
  for (int t = 0; t < shape.threads; ++t) {
    ThreadGen g(shape, seed, t);
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

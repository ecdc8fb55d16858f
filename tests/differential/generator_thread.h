// Internals of the generator (generator.h), shared by generator.cc
// (the thread's model, allocation, frees, streams) and generator_memory.cc
// (memsets, copies, kernels, fills). Not to be included elsewhere.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "generator.h"

namespace differential {
namespace detail {

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

// One thread's program, op by op, over a model of its slots.
class ThreadGen {
 public:
  ThreadGen(const Shape& shape, uint64_t seed, int thread)
      : rng_{seed * 0x100000001B3ull + static_cast<uint64_t>(thread) * 0x9E3779B97F4A7C15ull + 1},
        slots_(static_cast<size_t>(shape.slots)),
        pinned_overruns_(shape.pinned_overruns) {}

  std::vector<Op> take() { return std::move(ops_); }

  void prologue();   // the thread's streams and first buffers
  void random_op();  // one op, with the synchronizations it needs first
  void barrier();

  // Everything synchronized, every live buffer read back and freed, the
  // streams destroyed.
  void epilogue();

 private:
  // ------------------------------------------------------------ helpers --

  void emit(Op op);
  void note_slot(int s, std::string* note);

  // A stream context; `bogus_percent` of the time a handle no stream has.
  Ctx pick_ctx(int bogus_percent = 0);

  // The thread's stack buffer (Bogus::kStack) is ordered like a slot.
  static constexpr int kStackSlot = -2;
  SlotModel& model(int s) { return s == kStackSlot ? stack_ : slots_[s]; }
  static int slot_of(const Ref& r) { return r.slot >= 0 ? r.slot : r.bogus == Bogus::kStack ? kStackSlot : -1; }

  bool any_pending(Ctx c) const;
  void stream_sync(Ctx c, bool ptsz);
  void settled(Ctx c);
  // Note [Ordering the generator keeps].
  void use(int s, Ctx c);
  void host_use(int s);

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
  int live_device();
  int live_host();

  uint64_t device_size();

  // An offset into a buffer of `size` bytes: the start, anywhere, or near the end.
  uint64_t offset_in(uint64_t size);
  // Bytes from `off` in a device-side buffer of `size`: in range, past the
  // end (by a little or by more than a staging chunk), or zero; at most `room`.
  uint64_t device_bytes(uint64_t size, uint64_t off, uint64_t room);
  // Bytes within a host-side range of `room` bytes (zero sometimes).
  uint64_t host_bytes(uint64_t room) { return rng_.chance(6) ? 0 : rng_.range(1, room); }

  // A host-side end of a copy: a live host slot at an offset, or the stack
  // buffer; its room in *room.
  Ref host_ref(uint64_t* room);
  // The largest live device-side slot of at most `at_most` bytes (-1:
  // none), and the largest pageable one, at offset 0 (else host_ref()).
  int largest_device(uint64_t at_most);
  Ref largest_pageable(uint64_t* room);
  Ref slot_ref(int s, uint64_t off);
  static bool same_memory(const Ref& a, const Ref& b) {
    return a.slot >= 0 ? a.slot == b.slot : b.slot < 0 && a.bogus == Bogus::kStack && b.bogus == Bogus::kStack;
  }
  Ref bogus_ref();

  // The kind a correct program passes, or cudaMemcpyDefault, or (rarely) a
  // wrong one (the runtime goes by the pointers; gpuslack must forward).
  cudaMemcpyKind copy_kind(cudaMemcpyKind right);

  // Entry point and stream: variants 0/1 are the synchronous API (legacy or
  // per-thread stream), 2/3 the asynchronous one (any stream).
  void entry_point(Op* op);

  // -------------------------------------------------------- allocation --

  void alloc();

  // ------------------------------------------------------------- frees --

  void free_right(int s, bool look_first = true);

  void free_op();

  // A free the runtime refuses: it leaves the buffer live.
  void free_wrong(int s);

  void free_bogus();

  void registration();

  // ---------------------------------------------------------- memory --

  // The target of a memset: device-side (any range), pinned or pageable
  // (in range), or a bogus pointer; *n and *room set.
  Ref memset_target(uint64_t* room);

  void memset_op(bool two_d);

  // Keeps a 2D span of `*height` rows of `*width` bytes, `pitch` apart,
  // within `room` unless `may_overrun`; a device-side span may also be
  // made to overrun on purpose.
  void shape_2d(bool may_overrun, uint64_t room, uint64_t pitch, uint64_t* width, uint64_t* height);

  void memcpy_op();

  void touch_both(const Op& op);

  void memcpy_2d();

  void peer();

  void batch();

  void kernel();

  void fill();

  void observe(int s);
  void observe_random();

  // ---------------------------------------------------- synchronization --

  void device_sync();
  void event_sync();
  void host_func();
  void wait_event();
  void mem_get_info();
  void ipc();

  void edge();

  // --------------------------------------------------- the driver API --
  // (generator_driver.cc)

  // One op through the driver: a memset, copy or synchronization made as
  // the runtime's are, then turned into its driver call (every op emitted
  // meanwhile is, where it has one: the synchronizations it needs too), or
  // a self-contained allocation or VMM round.
  void driver_op();
  // Turns `op` into its driver call where it has one (in emit, while
  // driver_ is set).
  void to_driver(Op* op);

  Rng rng_;
  std::vector<SlotModel> slots_;
  SlotModel stack_;
  bool pinned_overruns_;
  bool driver_ = false;  // driver_op is making its op
  std::vector<Op> ops_;
};

}  // namespace detail
}  // namespace differential

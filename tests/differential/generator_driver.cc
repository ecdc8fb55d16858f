// The driver API ops of ThreadGen (generator_thread.h): the runtime's
// memsets, copies and synchronizations made through their driver calls,
// and self-contained cuMemAlloc and VMM rounds, valid and invalid.
//
// A driver op keeps the runtime op's arguments and ordering (Note [Ordering
// the generator keeps]); only the entry point changes. Under
// allocator:vmm a runtime slot is a range inside one of gpuslack's VMM
// blocks, which the driver sees as one mapped range: a driver range past
// the slot's end stays inside the mapping and succeeds where the runtime
// alone refuses it, a documented difference (interpose/driver_hook_table.h:
// mixing the two APIs on one pointer), so such ops are marked not_under_vmm.
#include "generator_thread.h"

namespace differential {
namespace detail {

void ThreadGen::driver_op() {
  const uint64_t r = rng_.below(100);
  if (r < 14) {
    Op op;
    op.kind = OpKind::kDriverAlloc;
    op.variant = static_cast<uint8_t>(rng_.chance(40) ? 0 : rng_.below(static_cast<uint64_t>(DriverAllocCase::kCount)));
    op.n = rng_.chance(20) ? rng_.range(1, 4096) : rng_.range(4 * kKiB, 2 * kMiB);
    // A freed pointer is named again: no other thread may get it meanwhile.
    op.exclusive = static_cast<DriverAllocCase>(op.variant) == DriverAllocCase::kDoubleFree;
    return emit(op);
  }
  if (r < 24) {
    Op op;
    op.kind = OpKind::kDriverVmm;
    op.variant = static_cast<uint8_t>(rng_.chance(40) ? 0 : rng_.below(static_cast<uint64_t>(DriverVmmCase::kCount)));
    op.n = rng_.range(1, 3);  // granules
    return emit(op);
  }
  driver_ = true;
  if (r < 50) memset_op(false);
  else if (r < 85) memcpy_op();
  else if (r < 96) stream_sync(pick_ctx(5), rng_.chance(50));
  else device_sync();
  driver_ = false;
}

void ThreadGen::to_driver(Op* op) {
  auto device_ref = [&](const Ref& ref) { return ref.slot >= 0 && device_side(slots_[ref.slot].kind); };
  auto overruns = [&](const Ref& ref, uint64_t span) {
    return device_ref(ref) && ref.off + span > slots_[ref.slot].size;
  };
  switch (op->kind) {
    case OpKind::kMemset:
      op->flags = rng_.chance(35) ? 32 : 8;
      if (op->flags == 32) {
        op->n /= 4;  // words
        op->value = static_cast<int>(rng_.next() & 0xffffffffu);
      }
      op->not_under_vmm = op->not_under_vmm || overruns(op->dst, op->flags == 32 ? op->n * 4 : op->n);
      break;
    case OpKind::kMemcpy: {
      const bool d = device_ref(op->dst), s = device_ref(op->src);
      if (!d && !s) return;  // host to host: the runtime's call stays
      op->copy_kind = d && s ? cudaMemcpyDeviceToDevice : d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
      op->not_under_vmm = op->not_under_vmm || overruns(op->dst, op->n) || overruns(op->src, op->n);
      break;
    }
    case OpKind::kStreamSync: break;
    case OpKind::kDeviceSync: op->variant = static_cast<uint8_t>(rng_.below(2)); break;
    default: return;
  }
  op->driver = true;
}

}  // namespace detail
}  // namespace differential

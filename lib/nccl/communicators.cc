// See communicators.h. A slot goes empty -> claimed (comm stored by CAS) ->
// ready (fields written, then `state` released); readers trust a slot's
// fields only once it is ready. Dead slots keep their comm pointer for the
// summary but never match a lookup.
#include "nccl/communicators.h"

#include <nccl.h>

#include <atomic>

#include "cuda/nccl_api.h"
#include "log/log.h"

namespace gpuslack {
namespace nccl {
namespace {

enum State : int { kEmpty = 0, kClaimed = 1, kReady = 2, kDead = 3, kAborted = 4 };

struct Slot {
  std::atomic<void*> comm{nullptr};
  std::atomic<int> state{kEmpty};
  int nranks = 0, rank = -1, device = -1;
};

Slot g_slots[kMaxComms];
std::atomic<bool> g_full_logged{false};

size_t home_of(const void* comm) {
  uint64_t h = reinterpret_cast<uintptr_t>(comm) * 0x9E3779B97F4A7C15ull;
  return static_cast<size_t>(h >> 32) % kMaxComms;
}

__attribute__((noinline, cold)) CommInfo learn(void* comm) {
  CommInfo info;
  auto c = static_cast<ncclComm_t>(comm);
  if (cuda::nccl_comm_count(c, &info.nranks) != ncclSuccess) return CommInfo{};
  if (cuda::nccl_comm_user_rank(c, &info.rank) != ncclSuccess) info.rank = -1;
  if (cuda::nccl_comm_cu_device(c, &info.device) != ncclSuccess) info.device = -1;
  size_t home = home_of(comm);
  for (int i = 0; i < kMaxComms; ++i) {
    Slot& s = g_slots[(home + i) % kMaxComms];
    int expected = kEmpty;
    if (!s.state.compare_exchange_strong(expected, kClaimed, std::memory_order_acq_rel)) {
      // Another thread may be learning the same comm: then its answer is ours.
      continue;
    }
    s.comm.store(comm, std::memory_order_relaxed);
    s.nranks = info.nranks;
    s.rank = info.rank;
    s.device = info.device;
    s.state.store(kReady, std::memory_order_release);
    return info;
  }
  if (!g_full_logged.exchange(true)) log::warn("more than {} NCCL communicators: later ones are not described", kMaxComms);
  return info;
}

}  // namespace

CommInfo comm_info(void* comm) {
  if (comm == nullptr) return CommInfo{};
  size_t home = home_of(comm);
  for (int i = 0; i < kMaxComms; ++i) {
    Slot& s = g_slots[(home + i) % kMaxComms];
    int state = s.state.load(std::memory_order_acquire);
    if (state == kEmpty) break;
    if (state == kReady && s.comm.load(std::memory_order_relaxed) == comm) return {s.nranks, s.rank, s.device};
  }
  return learn(comm);
}

void comm_forget(void* comm, bool aborted) {
  if (comm == nullptr) return;
  for (Slot& s : g_slots) {
    int expected = kReady;
    if (s.comm.load(std::memory_order_relaxed) == comm &&
        s.state.compare_exchange_strong(expected, aborted ? kAborted : kDead, std::memory_order_acq_rel))
      return;
  }
}

std::vector<CommRow> comms_seen() {
  std::vector<CommRow> out;
  for (const Slot& s : g_slots) {
    int state = s.state.load(std::memory_order_acquire);
    if (state < kReady) continue;
    out.push_back({s.nranks, s.rank, s.device, state == kReady, state == kAborted});
  }
  return out;
}

void reset_comms() {
  for (Slot& s : g_slots) {
    s.comm.store(nullptr, std::memory_order_relaxed);
    s.state.store(kEmpty, std::memory_order_release);
  }
}

}  // namespace nccl
}  // namespace gpuslack

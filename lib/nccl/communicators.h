// The NCCL communicators gpuslack has seen: size, rank and device of each,
// learned from the real library the first time a collective names one.
//
// A fixed open-addressed table (kMaxComms slots) keyed by the communicator's
// address. Lookup (comm_info) is lock-free and allocation-free: a few
// acquire loads. The first sight of a communicator is the slow path (out of
// line): it asks the real NCCL (cuda/nccl_api.h) for count, rank and device
// and claims a slot with a CAS. A communicator that NCCL cannot describe yet
// (a non-blocking one still initializing) is not cached: the call is
// recorded with nranks 0 and the next call asks again. comm_forget marks a
// destroyed or aborted communicator dead (a later one may reuse its
// address); dead rows stay for the summary's context.
//
// A full table degrades to "unknown size" (nranks 0) with one log line.
//
// Thread safety: every function, any thread.
#pragma once

#include <cstdint>
#include <vector>

namespace gpuslack {
namespace nccl {

inline constexpr int kMaxComms = 256;

struct CommInfo {
  int nranks = 0;  // 0: unknown
  int rank = -1;
  int device = -1;
};

// What the table knows of `comm`, asking NCCL on first sight.
CommInfo comm_info(void* comm);

// `comm` was destroyed (aborted = true: by ncclCommAbort).
void comm_forget(void* comm, bool aborted);

struct CommRow {
  int nranks = 0;
  int rank = -1;
  int device = -1;
  bool alive = true;
  bool aborted = false;
};

// Every communicator seen, in the order first seen (by slot: stable).
std::vector<CommRow> comms_seen();

// Forgets every communicator (a forked child starts clean).
void reset_comms();

}  // namespace nccl
}  // namespace gpuslack

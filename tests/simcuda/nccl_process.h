// libnccl.so.2 of the simulated device: communicators whose ranks are in
// different processes (README.md, "NCCL", "Across processes").
//
// Every ncclCommInitRank[Config] registers its rank in a shared-memory
// segment named from the unique id (/dev/shm/gpusim-nccl-<pid>-<nonce>-<n>,
// the creator's pid first, so a segment whose creator died can be swept).
// When the process's own ranks complete the rendezvous alone, the
// communicator is the in-process one of nccl_comm.cc and the segment is
// unlinked at once. Otherwise, once every rank registered, the
// communicator's collectives run through the segment: each rank publishes
// its arrival (steady-clock ns, the same clock in every process) and its
// call, waits for every peer, then the data moves through one 4 MiB window
// per rank at a time (write, barrier; for reductions each rank reduces its
// 1/n share of the windows into a shared result, barrier; each rank copies
// its output, barrier). Waiters sleep on a futex in the segment. The op's
// modeled time starts at the last arrival, as in process: a late rank
// makes the others wait.
//
// Waits are bounded: a peer that left (destroyed or aborted its comm), whose
// process exited, or that does not arrive within GPUSIM_NCCL_TIMEOUT_S
// (default 60) fails the op with ncclRemoteError and one stderr line.
//
// Thread safety: register/complete/inspect under the init registry's mutex
// (nccl_comm.cc); collective() from the rank's stream worker; leave() from any
// thread. Test-only; never included by the product.
// Included through nccl_internal.h (which includes nccl.h first, with the
// default visibility the exports need).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim.h"

namespace ncclsim {

struct Work;

class Segment {
 public:
  // Creates or opens the segment of `id` (ids from ncclGetUniqueId, see
  // make_id) and registers `rank` of `nranks` on `device`. Errors:
  // ncclInvalidArgument (rank already there, nranks differs), ncclSystemError.
  static ncclResult_t join(const ncclUniqueId& id, int nranks, int rank, int device,
                           std::shared_ptr<Segment>* out);
  // Registers one more rank of this process in a segment it already joined.
  ncclResult_t claim(int rank, int device);
  ~Segment();

  // Fills `id` with a fresh id: magic, a process-local number, pid, nonce.
  // Also sweeps segments left by exited creators.
  static void make_id(ncclUniqueId* id, uint64_t number);
  // The in-process rendezvous key of an id (0: not one of ours).
  static uint64_t key_of(const ncclUniqueId& id);

  int nranks() const { return nranks_; }
  const std::string& name() const { return name_; }  // the shm name, with its '/'
  bool complete() const;               // every rank registered
  std::vector<int> devices() const;    // per rank, once complete
  std::vector<int> nodes() const;      // per rank (GPUSIM_NODE of its process), once complete
  // Removes the name (the mapping lives on while this object does).
  void unlink();
  // A rank's comm is gone (destroyed; aborted): peers waiting for it fail.
  // The last rank to leave unlinks the segment.
  void leave(int rank, bool aborted);

  // One rank's part in a collective: blocks until every rank arrived and
  // the data moved; `*end` = modeled completion (last arrival + modeled
  // time). `stop()` is polled: true ends the wait (a local abort).
  ncclResult_t collective(int rank, const Work& w, const std::function<bool()>& stop,
                          gpusim::Clock::time_point* end);

  // Whether this process can run `w` across processes.
  static bool supported(const Work& w);

  struct Header;
  struct Slot;

 private:
  Segment() = default;
  Slot& slot(int r) const;
  void notify();
  char* window(int r) const;
  // Waits until `ready()` for the ranks in `who`; ncclRemoteError with one
  // stderr line when a peer left, died or timed out. `what` names the wait.
  ncclResult_t wait_all(int me, const std::function<bool(int)>& ready, const std::function<bool()>& stop,
                        const char* what, uint64_t seq);

  std::string name_;
  int nranks_ = 0;
  void* base_ = nullptr;
  size_t size_ = 0;
  std::vector<uint64_t> seq_;    // per rank: collectives so far (that rank's worker only)
  std::vector<uint64_t> steps_;  // per rank: data steps so far
};

}  // namespace ncclsim

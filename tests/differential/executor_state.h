// Internals of the executor shared by executor.cc (threads, barriers,
// global checks) and executor_ops.cc (one function per op). Not to be
// included elsewhere.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "executor.h"

namespace differential {
namespace detail {

// What a slot holds in this run.
struct Slot {
  BufKind kind = BufKind::kEmpty;
  char* p = nullptr;
  uint64_t size = 0, pitch = 0;
  bool registered = false;
  std::unique_ptr<char[]> pageable;  // kPageable: the memory itself
  bool live() const { return kind != BufKind::kEmpty; }
};

struct ThreadState {
  const RunConfig* config = nullptr;
  const Api* api = nullptr;
  uint64_t seed = 0;
  int thread = 0;
  size_t index = 0;  // of the op being run
  std::vector<Slot> slots;
  cudaStream_t own[kOwnStreams] = {};
  cudaEvent_t events[2] = {};
  cudaMemPool_t pool = nullptr;
  char* stack = nullptr;  // Bogus::kStack: kStackBytes on this thread's stack
};

// The stream handle an op passes for `c` (ptsz: through a _ptsz/_ptds entry point).
cudaStream_t stream_of(const ThreadState& t, Ctx c, bool ptsz);

// Runs one op (never kBarrier) into *r; false if it had to be skipped.
bool run_op(ThreadState& t, const Op& op, Result* r);

// Frees whatever is still live in `t` through its Api (a run that stopped
// early, or a shrunk program), best effort.
void release_all(ThreadState& t);

// Deterministic bytes for fills and new pageable buffers.
void fill_bytes(char* p, uint64_t n, uint64_t key);
// One hash per 512 bytes of [p, p + n).
std::vector<uint32_t> block_hashes(const char* p, uint64_t n);

constexpr uint64_t kHashBlock = 512;

}  // namespace detail
}  // namespace differential

// Internals of the executor shared by executor.cc (threads, barriers,
// global checks) and executor_ops.cc (one function per op). Not to be
// included elsewhere.
#pragma once

#include <cuda_runtime_api.h>

#include <cerrno>
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
bool run_edge(ThreadState& t, const Op& op, Result* r);  // kAllocEdge (executor_edges.cc)
// Driver ops: Op::driver, kDriverAlloc, kDriverVmm (executor_driver.cc).
bool run_driver(ThreadState& t, const Op& op, Result* r);

// An out-parameter's value before the call (Result::v[0] tells whether the
// call cleared it, set it, or left it), and handles nothing has.
inline void* const kSentinel = reinterpret_cast<void*>(0x1);
inline const cudaStream_t kBogusStream = reinterpret_cast<cudaStream_t>(0x1234);
inline const cudaMemPool_t kBogusPool = reinterpret_cast<cudaMemPool_t>(0x99);
constexpr uint64_t kHuge = uint64_t{1} << 50;  // more than any device or host has

inline cudaExtent extent(uint64_t w, uint64_t h) {
  cudaExtent e;
  e.width = w;
  e.height = h;
  e.depth = 1;
  return e;
}

// 0: NULL, 1: set, 2: left untouched.
inline int64_t out_state(const void* p) { return p == nullptr ? 0 : p == kSentinel ? 2 : 1; }

// Calls `fn` with errno cleared first, keeping errno after it in r->err.
template <typename Fn>
cudaError_t call(Result* r, Fn fn) {
  errno = 0;
  cudaError_t e = fn();
  r->err = errno;
  return e;
}

// See Note [What an op may ask the runtime to touch]: the pointer `ref` names
// for an access of `span` bytes, or false when this run must not make it
// (executor_ops.cc).
bool resolve(ThreadState& t, const Ref& ref, uint64_t span, bool refused_untouched, char** out);
// Frees what a call returned where it should not have; its rc.
int64_t give_back(ThreadState& t, void* p, bool host);

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

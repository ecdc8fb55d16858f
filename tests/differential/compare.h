// The comparison of a hooked run with the runtime's own run of the same
// program, op by op as the hooked run goes (executor.h's checks), and the
// report of the first difference: a reproduction (mode, seed, thread, op
// index, the op and what the slots held, both results, the thread's ops
// just before).
//
// What must be equal, per op: skipped or not, the return code, the last
// error peeked and read, errno (but EAGAIN and EINTR, which contended locks
// inside the runtime leave at random, match anything), what the op gave
// back (Result::v), and every byte a read-back saw. At each barrier: the synchronization's and
// cudaMemGetInfo's codes, total memory, and free memory by this rule:
//   - default, async_d2h, exact_copy_semantics: equal (gpuslack allocates
//     no device memory in these modes);
//   - allocator:vmm: equal too, with the device synchronized (as it is at
//     a barrier). gpuslack's "free" is the driver's plus what it keeps
//     mapped with no live block in it, freed blocks included (docs/allocator.md,
//     "cudaMemGetInfo"), so it is the device's memory less the live blocks
//     and what the runtime allocated itself; live blocks are rounded to
//     512 bytes as the simulated runtime rounds cudaMalloc's: the same sum.
//     (Main before the fix reported freed memory as used: 0 MiB free of
//     1,024 with everything freed; a partial revert leaves a few MiB.)
// And at the end: the big allocations' codes equal (a pass-through
// allocation that succeeds natively succeeds under gpuslack), and no busy
// kernel saw its buffer change.
//
// Thread safety: op() and global() from any thread at once.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "executor.h"
#include "program.h"

namespace differential {

class Comparator {
 public:
  // `how` is the command line that reruns this seed (for the report).
  Comparator(const Program& program, const Trace& native, std::string mode, std::string how);

  bool op(int thread, size_t index, const Result& hooked);
  bool global(size_t barrier, const GlobalResult& hooked);
  // After the run: what only the whole run tells (kernel violations).
  bool finish(const Trace& hooked);

  bool failed() const;
  std::string report() const;  // every difference found, each a reproduction
  // The first difference in one line: where (thread and op index in the
  // seed's program, or barrier) and what kind; shrink.h compares them.
  std::string signature() const;

 private:
  std::string op_report(int thread, size_t index, const Result& hooked, const std::string& why) const;
  void add(std::string text, std::string signature);

  const Program& program_;
  const Trace& native_;
  const std::string mode_, how_;
  mutable std::mutex mu_;
  std::vector<std::string> reports_;
  std::string signature_;
};

// One line for a result, e.g. "rc 1 cudaErrorInvalidValue, peek 1, get 1, errno 0".
std::string describe(const Result& r);

}  // namespace differential

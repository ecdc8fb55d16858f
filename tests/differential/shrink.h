// Shrinking: from a seed whose hooked run differs (or crashes), the
// smallest program found that still fails the same way, by rerunning
// subsets of it, each in a child process (a crash, or a diverged allocator,
// must not take the search down with it).
//
// A subset keeps, per thread, some of the ops a program may lose; the
// others stay always: stream creation and destruction, synchronizations,
// initializations of new buffers and barriers — what keeps any subset
// ordered and deterministic (Note [Ordering the generator keeps]) and the
// threads meeting at every barrier. The executor skips ops whose buffers a
// subset no longer allocates. "Fails the same way": the first difference
// is at the same op of the seed's program (or the same barrier), of the
// same kind (Comparator::signature()), or the child dies of a signal again.
//
// The search: first every other thread's ops, then everything after the
// failing op, then halving chunks of what is left (delta debugging), within
// a time budget.
//
// Thread safety: single-threaded (the supervisor runs no CUDA itself).
#pragma once

#include <string>
#include <vector>

#include "program.h"

namespace differential {

// Whether a subset may drop `op`.
bool droppable(const Op& op);

// "t:i,j-k;t:..." : per thread, the droppable ops kept (by index in the
// seed's program); a thread not named keeps none.
std::string encode_subset(const std::vector<std::vector<bool>>& keep);
// Applies `spec` to `program` (ThreadProgram::origin records the indices);
// false if it does not parse.
bool apply_subset(const std::string& spec, Program* program);

struct Supervisor {
  std::vector<std::string> args;  // the command line, without --seed(s), --shrink, --random
  double budget_s = 90;
};

// Runs `program`'s seed in a child; if it fails, shrinks and prints the
// smallest failing subset and its report. Returns 0 when it passed.
int supervise(const Supervisor& s, const Program& program);

}  // namespace differential

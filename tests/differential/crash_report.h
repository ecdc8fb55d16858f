// What the process was doing when it died: on SIGSEGV, SIGBUS, SIGFPE,
// SIGILL or SIGABRT, one line per thread of the program being run naming
// the op it was in (seed, run, thread, op index, the op), written with
// write(2) only; then the signal goes on to the handler installed before
// (a sanitizer's) or to its default action.
//
// A bug in the hooked run can crash the process rather than return a wrong
// code (the SIGSEGV of an overrunning staged copy): this is that
// case's reproduction. The op that enqueued a faulting DMA may have
// returned already; the lines name where each thread had got to.
//
// Thread safety: begin()/end() from the thread that runs the program; at()
// from each program thread (one relaxed store).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace differential {
namespace crash_report {

// Installs the handlers (once).
void install();
// A run begins: `descriptions[t][i]` describes op i of thread t (kept
// alive by the caller until end()).
void begin(const std::string& label, uint64_t seed, const std::vector<std::vector<std::string>>* descriptions);
// Thread `thread` is at op `index`.
void at(int thread, size_t index);
void end();

}  // namespace crash_report
}  // namespace differential

// A forked child that hung: its threads' stacks, printed for the log, and
// whether what it waits for is a lock of the sanitizer's runtime rather
// than one of gpuslack's (child_process.h, interpose/programs/fork_app.cc).
//
// Note [A sanitizer's lock held at a fork]: the sanitizer runtimes of this
// toolchain (GCC 12's libasan and libtsan) do not take their allocator's
// locks around a fork. A child forked while another thread of its parent
// is inside the sanitizer's malloc (refilling a size class: the region's
// mutex held) inherits that mutex locked and hangs at its first malloc of
// that size class, in the sanitizer, whatever the program does. Shown
// without gpuslack: three threads looping malloc/free and a main thread
// forking 300 times, each child mallocing, hung 1 child in 300 under
// -fsanitize=address and none without; gdb showed it in
// __sanitizer::SizeClassAllocator64::GetFromAllocator ->
// __sanitizer::Mutex::Lock. (LLVM's compiler-rt has since locked the
// allocator around fork in its own atfork handlers; glibc's malloc always
// has.) Under CI's load this hung a forked child of the fork tests about
// once a run (StagerFork's, and fork_app's, whose parent loops pinned
// pairs: there 2 of 160 forks by hand, each child waiting, on every thread,
// for one region's mutex in GetFromAllocator). Every fork is retried on
// its own. So a child whose stacks show it waiting in the sanitizer's
// own Mutex/SpinMutex is counted apart and forked again, a bounded number
// of times; a child hung anywhere else, on gpuslack's locks included, fails
// its test as before, with its stacks in the log. Without gdb, every hang
// fails.
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <string>

namespace gpuslack {
namespace test {

// How many times a fork is tried while its child hangs on a sanitizer's
// lock (Note [A sanitizer's lock held at a fork]).
constexpr int kForksPerSanitizerHang = 3;
// Whether this build runs under a sanitizer (ASan or TSan): only then is a
// hang excused, and deadlines stretched.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
// The most gdb may take to attach and print (thread_stacks).
constexpr int kGdbSeconds = 30;

// A process that forks children of its own waits, in the worst case, for
// kForksPerSanitizerHang of them to hang, each for its deadline and gdb's
// (kGdbSeconds): under a sanitizer, a deadline of `seconds` for such a
// process is stretched by that much.
inline double with_sanitizer_retries(double seconds) {
  return kSanitized ? kForksPerSanitizerHang * (seconds + kGdbSeconds) : seconds;
}

// gdb's backtrace of every thread of process `pid` (it must be our child,
// or ptrace must be allowed), "" when gdb is missing or cannot attach. gdb
// runs without the program's LD_PRELOAD (a sanitized libgpuslack.so
// preloaded into gdb would stop it before it attached).
inline std::string thread_stacks(pid_t pid) {
  char command[200];
  std::snprintf(command, sizeof command,
                "env -u LD_PRELOAD timeout %d gdb -nx -batch -p %d -ex 'thread apply all bt 24' 2>/dev/null </dev/null",
                kGdbSeconds, static_cast<int>(pid));
  std::string out;
  if (FILE* p = popen(command, "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
  }
  return out;
}

// Whether a thread in `stacks` (thread_stacks' text) waits on a lock of the
// sanitizer's runtime: one of its five innermost frames is the runtime's own
// mutex (__sanitizer::Mutex, SpinMutex, BlockingMutex, or their wait). A
// program's pthread_mutex_lock under a sanitizer shows the interceptor and
// libc's futex instead, and does not count.
inline bool waits_on_a_sanitizer_lock(const std::string& stacks) {
  size_t at = 0;
  while ((at = stacks.find("\n#", at)) != std::string::npos) {
    ++at;
    const size_t end = stacks.find('\n', at);
    const std::string frame = stacks.substr(at, end == std::string::npos ? std::string::npos : end - at);
    int depth = -1;
    if (std::sscanf(frame.c_str(), "#%d", &depth) != 1 || depth > 4) continue;
    for (const char* lock : {"__sanitizer::Mutex::Lock", "__sanitizer::StaticSpinMutex::Lock",
                             "__sanitizer::SpinMutex::Lock", "__sanitizer::BlockingMutex::Lock",
                             "__sanitizer::Semaphore::Wait", "__sanitizer::FutexWait"})
      if (frame.find(lock) != std::string::npos) return true;
  }
  return false;
}

// Prints the hung child's stacks to stderr; whether it waits on a
// sanitizer's lock. Only builds under a sanitizer say so.
inline bool report_hung_child(pid_t pid, double seconds) {
  const std::string stacks = thread_stacks(pid);
  std::fprintf(stderr, "child %d still running after %.0f s; its threads:\n%s\n", static_cast<int>(pid), seconds,
               stacks.empty() ? "(no stacks: gdb missing or not allowed to attach)" : stacks.c_str());
  return kSanitized && waits_on_a_sanitizer_lock(stacks);
}

}  // namespace test
}  // namespace gpuslack

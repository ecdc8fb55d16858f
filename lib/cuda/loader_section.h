// The dynamic loader's calls gpuslack makes (dl_iterate_phdr, dlopen),
// kept out of the way of a fork.
//
// Note [gpuslack's loader calls and fork]: glibc's dl_iterate_phdr holds
// the loader's write lock (dl_load_write_lock) for the whole walk, and
// dlopen takes it while it adds an object; fork() neither waits for that
// lock nor resets it in the child (glibc 2.36; JuliaLang/julia#57035 works
// around the same). A child forked while another thread of its parent was
// inside either call waits forever at its first dl_iterate_phdr, which C++
// exception unwinding makes too, not only gpuslack. gpuslack's own threads
// (the reporter's NVML and driver loads once a second until they succeed,
// the GPU timeline's CUPTI load) made such calls at moments the program
// does not choose: a child of a process that forked then hung (the test
// Fork.TheChildNeverWaitsForTheSessionsLocks, 1 in 25 runs under TSan).
// Every loader call of gpuslack's now runs inside a LoaderSection, and a
// fork handler (registered by the first section, before its lock) waits,
// before the fork, until no thread is inside one: no child inherits the lock from gpuslack. (A lock held by
// the program's own threads stays the program's, as without gpuslack.)
//
// Sections nest on one thread (a dlopen's constructors may call back into
// gpuslack's hooks, which may resolve a symbol): only the outermost takes
// the lock. A fork from inside a section (a constructor that forks) does
// not wait for itself.
//
// Thread safety: any thread. The fork handler's wait is bounded by the
// longest loader call in progress (a dlopen: milliseconds).
#pragma once

namespace gpuslack {
namespace cuda {

class LoaderSection {
 public:
  LoaderSection();
  ~LoaderSection();
  LoaderSection(const LoaderSection&) = delete;
  LoaderSection& operator=(const LoaderSection&) = delete;

 private:
  bool outermost_;
};

namespace testing {
// Tests of the Note only: runs `during(arg)` inside a LoaderSection, inside
// a dl_iterate_phdr walk (whose callback calls it once), as a loader call
// of gpuslack's in progress would be.
void inside_loader_walk(void (*during)(void*), void* arg);
}  // namespace testing

}  // namespace cuda
}  // namespace gpuslack

// See Note [gpuslack's loader calls and fork] (loader_section.h).
#include "cuda/loader_section.h"

#include <link.h>
#include <pthread.h>

#include <atomic>
#include <mutex>

#include "base/fork_handler.h"

namespace gpuslack {
namespace cuda {
namespace {

std::mutex g_mu;  // held by the outermost section in progress, and across a fork
thread_local int t_depth = 0;
thread_local bool t_fork_waited = false;  // this thread's fork took g_mu

void before_fork() {
  if (t_depth > 0) return;  // forking from inside our own section: nothing else is inside
  g_mu.lock();
  t_fork_waited = true;
}

void after_fork() {
  if (!t_fork_waited) return;
  t_fork_waited = false;
  g_mu.unlock();  // a normal mutex: the child's thread may unlock what its parent's took
}

// Registered by the first section, before its lock is taken
// (base/fork_handler.h: never at load, never under the lock).
std::atomic<bool> g_registered{false};

}  // namespace

LoaderSection::LoaderSection() : outermost_(t_depth++ == 0) {
  if (!outermost_) return;
  register_fork_handlers_once(g_registered, before_fork, after_fork, after_fork);
  g_mu.lock();
}

LoaderSection::~LoaderSection() {
  if (outermost_) g_mu.unlock();
  --t_depth;
}

namespace testing {
namespace {
struct Walk {
  void (*during)(void*);
  void* arg;
  bool called;
};
int call_once(dl_phdr_info*, size_t, void* data) {
  auto* w = static_cast<Walk*>(data);
  if (!w->called) {
    w->called = true;
    w->during(w->arg);
  }
  return 1;  // stop the walk
}
}  // namespace

void inside_loader_walk(void (*during)(void*), void* arg) {
  LoaderSection section;
  Walk w{during, arg, false};
  dl_iterate_phdr(call_once, &w);
}
}  // namespace testing

}  // namespace cuda
}  // namespace gpuslack

// Forked children for the tests of what a fork does (session/fork_test.cc,
// stage/fork_test.cc, alloc/block_ipc_fork_test.cc, cuda/loader_section_test.cc):
// waits with a deadline, so that a child that hangs fails its test instead
// of hanging the suite.
#pragma once

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <utility>

#include "hung_child.h"

namespace gpuslack {
namespace test {

// Waits for child `pid` up to `seconds`: its wait status; -1 if it was
// still running (its threads' stacks are then printed to stderr, and it is
// killed and reaped); kHungOnASanitizerLock instead of -1 when it hung on a
// lock of the sanitizer's runtime (See Note [A sanitizer's lock held at a
// fork]); -2 if waitpid failed.
constexpr int kHungOnASanitizerLock = -3;
inline int wait_for_child(pid_t pid, double seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0) return -2;
    poll(nullptr, 0, 5);
  }
  const bool sanitizers = report_hung_child(pid, seconds);
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return sanitizers ? kHungOnASanitizerLock : -1;
}

// Child `pid`'s exit code within `seconds`; -1 if it hung (killed), -2 if
// it did not exit normally, kHungOnASanitizerLock as wait_for_child.
inline int child_exit_code(pid_t pid, double seconds) {
  const int status = wait_for_child(pid, seconds);
  if (status == -1 || status == kHungOnASanitizerLock) return status;
  return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -2;
}

// Forks; the child runs `in_child` and leaves through exit() (atexit
// handlers run, as in a data-loader worker) or, with `through_exit` false,
// _exit(). The child's exit code, as child_exit_code. A child that hung on
// a sanitizer's lock is forked again, at most kForksPerSanitizerHang times
// in all (See Note [A sanitizer's lock held at a fork]).
inline int fork_and_wait(const std::function<int()>& in_child, double seconds, bool through_exit = true) {
  for (int fork_number = 1;; ++fork_number) {
    pid_t pid = fork();
    if (pid == 0) {
      const int code = in_child();
      if (through_exit) std::exit(code);
      _exit(code);
    }
    const int code = child_exit_code(pid, seconds);
    if (code != kHungOnASanitizerLock || fork_number == kForksPerSanitizerHang) return code;
    std::fprintf(stderr, "forking again: the child hung on a lock of the sanitizer's runtime\n");
  }
}

// Runs `body` in a process of its own (after `first`, when given): its exit
// code, or a negative number if it did not exit within `seconds` or not
// normally. `body` may fork and wait for children of its own: under a
// sanitizer the deadline allows for their retries (with_sanitizer_retries).
inline int in_own_process(const std::function<int()>& body, double seconds, void (*first)() = nullptr) {
  return fork_and_wait(
      [&] {
        if (first) first();
        return body();
      },
      with_sanitizer_retries(seconds), false);
}

// Runs `body` on a thread of its own whose stack no thread of the default
// size reuses: a thread a forked child starts takes the stack of one of its
// parent's (glibc caches them at the fork), hence its pthread_t, and TSan,
// which still counts the parent's joinable threads, dies on the duplicate
// ("dup thread with used id"). Meant as the one joinable thread at a fork.
class BigStackThread {
 public:
  explicit BigStackThread(std::function<void()> body) : body_(std::move(body)) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64u << 20);  // more than 4x the default 8 MiB
    started_ = pthread_create(&thread_, &attr, &BigStackThread::run, this) == 0;
    pthread_attr_destroy(&attr);
  }
  BigStackThread(const BigStackThread&) = delete;
  BigStackThread& operator=(const BigStackThread&) = delete;
  void join() {
    if (started_) pthread_join(thread_, nullptr);
    started_ = false;
  }

 private:
  static void* run(void* self) {
    static_cast<BigStackThread*>(self)->body_();
    return nullptr;
  }
  std::function<void()> body_;
  pthread_t thread_{};
  bool started_ = false;
};

}  // namespace test
}  // namespace gpuslack

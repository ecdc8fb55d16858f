// The fork tests' view of a hung child (hung_child.h, child_process.h):
// only a wait inside the sanitizer runtime's own mutex is excused (Note [A
// sanitizer's lock held at a fork]); a child blocked on a program's lock
// is hung, under a sanitizer or not.
#include <pthread.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

#include "child_process.h"

namespace gpuslack {
namespace test {
namespace {

// gdb's lines for the hang the Note describes (GCC 12's libasan).
const char* const kAsanRegionLock =
    "Thread 1 (Thread 0x7f2d48bfd6c0 (LWP 28266) \"fa\"):\n"
    "#0  0x00007f2d4bcd251e in __sanitizer::FutexWait (p=p@entry=0x640000000708, cmp=cmp@entry=0) at "
    "sanitizer_linux.cpp:672\n"
    "#1  0x00007f2d4bcd4e0b in __sanitizer::Semaphore::Wait (this=this@entry=0x640000000708) at "
    "sanitizer_mutex.cpp:35\n"
    "#2  0x00007f2d4bc2ab6d in __sanitizer::Mutex::Lock (this=0x640000000700) at sanitizer_mutex.h:194\n"
    "#3  __sanitizer::GenericScopedLock<__sanitizer::Mutex>::GenericScopedLock (mu=0x640000000700) at "
    "sanitizer_mutex.h:367\n"
    "#4  __sanitizer::SizeClassAllocator64<...>::GetFromAllocator (...) at sanitizer_allocator_primary64.h:207\n";

// A program's own mutex under ASan: the interceptor, then libc.
const char* const kProgramsMutex =
    "Thread 1 (Thread 0x7f0 (LWP 4242) \"app\"):\n"
    "#0  futex_wait (private=0, expected=2, futex_word=0x55d0) at ../sysdeps/nptl/futex-internal.h:146\n"
    "#1  __GI___lll_lock_wait (futex=0x55d0, private=0) at ./nptl/lowlevellock.c:49\n"
    "#2  0x00007f in ___pthread_mutex_lock (mutex=0x55d0) at ./nptl/pthread_mutex_lock.c:93\n"
    "#3  0x00007f in __interceptor_pthread_mutex_lock (m=0x55d0) at sanitizer_common_interceptors.inc:4324\n"
    "#4  0x000055 in gpuslack::stage::host_copy (...) at lib/stage/host_copy.cc:90\n";

TEST(HungChild, OnlyTheSanitizersOwnMutexIsExcused) {
  EXPECT_TRUE(waits_on_a_sanitizer_lock(kAsanRegionLock));
  EXPECT_FALSE(waits_on_a_sanitizer_lock(kProgramsMutex));
  EXPECT_FALSE(waits_on_a_sanitizer_lock(""));
  // The sanitizer's mutex deep in a stack (a frame past the fifth) is not
  // what the thread waits on.
  std::string deep = "Thread 1 (LWP 1):\n#0  futex_wait () at x.h:1\n#1  a ()\n#2  b ()\n#3  c ()\n#4  d ()\n"
                     "#5  __sanitizer::Mutex::Lock (this=0x1) at sanitizer_mutex.h:194\n";
  EXPECT_FALSE(waits_on_a_sanitizer_lock(deep));
}

pthread_mutex_t g_held = PTHREAD_MUTEX_INITIALIZER;

// A child blocked on a lock its parent's other thread held at the fork is
// hung, in every build: -1, never the sanitizer's code, and forked once.
TEST(HungChild, AChildBlockedOnAProgramsLockFailsAfterOneFork) {
  EXPECT_EQ(0, in_own_process(
                   [] {
                     pthread_mutex_lock(&g_held);
                     const int code = fork_and_wait(
                         [&] {
                           pthread_mutex_lock(&g_held);  // never returns: the parent holds it
                           return 0;
                         },
                         1, false);
                     return code == -1 ? 0 : 10 + (code == kHungOnASanitizerLock);
                   },
                   120));
}

}  // namespace
}  // namespace test
}  // namespace gpuslack

// Note [gpuslack's loader calls and fork] (lib/cuda/loader_section.h): a
// child forked while another thread is inside one of gpuslack's loader
// calls does not inherit the loader's lock.
//
// Each case runs in a process of its own (forked from the test binary), so
// that its threads and forks stay there. A child that hangs is killed after
// kChildSeconds and fails the case.
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "child_process.h"
#include "cuda/loader_section.h"

namespace gpuslack {
namespace cuda {
namespace {

constexpr double kChildSeconds = 20;

int in_own_process(const std::function<int()>& body) { return test::in_own_process(body, 3 * kChildSeconds); }

int count_objects(dl_phdr_info*, size_t, void* n) {
  ++*static_cast<int*>(n);
  return 0;
}

// What a child's first exception or symbol lookup does: walk the loaded objects.
int child_walks_the_loader() {
  int n = 0;
  dl_iterate_phdr(count_objects, &n);
  return n > 0 ? 0 : 5;
}

void hold_for_a_while(void* entered) {
  static_cast<std::atomic<int>*>(entered)->store(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

TEST(LoaderSection, AForkWaitsUntilNoLoaderCallOfOursIsInProgress) {
  EXPECT_EQ(0, in_own_process([] {
              std::atomic<int> entered{0};
              std::thread walker([&] { testing::inside_loader_walk(hold_for_a_while, &entered); });
              while (entered.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
              // The walker is inside dl_iterate_phdr, holding the loader's lock.
              const auto t0 = std::chrono::steady_clock::now();
              pid_t child = fork();
              if (child == 0) _exit(child_walks_the_loader());
              const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
              int code = test::child_exit_code(child, kChildSeconds);
              walker.join();
              if (code != 0) return code == -1 ? 10 : 11;  // 10: the child hung
              return waited > 0.1 ? 0 : 12;  // the fork waited for the walk to end
            }));
}

TEST(LoaderSection, SectionsNestAndAForkFromInsideOneDoesNotWaitForItself) {
  EXPECT_EQ(0, in_own_process([] {
              LoaderSection outer;
              {
                LoaderSection inner;  // a dlopen's constructor calling back into gpuslack
              }
              pid_t child = fork();
              if (child == 0) _exit(child_walks_the_loader());
              return test::child_exit_code(child, kChildSeconds) == 0 ? 0 : 13;
            }));
}

TEST(LoaderSection, AForkWithNoSectionInProgressDoesNotWait) {
  EXPECT_EQ(0, in_own_process([] {
              { LoaderSection done; }  // the handler is registered, the lock let go
              const auto t0 = std::chrono::steady_clock::now();
              pid_t child = fork();
              if (child == 0) _exit(child_walks_the_loader());
              const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
              const int code = test::child_exit_code(child, kChildSeconds);
              if (code != 0) return code == -1 ? 10 : 11;
              return took < 0.25 ? 0 : 14;  // the walker case waits 300 ms; nothing to wait for here
            }));
}

}  // namespace
}  // namespace cuda
}  // namespace gpuslack

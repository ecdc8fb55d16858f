// The process's timeline (timeline.h) where it needs no CUPTI: its keys,
// a forked child, and where libcupti is looked for (cuda/cupti_api.h).
#include "timeline/timeline.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda/cupti_api.h"

namespace gpuslack {
namespace timeline {
namespace {

TEST(Timeline, Keys) {
  EXPECT_STREQ(status_key(Status::kHeldByOther), "held_by_other");
  EXPECT_STREQ(status_key(Status::kNotStarted), "not_started");
  EXPECT_STREQ(busy_key(Busy::kCommunication), "communication");
  EXPECT_STREQ(idle_key(Idle::kHostBound), "host_bound");
  EXPECT_STREQ(idle_key(Idle::kLaunchBound), "launch_bound");
}

TEST(Timeline, AForkedChildMeasuresNothing) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    after_fork_child();
    bool ok = snapshot().status == Status::kNotStarted;
    start();  // a session of the child's own: still nothing
    Snapshot s = snapshot();
    ok = ok && s.status == Status::kUnavailable && s.devices.empty();
    stop();
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(CuptiApi, LooksBesideTheRuntimeThenCudaHomeThenTheLoader) {
  auto c = cuda::cupti_candidates("/venv/site-packages/nvidia/cu13/lib/libcudart.so.13", "/usr/local/cuda/", 13);
  ASSERT_EQ(c.size(), 5u);
  EXPECT_EQ(c[0], "/venv/site-packages/nvidia/cu13/lib/libcupti.so.13");
  EXPECT_EQ(c[1], "/venv/site-packages/nvidia/cuda_cupti/lib/libcupti.so.13");
  EXPECT_EQ(c[2], "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13");
  EXPECT_EQ(c[3], "/usr/local/cuda/lib64/libcupti.so.13");
  EXPECT_EQ(c[4], "libcupti.so.13");
  auto twelve = cuda::cupti_candidates("/x/nvidia/cuda_runtime/lib/libcudart.so.12", nullptr, 12);
  ASSERT_EQ(twelve.size(), 3u);
  EXPECT_EQ(twelve[1], "/x/nvidia/cuda_cupti/lib/libcupti.so.12");
  EXPECT_EQ(twelve[2], "libcupti.so.12");
  EXPECT_EQ(cuda::cupti_candidates("", "", 0), std::vector<std::string>{"libcupti.so.13"});
}

TEST(CuptiApi, RuntimeMajorFromItsFileName) {
  EXPECT_EQ(cuda::runtime_major_from_path("/a/libcudart.so.12.4.127"), 12);
  EXPECT_EQ(cuda::runtime_major_from_path("libcudart.so.13"), 13);
  EXPECT_EQ(cuda::runtime_major_from_path("/a/libcudart.so"), 0);
}

}  // namespace
}  // namespace timeline
}  // namespace gpuslack

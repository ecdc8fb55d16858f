// libgpuslack.so under real processes, in each way a user puts it there:
// LD_PRELOAD into an application linked against libcudart; LD_PRELOAD into
// one that loads libcudart RTLD_LOCAL through a library it dlopen()s; dlopen
// into a process that already runs threads; and LD_PRELOAD into a process
// that never touches CUDA, which must see no trace of it.
//
// The applications run on the simulated device (tests/simcuda): their
// libcudart.so.13 is the simulated one, found through their RUNPATH.
#include <dirent.h>
#include <gtest/gtest.h>

#include "child.h"

namespace {

const std::pair<std::string, std::string> kPreload{"LD_PRELOAD", GPUSLACK_SO};
const std::pair<std::string, std::string> kDebug{"GPUSLACK_CONF", "log_level:debug"};

TEST(Loading, PreloadIntoAnApplicationLinkedAgainstLibcudart) {
  ChildResult r = run_child({CUDA_APP}, {kPreload, kDebug});
  EXPECT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("roundtrip ok")) << r.output;
  // The hooks ran, and found the real (simulated) functions by RTLD_NEXT.
  EXPECT_NE(std::string::npos, r.output.find("gpuslack: resolved cudaMalloc via RTLD_NEXT")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("gpuslack: resolved cudaFree via RTLD_NEXT")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("simcuda/libcudart.so.13")) << r.output;
}

TEST(Loading, PreloadFindsALibcudartLoadedRtldLocal) {
  ChildResult r = run_child({DLOPEN_LOCAL_APP, CUDART_USER_LIB}, {kPreload, kDebug});
  EXPECT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("roundtrip ok")) << r.output;
  // dlsym(RTLD_NEXT) cannot see it; the loaded-object scan does.
  EXPECT_NE(std::string::npos,
            r.output.find("gpuslack: resolved cudaMalloc via the loaded libcudart (RTLD_LOCAL)"))
      << r.output;
}

TEST(Loading, WithoutGpuslackTheSameApplicationsRunUntouched) {
  ChildResult r = run_child({DLOPEN_LOCAL_APP, CUDART_USER_LIB}, {kDebug});
  EXPECT_EQ(0, r.exit_code) << r.output;
  EXPECT_EQ("roundtrip ok\n", r.output);
}

TEST(Loading, DlopenIntoAProcessThatAlreadyRunsThreads) {
  ChildResult r = run_child({THREADED_DLOPEN_APP, GPUSLACK_SO}, {});
  EXPECT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("gpuslack 0.")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("jemalloc 5.3.0")) << r.output;
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) names.push_back(e->d_name);
    closedir(d);
  }
  return names;
}

TEST(Loading, AProcessThatNeverCallsCudaSeesNothing) {
  std::string dir = testing::TempDir() + "gpuslack_silent_XXXXXX";
  ASSERT_NE(nullptr, mkdtemp(dir.data()));
  auto before = list_dir(dir);
  // Even with a bad configuration: it is read on first use, which never comes.
  ChildResult r = run_child({NO_CUDA_APP}, {kPreload, {"GPUSLACK_CONF", "bogus,log_level:debug"}}, dir);
  EXPECT_EQ(0, r.exit_code);
  EXPECT_EQ("no cuda here\n", r.output);
  EXPECT_EQ(before.size(), list_dir(dir).size());
}

TEST(Loading, BadConfigurationGetsOneLineAndTheApplicationRuns) {
  ChildResult r = run_child({CUDA_APP}, {kPreload, {"GPUSLACK_CONF", "log_level:debug,frobnicate:1"}});
  EXPECT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("gpuslack: GPUSLACK_CONF: unknown key 'frobnicate'; ignored\n"))
      << r.output;
  EXPECT_NE(std::string::npos, r.output.find("roundtrip ok")) << r.output;
}

}  // namespace

// A thread's first CUDA call is cudaMalloc, under allocator:vmm: gpuslack
// serves it from its VMM allocator, yet everything the application can
// observe is what the runtime alone gives (return codes, last error, the
// memory's device, the context current afterwards, a later driver call).
//
// On a real GPU such a thread has no context: the runtime binds the
// device's primary context at its first call that needs one, and gpuslack's
// allocator, standing in for that call, must do the same before its own
// driver calls (Note [gpuslack's own driver calls need a context] in
// cuda/driver_context.h). The simulated device binds contexts as the real
// one does (tests/simcuda/tests/driver_context_test.cc), so a gpuslack that
// forgot would fall back to the runtime here and the "vmm" lines would be
// missing.
//
// Each case runs context_app natively and preloaded, and compares.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <sstream>

#include "child.h"

namespace {

struct Runs {
  std::string native;     // the program's lines, natively
  std::string preloaded;  // the same lines under gpuslack
  std::string vmm;        // its "vmm ..." lines, under gpuslack
  std::string log;        // the whole preloaded output
};

Runs run_both(const std::string& mode, int devices) {
  const std::pair<std::string, std::string> count{"GPUSIM_DEVICE_COUNT", std::to_string(devices)};
  char dir[] = "/tmp/gpuslack-context-XXXXXX";
  EXPECT_NE(nullptr, mkdtemp(dir));
  ChildResult native = run_child({CONTEXT_APP, mode}, {count});
  EXPECT_EQ(0, native.exit_code) << native.output;
  ChildResult pre = run_child({CONTEXT_APP, mode},
                              {count, {"LD_PRELOAD", GPUSLACK_SO}, {"GPUSLACK_CONF", "allocator:vmm,log_level:warn"},
                               {"GPUSLACK_OUTPUT", dir}});
  std::system(("rm -rf " + std::string(dir)).c_str());
  EXPECT_EQ(0, pre.exit_code) << pre.output;
  Runs r;
  r.log = pre.output;
  // The program's own lines ("main ...", "thread ..."): not gpuslack's log
  // or summary, nor a sanitizer's notes.
  auto program_lines = [](const std::string& output, std::string* facts, std::string* vmm) {
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("vmm ", 0) == 0) *vmm += line + "\n";
      else if (line.rfind("main ", 0) == 0 || line.rfind("thread ", 0) == 0) *facts += line + "\n";
    }
  };
  std::string native_vmm;
  program_lines(native.output, &r.native, &native_vmm);
  EXPECT_EQ("", native_vmm) << native.output;
  program_lines(pre.output, &r.preloaded, &r.vmm);
  return r;
}

TEST(FirstCallIsCudaMalloc, OfTheProcess) {
  Runs r = run_both("first_call", 1);
  EXPECT_NE(std::string::npos, r.native.find("main cudaMalloc 0\n")) << r.native;
  EXPECT_NE(std::string::npos, r.native.find("main context primary0\n")) << r.native;
  EXPECT_NE(std::string::npos, r.native.find("main cuMemGetInfo 0\n")) << r.native;
  EXPECT_EQ(r.native, r.preloaded) << r.log;
  EXPECT_EQ("vmm device 0 allocations 1\n", r.vmm) << r.log;
}

TEST(FirstCallIsCudaMalloc, OfAFreshThread) {
  Runs r = run_both("fresh_thread", 1);
  EXPECT_NE(std::string::npos, r.native.find("thread cudaMalloc 0\n")) << r.native;
  EXPECT_NE(std::string::npos, r.native.find("thread context primary0\n")) << r.native;
  EXPECT_EQ(r.native, r.preloaded) << r.log;
  EXPECT_EQ("vmm device 0 allocations 2\n", r.vmm) << r.log;
}

TEST(FirstCallIsCudaMalloc, OnDevice1AfterCudaSetDevice) {
  Runs r = run_both("device1", 2);
  EXPECT_NE(std::string::npos, r.native.find("main memory type 2 device 1\n")) << r.native;
  EXPECT_NE(std::string::npos, r.native.find("main context primary1\n")) << r.native;
  EXPECT_EQ(r.native, r.preloaded) << r.log;
  EXPECT_EQ("vmm device 1 allocations 1\n", r.vmm) << r.log;
}

TEST(FirstCallIsCudaMalloc, OfADriverOnlyThread) {
  Runs r = run_both("driver_thread", 1);
  EXPECT_NE(std::string::npos, r.native.find("thread context before none\n")) << r.native;
  EXPECT_NE(std::string::npos, r.native.find("thread context primary0\n")) << r.native;
  EXPECT_EQ(r.native, r.preloaded) << r.log;
  EXPECT_EQ("vmm device 0 allocations 1\n", r.vmm) << r.log;
}

// The application's own context is used and left as it was: the runtime's
// device is its device, and popping it leaves the thread with none.
TEST(FirstCallIsCudaMalloc, UnderTheApplicationsOwnContext) {
  Runs r = run_both("app_context", 2);
  EXPECT_NE(std::string::npos, r.native.find("thread memory type 2 device 1\n")) << r.native;
  EXPECT_NE(std::string::npos, r.native.find("thread cuCtxPopCurrent 0 primary1\n")) << r.native;
  EXPECT_NE(std::string::npos, r.native.find("thread context below none\n")) << r.native;
  EXPECT_EQ(r.native, r.preloaded) << r.log;
  EXPECT_EQ("vmm device 1 allocations 1\n", r.vmm) << r.log;
}

}  // namespace

// Note [Joining NCCL as its profiler] (nccl/profiler_enable.h): when
// gpuslack offers itself, and when it steps aside for the user's plugin.
// The decision is a pure function of what the process has; prepare()'s side
// (setenv before NCCL reads it) is tested end to end in
// tests/interpose/nccl_profiler_test.py.
#include <gtest/gtest.h>

#include "nccl/profiler_enable.h"

namespace gpuslack {
namespace nccl {
namespace {

using profiler::Decision;
using profiler::Inputs;

Inputs base() {
  Inputs in;
  in.own_path = "/opt/gpuslack/lib/libgpuslack.so";
  return in;
}

TEST(ProfilerEnable, JoinsWhenTheUserRunsNoOtherPlugin) {
  profiler::Outcome o = profiler::decide(base());
  EXPECT_EQ(Decision::kJoin, o.decision);
  EXPECT_EQ("/opt/gpuslack/lib/libgpuslack.so", o.why);  // what NCCL_PROFILER_PLUGIN becomes
}

TEST(ProfilerEnable, StepsAsideForANamedPlugin) {
  Inputs in = base();
  in.env = "/site/lib/libnccl-profiler-inspector.so";
  profiler::Outcome o = profiler::decide(in);
  EXPECT_EQ(Decision::kSteppedAside, o.decision);
  EXPECT_EQ("NCCL_PROFILER_PLUGIN=/site/lib/libnccl-profiler-inspector.so", o.why);
  in.env = "inspector";  // NCCL then tries libnccl-profiler-inspector.so
  EXPECT_EQ(Decision::kSteppedAside, profiler::decide(in).decision);
}

TEST(ProfilerEnable, StepsAsideForTheDefaultLibrary) {
  Inputs in = base();
  in.default_found = true;
  in.default_path = "/usr/lib/libnccl-profiler.so";
  profiler::Outcome o = profiler::decide(in);
  EXPECT_EQ(Decision::kSteppedAside, o.decision);
  EXPECT_EQ("/usr/lib/libnccl-profiler.so", o.why);
}

TEST(ProfilerEnable, StepsAsideForAPluginInNcclConf) {
  Inputs in = base();
  in.conf_value = "inspector";
  in.conf_file = "/etc/nccl.conf";
  profiler::Outcome o = profiler::decide(in);
  EXPECT_EQ(Decision::kSteppedAside, o.decision);
  EXPECT_EQ("NCCL_PROFILER_PLUGIN in /etc/nccl.conf=inspector", o.why);
}

TEST(ProfilerEnable, NamingGpuslackIsOurs) {
  Inputs in = base();
  for (const char* v : {"/opt/gpuslack/lib/libgpuslack.so", "/elsewhere/libgpuslack.so", "STATIC_PLUGIN",
                        "static_plugin"}) {
    in.env = v;
    EXPECT_EQ(Decision::kNamedUs, profiler::decide(in).decision) << v;
  }
}

TEST(ProfilerEnable, NoneTheKnobAndSecureExecutionAreOff) {
  Inputs in = base();
  in.env = "NONE";
  EXPECT_EQ(Decision::kOff, profiler::decide(in).decision);
  EXPECT_EQ("NCCL_PROFILER_PLUGIN=none", profiler::decide(in).why);
  in = base();
  in.knob = false;
  in.env = "/site/other.so";
  EXPECT_EQ("nccl_profiler=false", profiler::decide(in).why);
  in = base();
  in.secure = true;
  EXPECT_EQ(Decision::kOff, profiler::decide(in).decision);
  in = base();
  in.own_path.clear();
  EXPECT_EQ(Decision::kOff, profiler::decide(in).decision);
}

TEST(ProfilerEnable, ReadsNcclConfAsNcclDoes) {
  EXPECT_EQ("x", profiler::conf_value("NCCL_PROFILER_PLUGIN=x\n"));
  EXPECT_EQ("first", profiler::conf_value("# c\n  NCCL_PROFILER_PLUGIN=first\r\nNCCL_PROFILER_PLUGIN=second\n"));
  EXPECT_EQ("", profiler::conf_value("#NCCL_PROFILER_PLUGIN=x\nNCCL_PROFILER_PLUGINS=y\nNCCL_DEBUG=INFO"));
  EXPECT_EQ("", profiler::conf_value(""));
}

TEST(ProfilerEnable, StatusBeforeAnyCommunicator) {
  profiler::reset_decision();
  profiler::configure(true);
  EXPECT_EQ("off: no communicator init was hooked", profiler::status());
  profiler::configure(false);
  EXPECT_EQ("off: nccl_profiler=false", profiler::status());
  profiler::configure(true);
}

}  // namespace
}  // namespace nccl
}  // namespace gpuslack

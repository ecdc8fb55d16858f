// The kernels by GPU time: counted by name address, merged by demangled
// name, largest first (timeline/kernel_table.h).
#include "timeline/kernel_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis_fixture.h"
#include "timeline/timeline_analysis.h"

namespace gpuslack {
namespace timeline {
namespace {

using namespace testing;  // NOLINT: the fixture's helpers

TEST(KernelTable, Demangles) {
  EXPECT_EQ("gemm(float*, int)", demangled_kernel_name("_Z4gemmPfi"));
  EXPECT_EQ("void ns::relu<float>(float const*)", demangled_kernel_name("_ZN2ns4reluIfEEvPKf"));
  EXPECT_EQ("plain_c_kernel", demangled_kernel_name("plain_c_kernel"));
  EXPECT_EQ("_Z", demangled_kernel_name("_Z"));  // not a valid mangled name: as given
  EXPECT_EQ("(unnamed kernel)", demangled_kernel_name(nullptr));
}

TEST(KernelTable, MergesByDemangledNameAndSortsByTime) {
  // Two copies of one name at two addresses (two modules).
  static const char kGemmA[] = "_Z4gemmPfi";
  static const char kGemmB[] = "_Z4gemmPfi";
  static const char kRelu[] = "relu";
  static const char kTiny[] = "tiny";
  ASSERT_NE(static_cast<const void*>(kGemmA), static_cast<const void*>(kGemmB));
  KernelTable t;
  t.add(kGemmA, 100);
  t.add(kGemmB, 300);
  t.add(kRelu, 50);
  t.add(kRelu, 50);
  t.add(kRelu, 50);
  t.add(kTiny, 1);
  EXPECT_EQ(4u, t.distinct_names());  // by address
  std::vector<KernelRow> rows;
  t.fill(2, 1e-9, &rows);
  ASSERT_EQ(2u, rows.size());
  EXPECT_EQ("gemm(float*, int)", rows[0].name);
  EXPECT_EQ(2u, rows[0].count);
  EXPECT_DOUBLE_EQ(400e-9, rows[0].total_s);
  EXPECT_DOUBLE_EQ(200e-9, rows[0].mean_s);
  EXPECT_EQ("relu", rows[1].name);
  EXPECT_EQ(3u, rows[1].count);
  EXPECT_DOUBLE_EQ(50e-9, rows[1].mean_s);
}

TEST(KernelTable, PerDeviceThroughTheAnalysisKernelsOnly) {
  static const char kK[] = "_Z1kv";
  AnalysisOptions o = small_options();
  o.top_kernels = 5;
  TimelineAnalysis a(o);
  a.add(gpu(0, 10, Busy::kCompute, kK, 0));
  a.add(gpu(0, 30, Busy::kCommunication, "ncclDevKernel_AllReduce", 0));
  a.add(gpu(10, 20, Busy::kCopies, nullptr, 0));  // a copy: not a kernel
  a.add(gpu(5, 25, Busy::kCompute, kK, 1));
  const auto out = fill(a, 100);
  ASSERT_EQ(2u, out.size());
  ASSERT_EQ(2u, out[0].top_kernels.size());
  EXPECT_EQ("ncclDevKernel_AllReduce", out[0].top_kernels[0].name);
  EXPECT_EQ("k()", out[0].top_kernels[1].name);
  ASSERT_EQ(1u, out[1].top_kernels.size());
  EXPECT_DOUBLE_EQ(20e-9, out[1].top_kernels[0].total_s);
}

}  // namespace
}  // namespace timeline
}  // namespace gpuslack

#include "build_info.h"

#include <gtest/gtest.h>

namespace gpuslack {
namespace {

TEST(BuildInfo, NamesEverySealedDependency) {
  std::string info = build_info();
  EXPECT_EQ(0u, info.find("gpuslack " GPUSLACK_VERSION_STRING " (")) << info;
  EXPECT_NE(std::string::npos, info.find("abseil 20220623.1")) << info;
  EXPECT_NE(std::string::npos, info.find("jemalloc 5.3.0")) << info;
  EXPECT_NE(std::string::npos, info.find("spdlog 1.")) << info;
  EXPECT_NE(std::string::npos, info.find("CUDA headers 1")) << info;
}

}  // namespace
}  // namespace gpuslack

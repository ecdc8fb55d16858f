#include "build_info.h"

#include <cuda.h>

#include "absl/base/config.h"
#include "absl/strings/str_format.h"
#include "pin/private_heap.h"
#include "fmt/core.h"
#include "spdlog/version.h"

namespace gpuslack {

std::string build_info() {
  return absl::StrFormat("gpuslack %s (abseil %d.%d, jemalloc %s, spdlog %d.%d.%d, fmt %d, CUDA headers %d.%d)",
                         GPUSLACK_VERSION_STRING, ABSL_LTS_RELEASE_VERSION, ABSL_LTS_RELEASE_PATCH_LEVEL,
                         pin::jemalloc_version(),
                         SPDLOG_VER_MAJOR, SPDLOG_VER_MINOR, SPDLOG_VER_PATCH, FMT_VERSION,
                         CUDA_VERSION / 1000, (CUDA_VERSION % 1000) / 10);
}

}  // namespace gpuslack

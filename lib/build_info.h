// What this build of gpuslack is made of: its version and the versions of
// the dependencies sealed inside it, for `gpuslack_build_info()` and the
// header of every report.
#pragma once

#include <string>

namespace gpuslack {

// "gpuslack 0.1.0 (abseil 20220623.1, jemalloc 5.3.0-0-g..., spdlog 1.10.0,
// fmt 9.1.0, CUDA headers 13.0)". The jemalloc part is asked of the linked
// private instance, so it also proves that instance works.
std::string build_info();

}  // namespace gpuslack

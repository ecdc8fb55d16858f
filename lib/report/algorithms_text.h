// The text summary's lines of NCCL's choices (summary.h, CollectivesSection:
// profiler, algorithms): one line of what became of NCCL's profiler plugin,
// then one line per record, most calls first, at most kAlgorithmLines (the
// JSON has them all). Lines without the "  " indent; text.cc wraps them.
//
// Thread safety: a pure function.
#pragma once

#include <string>
#include <vector>

#include "report/summary.h"

namespace gpuslack {
namespace report {

inline constexpr size_t kAlgorithmLines = 8;

std::vector<std::string> algorithm_lines(const CollectivesSection& c);

}  // namespace report
}  // namespace gpuslack

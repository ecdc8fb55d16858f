// The findings in the text summary (Summary::findings, report/finding.h):
// the lines right after the headline, numbered, most costly first.
//
//   findings, most costly first:
//   1. cudaFree/cudaMalloc wait for the whole GPU in steady state
//      cost: 1.23 s (12.3% of wall), GPU idle 800.0 ms
//      evidence: cudaFree calls 120, 1.20 s blocked (longest 52.0 ms);
//        in steady state (the run's middle 80%) 980.0 ms
//      where: train_step < main
//      fix: GPUSLACK_CONF=allocator:vmm (gpuslack's allocator frees ...)
//
// Each line fits 80 columns with text.cc's "gpuslack: " prefix where its
// words allow (a longer word, a symbol, stays whole). Frames are shortened
// to the function (no offset, module or arguments), the first two of each
// site, innermost first; sites that then read the same are shown once.
// Nothing when there is no finding.
//
// One renderer: the job report and compare print a finding's lines through
// this (gpuslack_render_findings), never their own copy.
//
// Thread safety: pure.
#pragma once

#include <string>
#include <vector>

#include "report/finding.h"

namespace gpuslack {
namespace report {

// What to render, for the renderers that show findings in their own frame
// (python -m gpuslack compare, the job report: gpuslack_render_findings).
// The defaults are the text summary's.
struct FindingsLayout {
  size_t width = 70;      // columns of a line, without the caller's prefix
  size_t indent = 0;      // spaces before every line
  bool heading = true;    // "findings, most costly first:" first
  bool brief = false;     // number, title and cost only
  bool body_only = false; // evidence, where and fix only (no number, title or cost)
};

// The lines, without text.cc's prefix; the caller makes them printable.
// Figures are units.h's (Note [One formatter per unit]).
std::vector<std::string> findings_lines(const std::vector<Finding>& findings, const FindingsLayout& layout = {});

}  // namespace report
}  // namespace gpuslack

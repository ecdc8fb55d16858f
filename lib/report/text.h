// The text summary: what a person in a hurry reads at the end of a run, in
// a log full of other output.
//
// Layout (docs/summary.md has a sample):
//   - first line: the share of wall time lost and to what, e.g.
//       gpuslack: 23.4% of 12.5 s lost (pid 123, rank 0): allocation 2.1 s (16.8%),
//       gpuslack:   copies 0.825 s (6.6%), collectives 0 s; waiting for the GPU 3.2 s
//       gpuslack:   (not counted as lost)
//     (one sentence, wrapped at 80 columns);
//   - one line of context (host, threads, why the summary was written,
//     version);
//   - per category that has calls, in enum order: a table of its calls
//     (count, total, share of wall, p50, p99, max, bytes);
//   - the copy table (kind, host memory, count, bytes, time, GB/s);
//   - the thread that lost most;
//   - the top call sites of each category (blocked time, calls, api, then
//     the frames, indented).
// Every line starts with "gpuslack: " and ends with '\n'; control characters
// in names become '?', so no name can break a line or forge a prefix, and
// bytes that are not UTF-8 become U+FFFD, as in the JSON (json.h), so the
// text is valid UTF-8 and a summary read back renders the same text.
// Columns are aligned per table. Empty categories and empty sections are
// left out.
//
// Lines of prose wrap at 80 columns, continuation lines indented
// (wrap.h); table rows keep their columns.
//
// TextDetail::kShort is the first lines only: the GPU's, the headline and
// its context line, the findings and the topology's one line; the
// writer (output.h) adds where the full summary is. config's summary_detail
// chooses.
//
// Thread safety: a pure function of its arguments.
#pragma once

#include <string>

#include "report/summary.h"

namespace gpuslack {
namespace report {

enum class TextDetail { kFull, kShort };

std::string format_text(const Summary& summary, TextDetail detail = TextDetail::kFull);

}  // namespace report
}  // namespace gpuslack

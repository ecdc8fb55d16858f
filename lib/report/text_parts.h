// The pieces every section's text is made of (text.h's layout): the
// "gpuslack: " prefix, one line of prose wrapped at 80 columns, tables with
// aligned columns, names made printable, and the few figures whose form is
// the text summary's own (the headline's seconds, thread-seconds, a count,
// a byte cell). Units are units.h's (Note [One formatter per unit]).
// Internal to lib/report: text.cc and the sections' text (calls.cc,
// allocator.cc, staging.cc, pinned.cc, gpu_timeline.cc, collectives.cc).
//
// Thread safety: pure functions; a Table is one caller's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuslack {
namespace report {

inline constexpr const char* kTextPrefix = "gpuslack: ";

// printf into a string of at most 127 bytes.
std::string printf_string(const char* format, ...) __attribute__((format(printf, 1, 2)));

// Names come from threads, symbols and the environment: no control
// character may reach the log, and a byte that is not UTF-8 prints as
// U+FFFD, as the JSON writes it (utf8.h), so that a summary read back from
// its file renders the same text.
std::string printable(const std::string& s);

// Seconds for a headline, to three significant digits ("0.0502 s", "2.1 s",
// "12.5 s"; a short run's 0.05 s must not read 0.1), whole above 1000 s,
// and as every other duration (units.h) below 10 ms ("26.1 us", not
// "2.61e-05 s"): the headline's precision, not another unit
// (Note [One formatter per unit]).
std::string headline_seconds(double s);

// A byte count in a table or line: "-" for none, else units.h's.
std::string bytes_cell(uint64_t bytes);

std::string count_text(uint64_t n);

// "20,001": thousands grouped, for a count in a headline.
std::string grouped(uint64_t n);

// Note [Thread-seconds]: blocked time is summed over threads, so with
// several threads blocking at once a "share of wall time" can pass 100%
// (issue 17: a program of 20,001 threads read "333.8% of 2.82 s lost"). No
// share above 100% is shown: such a figure is written as thread-seconds
// ("6.5 thread-s"), and the headline then names the worst thread's share
// of wall time, which one thread cannot exceed.
inline bool over_wall(double share) { return share > 1; }

// "6.5 thread-s": blocked time summed over threads (Note [Thread-seconds]).
std::string thread_seconds(double s);

// One line of prose, wrapped at 80 columns (wrap.h), each line prefixed;
// table rows are not wrapped.
void line(std::string* out, const std::string& text);

// Rows of cells, rendered with aligned columns: the first `left_columns`
// left-aligned, the rest right-aligned, two spaces between columns.
class Table {
 public:
  explicit Table(size_t left_columns) : left_columns_(left_columns) {}
  void add(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  bool empty() const { return rows_.empty(); }
  void render(const char* indent, std::string* out) const;

 private:
  size_t left_columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace report
}  // namespace gpuslack

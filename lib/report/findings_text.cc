// See findings_text.h.
#include "report/findings_text.h"

#include <algorithm>
#include <cstdio>

#include "report/units.h"
#include "report/wrap.h"

namespace gpuslack {
namespace report {
namespace {

// Appends `first` + `text` as lines of at most kWidth, broken by the
// summary's own wrap pass (wrap.h): continuation lines take the first
// line's leading spaces plus two.
void wrap(const std::string& first, const std::string& text, size_t width, std::vector<std::string>* out) {
  const std::string wrapped = wrap_line("", first + text, width);
  size_t from = 0;
  for (size_t nl = wrapped.find('\n'); nl != std::string::npos; nl = wrapped.find('\n', from)) {
    out->push_back(wrapped.substr(from, nl - from));
    from = nl + 1;
  }
}

// A frame as a person can act on it in one line: the function with its
// offset (what addr2line needs) and the module's file name, without the
// C++ argument list and directories:
//   "train_step(int, std::vector<...>&)+0x1a (/app/train)" -> "train_step+0x1a (train)";
// a Python frame "train.py:42 in step (python)" stays as it is. A name
// longer than 40 characters is cut with "...".
std::string short_frame(const std::string& frame) {
  std::string name = frame, module;
  const size_t open = frame.rfind(" (");
  if (open != std::string::npos && open > 0 && frame.back() == ')') {
    name = frame.substr(0, open);
    module = frame.substr(open + 2, frame.size() - open - 3);
    const size_t slash = module.rfind('/');
    if (slash != std::string::npos) module = module.substr(slash + 1);
  }
  // The argument list: from the first '(' to its matching ')'.
  const size_t args = name.find('(');
  if (args != std::string::npos && args > 0) {
    int depth = 0;
    size_t end = args;
    for (; end < name.size(); ++end) {
      if (name[end] == '(') ++depth;
      if (name[end] == ')' && --depth == 0) break;
    }
    name = name.substr(0, args) + (end < name.size() ? name.substr(end + 1) : "");
  }
  if (name.size() > 40) name = name.substr(0, 37) + "...";
  return module.empty() ? name : name + " (" + module + ")";
}

}  // namespace

std::vector<std::string> findings_lines(const std::vector<Finding>& findings, const FindingsLayout& layout) {
  std::vector<std::string> out;
  if (findings.empty()) return out;
  const std::string indent(layout.indent, ' ');
  const size_t width = layout.width;
  if (layout.heading) out.push_back(indent + "findings, most costly first:");
  int n = 0;
  for (const Finding& f : findings) {
    const std::string number = std::to_string(++n) + ". ";
    const std::string pad = indent + (layout.body_only ? "" : std::string(number.size(), ' '));
    if (!layout.body_only) {
      std::string cost = seconds_text(f.cost_s) + " (" + percent_text(f.cost_share) + " of wall)";
      if (f.gpu_idle_s >= 0) cost += ", GPU idle " + seconds_text(f.gpu_idle_s);
      wrap(indent + number, f.title, width, &out);
      wrap(pad + "cost: ", cost, width, &out);
      if (layout.brief) continue;
    }
    std::string evidence;
    for (const auto& [name, value] : f.evidence) evidence += (evidence.empty() ? "" : "; ") + name + " " + value;
    if (!evidence.empty()) wrap(pad + "evidence: ", evidence, width, &out);
    // Sites that read the same shortened (overloads at one offset): once.
    std::vector<std::string> shown;
    for (const std::vector<std::string>& site : f.where) {
      std::string where;
      for (size_t i = 0; i < site.size() && i < 2; ++i) where += (i ? " < " : "") + short_frame(site[i]);
      if (where.empty() || std::find(shown.begin(), shown.end(), where) != shown.end()) continue;
      shown.push_back(where);
      wrap(pad + "where: ", where, width, &out);
    }
    if (!f.fix.empty()) wrap(pad + "fix: ", f.fix, width, &out);
  }
  return out;
}

}  // namespace report
}  // namespace gpuslack

// See findings_text.h.
#include "report/findings_text.h"

#include <algorithm>
#include <cstdio>

namespace gpuslack {
namespace report {
namespace {

// 80 columns less text.cc's "gpuslack: ".
constexpr size_t kWidth = 70;

// Appends `text` as lines of at most kWidth: the first starts with
// `first`, the others with `rest`; breaks at spaces only.
void wrap(const std::string& first, const std::string& rest, const std::string& text, std::vector<std::string>* out) {
  std::string current = first;
  size_t indent = first.size();
  bool empty = true;
  size_t i = 0;
  while (i < text.size()) {
    size_t space = text.find(' ', i);
    if (space == std::string::npos) space = text.size();
    const std::string word = text.substr(i, space - i);
    i = space + 1;
    if (word.empty()) continue;
    if (!empty && current.size() + 1 + word.size() > kWidth) {
      out->push_back(current);
      current = rest;
      indent = rest.size();
      empty = true;
    }
    current += (empty ? "" : " ") + word;
    empty = false;
  }
  if (!empty || current.size() > indent) out->push_back(current);
}

// "train_step(int)+0x1a (/app/train)" -> "train_step"; a Python frame
// "train.py:42 in step" stays as it is.
std::string short_frame(const std::string& frame) {
  std::string f = frame;
  const size_t module = f.rfind(" (");
  if (module != std::string::npos && module > 0 && f.back() == ')') f.resize(module);
  const size_t plus = f.find("+0x");
  if (plus != std::string::npos && plus > 0) f.resize(plus);
  const size_t paren = f.find('(');
  if (paren != std::string::npos && paren > 0) f.resize(paren);
  if (f.size() > 40) f = f.substr(0, 37) + "...";
  return f;
}

std::string seconds_text(double s) {
  char buf[32];
  if (s >= 1) std::snprintf(buf, sizeof(buf), "%.2f s", s);
  else if (s >= 1e-3) std::snprintf(buf, sizeof(buf), "%.1f ms", s * 1e3);
  else std::snprintf(buf, sizeof(buf), "%.0f us", s * 1e6);
  return buf;
}

}  // namespace

std::vector<std::string> findings_lines(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  if (findings.empty()) return out;
  out.push_back("findings, most costly first:");
  int n = 0;
  for (const Finding& f : findings) {
    const std::string number = std::to_string(++n) + ". ";
    const std::string pad(number.size(), ' ');
    char share[32];
    std::snprintf(share, sizeof(share), "%.1f%%", f.cost_share * 100);
    std::string cost = seconds_text(f.cost_s) + " (" + share + " of wall)";
    if (f.gpu_idle_s >= 0) cost += ", GPU idle " + seconds_text(f.gpu_idle_s);
    wrap(number, pad, f.title, &out);
    wrap(pad + "cost: ", pad + "  ", cost, &out);
    std::string evidence;
    for (const auto& [name, value] : f.evidence) evidence += (evidence.empty() ? "" : "; ") + name + " " + value;
    if (!evidence.empty()) wrap(pad + "evidence: ", pad + "  ", evidence, &out);
    // Sites that differ only in offsets read the same shortened: once.
    std::vector<std::string> shown;
    for (const std::vector<std::string>& site : f.where) {
      std::string where;
      for (size_t i = 0; i < site.size() && i < 2; ++i) where += (i ? " < " : "") + short_frame(site[i]);
      if (where.empty() || std::find(shown.begin(), shown.end(), where) != shown.end()) continue;
      shown.push_back(where);
      wrap(pad + "where: ", pad + "  ", where, &out);
    }
    if (!f.fix.empty()) wrap(pad + "fix: ", pad + "  ", f.fix, &out);
  }
  return out;
}

}  // namespace report
}  // namespace gpuslack

// evaluate_summary FILE [--fabric F] [--expected-busbw G] [--pytorch]:
// reads a JSON summary back (report/summary_reader.h), runs
// findings::evaluate over it and prints each finding, one "finding RULE
// cost_s=S share=X gpu_idle_s=I" line, then its evidence as "  NAME: VALUE"
// and its fix as "  fix: ...", after one line "gpu_idle_s=I explained_s=E"
// (report/idle_explained.h; -1 each when the timeline did not measure). --fabric and --expected-busbw set the
// collectives rows' expectations anew, as the process would have with those
// knobs (report/collective_expectations.h). For the scenarios on the simulated device
// (scenarios_test.py), before the session writes findings itself.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "findings/findings.h"
#include "report/collective_expectations.h"
#include "report/idle_explained.h"
#include "report/summary_reader.h"

int main(int argc, char** argv) {
  using namespace gpuslack;
  if (argc < 2) {
    std::fprintf(stderr, "usage: evaluate_summary FILE [--fabric F] [--expected-busbw G] [--pytorch]\n");
    return 2;
  }
  findings::Context c;
  c.fabric = "auto";
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--fabric") && i + 1 < argc) c.fabric = argv[++i];
    else if (!std::strcmp(argv[i], "--expected-busbw") && i + 1 < argc) c.expected_busbw_gbps = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--pytorch")) c.pytorch = true;
    else {
      std::fprintf(stderr, "evaluate_summary: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  report::Summary s;
  std::string error;
  if (!report::read_summary_file(argv[1], &s, &error)) {
    std::fprintf(stderr, "evaluate_summary: %s\n", error.c_str());
    return 1;
  }
  report::apply_collective_expectations(&s, {c.expected_busbw_gbps, c.fabric});
  s.findings = findings::evaluate(s, c);
  const report::IdleExplained idle = report::idle_explained(s);
  std::printf("gpu_idle_s=%.6f explained_s=%.6f\n", idle.measured ? idle.idle_s : -1.0,
              idle.measured ? idle.explained_s : -1.0);
  for (const report::Finding& f : s.findings) {
    std::printf("finding %s cost_s=%.6f share=%.6f gpu_idle_s=%.6f\n", f.rule.c_str(), f.cost_s, f.cost_share,
                f.gpu_idle_s);
    std::printf("  title: %s\n", f.title.c_str());
    for (const auto& [name, value] : f.evidence) std::printf("  %s: %s\n", name.c_str(), value.c_str());
    std::printf("  fix: %s\n", f.fix.c_str());
  }
  return 0;
}

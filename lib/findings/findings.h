// Findings: rules over one rank's summary that name a leak and its fix.
//
// evaluate() runs every rule (one file per family: allocator_rules.cc,
// copy_rules.cc, timeline_rules.cc, kernel_rules.cc, collective_rules.cc) over a built
// summary and returns what fired, most costly first. It reads only the
// summary and the knobs below, so a summary read back from JSON gives the
// same findings as the process saw (Note [A false finding is a bug] in
// report/finding.h says what each rule must meet). The findings partition
// the GPU's idle time: the families that charge GPU idle take it from one
// IdleLedger, in the order evaluate() runs them (Note [Each idle second
// charged once] in findings/idle_ledger.h).
//
// Thread safety: a pure function of its arguments.
#pragma once

#include <string>
#include <vector>

#include "findings/idle_ledger.h"
#include "report/finding.h"
#include "report/summary.h"

namespace gpuslack {
namespace findings {

// What the rules need beyond the summary.
struct Context {
  // Expected bus bandwidth of the fabric (collective_rules.cc): the
  // expected_busbw_gbps knob when set, else from the fabric knob's table.
  std::string fabric;             // fabric knob: "auto", "nvlink4", "ib400", ...
  double expected_busbw_gbps = 0; // 0: from fabric / topology
  bool pytorch = false;           // the process loaded libtorch (fixes phrased for PyTorch)
};

std::vector<report::Finding> evaluate(const report::Summary& summary, const Context& context);

// Each family appends what fired (unsorted); evaluate() ranks them. Those
// whose findings are charged GPU idle take it from `idle` (Note [Each idle
// second charged once]), so their order in evaluate() is the rule's.
void allocator_rules(const report::Summary& s, const Context& c, IdleLedger* idle, std::vector<report::Finding>* out);
void copy_rules(const report::Summary& s, const Context& c, IdleLedger* idle, std::vector<report::Finding>* out);
void timeline_rules(const report::Summary& s, const Context& c, IdleLedger* idle, std::vector<report::Finding>* out);
void kernel_rules(const report::Summary& s, const Context& c, std::vector<report::Finding>* out);
void collective_rules(const report::Summary& s, const Context& c, std::vector<report::Finding>* out);

}  // namespace findings
}  // namespace gpuslack

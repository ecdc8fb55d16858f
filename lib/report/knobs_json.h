// The knobs a process would run with, as JSON: what gpuslack_knobs_json
// gives `python -m gpuslack doctor` (docs/doctor.md). The rows are the
// config room's (knobs_in_force): one meaning, one parser.
//
//   {"secure": false,
//    "knobs": [{"key": "allocator", "type": "string", "value": "vmm",
//               "default": "native", "source": "GPUSLACK_CONF"}, ...],
//    "errors": ["GPUSLACK_CONF: unknown key 'x'; ignored", ...]}
//
// Values are text, as the documentation writes them (knobs_in_force).
//
// Thread safety: a pure function of its arguments; reads no environment.
#pragma once

#include <string>

namespace gpuslack {
namespace report {

// `conf` and `output` stand for GPUSLACK_CONF and GPUSLACK_OUTPUT (null:
// unset); `secure`: a process started with AT_SECURE (Note [Secure
// execution]), which reads neither.
std::string knobs_json(const char* conf, const char* output, bool secure);

}  // namespace report
}  // namespace gpuslack

// The one formatter per unit (Note [One formatter per unit]): how every
// figure a person reads is written, in the text summary (text.cc), its
// findings (findings_text.cc) and, through the C API
// (gpuslack_format_figure), the Python renderers (python_shim/gpuslack/
// labels.py: compare and the job report). The exact figures are in the JSON.
//
//   seconds   "0", "850 ns", "12.3 us", "4.5 ms", "2.10 s"; below zero a
//             "-" before the magnitude's text; not finite: "-"
//   percent   a share: 0.123 -> "12.3%"; not finite: "-"
//   bytes     "0 B", "512 B", "1.5 KiB", "300.0 MiB", ... "3.0 EiB"
//             (binary units, one decimal); below zero or not finite: "-"
//   gbps      bandwidth in GB/s (1e9 bytes a second), the number alone:
//             "12.34" (tables name the unit in their heading); 0 or less: "-"
//   link_gbps a link's capacity in GB/s, four significant digits with the
//             unit: "450 GB/s", "63.02 GB/s"; 0 or less, not finite: "unknown"
//             (the topology lines, per rank and in the job report)
//   link_gbits a NIC port's rate in Gb/s (gigabits), the same way:
//             "400 Gb/s"; 0 or less, not finite: "unknown"
//   waves     how many waves of blocks a launch took on the GPU's SMs, two
//             decimals: 0.5 -> "0.50"; below zero or not finite: "-"
//   size_bucket  a power-of-two size class by its exponent: 26 -> ">=64.0 MiB"
//             (bytes of 2^b); below zero or past 2^62: "-"
//
// Note [One formatter per unit]: a figure reads the same wherever it is
// shown, in either language, because it is formatted by one function:
// these. Python never formats a unit itself; it calls them through the
// library (tests/python/test_labels.py renders the same figures through
// both and fails on any difference). The headline's seconds keep three
// significant digits (text_parts.h's headline_seconds, built on seconds_text
// below 10 ms): its precision is the headline's, not another unit. The
// findings' evidence (lib/findings/figures.h) uses these too.
//
// Thread safety: pure functions.
#pragma once

#include <string>

namespace gpuslack {
namespace report {

std::string seconds_text(double s);
std::string percent_text(double share);
std::string bytes_text(double bytes);
std::string gbps_text(double gbps);
std::string size_bucket_text(double exponent);
std::string link_gbps_text(double gbps);
std::string link_gbits_text(double gbit_s);
std::string waves_text(double waves);

// The unit by its name (kUnitNames),
// for the C API; false for a name that is none of them.
bool format_figure(const char* unit, double value, std::string* out);

inline constexpr const char* kUnitNames[] = {"seconds",   "percent",   "bytes",     "gbps",
                                              "size_bucket", "link_gbps", "link_gbits",
                                              "waves"};

}  // namespace report
}  // namespace gpuslack

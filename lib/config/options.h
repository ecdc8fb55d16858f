// gpuslack's knobs: one table, read once from GPUSLACK_CONF.
//
// GPUSLACK_CONF is a comma-separated list of key=value pairs, for example
//   GPUSLACK_CONF=log_level=debug,log_file=/tmp/gpuslack.log
// Every knob is a row of GPUSLACK_OPTIONS below: its key, type, default and
// one line of documentation (the README's table is generated from the same
// rows by `gpuslack_options_doc`). A key that is unknown, or a value that
// does not parse, gets one line on stderr and the default: configuration
// never stops the host process.
//
// Thread safety: options() parses on first use (thread-safe static) and
// returns an immutable object; read it from any thread.
#pragma once

#include <string>
#include <vector>

namespace gpuslack {

// X(key, C++ type, default, doc)
#define GPUSLACK_OPTIONS(X)                                                      \
  X(log_level, std::string, "warn",                                            \
    "least severe message written: off, error, warn, info, debug")             \
  X(log_file, std::string, "",                                                 \
    "append log lines to this file instead of stderr")

struct Options {
#define GPUSLACK_OPTION_FIELD(key, type, def, doc) type key = def;
  GPUSLACK_OPTIONS(GPUSLACK_OPTION_FIELD)
#undef GPUSLACK_OPTION_FIELD
};

// The options of this process, parsed from GPUSLACK_CONF on first call.
const Options& options();

// Parses a GPUSLACK_CONF string. Each problem found is appended to
// `errors` as one line (key and reason); the affected knob keeps its
// default.
Options parse_options(const char* conf, std::vector<std::string>* errors);

// One line per knob: "key (type, default): doc".
std::vector<std::string> options_doc();

}  // namespace gpuslack

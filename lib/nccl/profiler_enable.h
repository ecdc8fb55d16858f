// Whether NCCL loads gpuslack as its profiler plugin, and what the summary
// says of it: "on (v5)", "off: <why>", "stepped aside: <whose>".
//
// Note [Joining NCCL as its profiler]: NCCL (2.23+) loads one profiler
// plugin, at its first communicator's init (src/plugin/profiler.cc): the
// library NCCL_PROFILER_PLUGIN names (a path or a name; "none" disables it;
// "STATIC_PLUGIN" looks in the process's global scope), else
// libnccl-profiler.so on the loader's path. NCCL_PROFILER_PLUGIN may also
// come from NCCL's configuration files, which NCCL applies to its
// environment without overriding it (NCCL_CONF_FILE, else ~/.nccl.conf;
// then /etc/nccl.conf). Of the three ways to be loaded without the user's
// help:
//   - `gpuslack run` setting NCCL_PROFILER_PLUGIN would miss every process
//     started another way (torchrun under a plain LD_PRELOAD, sbatch
//     scripts) and could not see a libnccl-profiler.so of the node;
//   - NCCL's static lookup (NCCL_PROFILER_PLUGIN=STATIC_PLUGIN) still needs
//     the variable set, and finds whatever plugin comes first in the global
//     scope;
//   - so libgpuslack.so decides itself, in the process, before forwarding
//     the first hooked communicator init (ncclCommInitRank, ...Config,
//     ...All, ncclCommSplit), which is before NCCL reads the variable: if
//     the user runs no other plugin, it sets NCCL_PROFILER_PLUGIN to its own
//     path (never overwriting), and NCCL dlopens the already-loaded
//     library and finds its ncclProfiler_vN. The variable then reaches
//     child processes too, where gpuslack is preloaded as well.
// It steps aside, with one log line, when the user already runs another
// plugin: NCCL_PROFILER_PLUGIN set (in the environment or a configuration
// file) to anything that is not gpuslack, or a libnccl-profiler.so that
// the loader finds (probed with dlopen, as NCCL would load it a moment
// later). It never replaces theirs. NCCL_PROFILER_PLUGIN=none and the
// knob nccl_profiler=false turn it off. Setting the variable when the user
// already named gpuslack (its path or STATIC_PLUGIN) changes nothing.
//
// Thread safety: configure() at session start; prepare() from any thread
// (once per process, the first caller decides under a lock; later calls
// are one relaxed load); status() at report time.
#pragma once

#include <string>

namespace gpuslack {
namespace nccl {
namespace profiler {

// The nccl_profiler knob (session start). Default: on.
void configure(bool knob_on);
// The knob is on: init gives NCCL a mask.
bool listening();

// Before forwarding a hooked communicator init: Note [Joining NCCL as its
// profiler]. Cheap after the first call.
void prepare();

// What was decided, without side effects (tests).
enum class Decision {
  kJoin,          // set NCCL_PROFILER_PLUGIN to our path
  kNamedUs,       // the user named gpuslack already
  kOff,           // the knob, or NCCL_PROFILER_PLUGIN=none
  kSteppedAside,  // another plugin
};
struct Inputs {
  bool knob = true;
  bool secure = false;
  const char* env = nullptr;   // NCCL_PROFILER_PLUGIN; null when unset
  std::string conf_value;      // from a configuration file; "" none
  std::string conf_file;       // which
  bool default_found = false;  // libnccl-profiler.so loads
  std::string default_path;    // where it was found
  std::string own_path;        // libgpuslack.so
};
struct Outcome {
  Decision decision = Decision::kOff;
  std::string why;  // for the status: "nccl_profiler=false", "NCCL_PROFILER_PLUGIN=x", ...
};
Outcome decide(const Inputs& in);

// NCCL_PROFILER_PLUGIN's value in an nccl.conf text ("NAME=value" lines,
// '#' comments), or "".
std::string conf_value(const std::string& text);

// "on (v5)", "off: <why>", "stepped aside: <whose>" (report time).
std::string status();

// Forgets the decision (tests; a forked child keeps the parent's variable).
void reset_decision();

}  // namespace profiler
}  // namespace nccl
}  // namespace gpuslack

// A library that breaks every rule check_seal.sh enforces: it exports a
// symbol outside the allowed set, exports data that is not NCCL's profiler
// plugin structs, needs libstdc++ and runs a constructor at
// load. The negative control of the seal test.
#include <string>

static std::string g_made_at_load = std::to_string(42);  // a dynamic initializer

extern "C" __attribute__((visibility("default"))) const char* not_allowed_export() {
  return g_made_at_load.c_str();
}

// A data export that is not one of NCCL's profiler plugin structs (and none
// of those structs is exported).
extern "C" __attribute__((visibility("default"))) int nccl_not_a_profiler = 1;

// A library that breaks every rule check_seal.sh enforces: it exports a
// symbol outside the allowed set, needs libstdc++ and runs a constructor at
// load. The negative control of the seal test.
#include <string>

static std::string g_made_at_load = std::to_string(42);  // a dynamic initializer

extern "C" __attribute__((visibility("default"))) const char* not_allowed_export() {
  return g_made_at_load.c_str();
}

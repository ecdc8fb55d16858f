#include "config/environment.h"

#include <sys/auxv.h>

#include <cstdlib>

extern char** environ;

namespace gpuslack {

bool secure_execution() { return getauxval(AT_SECURE) != 0; }

const char* environment_variable(const char* name) { return secure_getenv(name); }

const char* const* environment_block() { return secure_execution() ? nullptr : environ; }

}  // namespace gpuslack

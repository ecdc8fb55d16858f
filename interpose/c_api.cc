// The public C API (include/gpuslack/gpuslack.h). Defined here, in the
// shared library's own objects, because symbols from static archives are
// hidden by --exclude-libs.
#include "gpuslack/gpuslack.h"

#include <string>

#include "build_info.h"

extern "C" {

GPUSLACK_API const char* gpuslack_version(void) { return GPUSLACK_VERSION_STRING; }

GPUSLACK_API const char* gpuslack_build_info(void) {
  // Built once; leaked so that it stays valid during process exit.
  static const std::string* info = new std::string(gpuslack::build_info());
  return info->c_str();
}

}  // extern "C"

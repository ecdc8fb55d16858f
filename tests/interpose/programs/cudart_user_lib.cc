// A library linked against libcudart, which an application dlopen()s with
// RTLD_LOCAL, as a Python extension module is loaded: its libcudart is then
// outside the global lookup scope.
#include "cuda_roundtrip.h"

extern "C" __attribute__((visibility("default"))) int run_cuda_roundtrip() { return cuda_roundtrip(); }

#include "cuda/fail.h"

#include "cuda/runtime_api.h"

namespace gpuslack {
namespace cuda {

cudaError_t fail(cudaError_t e) {
  switch (e) {
    case cudaErrorInvalidValue: driver_get_version(nullptr); break;
    default: break;  // no call records it (Note [The call that records an error])
  }
  return e;
}

}  // namespace cuda
}  // namespace gpuslack

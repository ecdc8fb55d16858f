// libcuda.so.1 of the simulated device: what its two sources share,
// driver.cc (initialization, devices, contexts, cuGetProcAddress),
// driver_vmm.cc (virtual memory management) and driver_launch.cc.
//
// Test-only; never included by the product.
#pragma once

#include "sim.h"

namespace gpusim::drv {

// cuInit must have succeeded; GPUSIM_NO_DRIVER makes every call fail.
CUresult ready();
// ready(), and a context current on the calling thread (Note [A thread has
// no context until one is bound] in driver.cc), else
// CUDA_ERROR_INVALID_CONTEXT: for the calls that act on the current context.
CUresult ready_with_context();

}  // namespace gpusim::drv

// Returns ready()'s error from the calling entry point, if any.
#define READY()                                        \
  do {                                                 \
    if (CUresult r_ = ::gpusim::drv::ready()) return r_; \
  } while (0)
// The same for ready_with_context().
#define READY_WITH_CONTEXT()                                        \
  do {                                                              \
    if (CUresult r_ = ::gpusim::drv::ready_with_context()) return r_; \
  } while (0)

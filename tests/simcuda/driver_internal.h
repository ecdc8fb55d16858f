// libcuda.so.1 of the simulated device: what its two sources share,
// driver.cc (initialization, devices, contexts, cuGetProcAddress) and
// driver_vmm.cc (virtual memory management).
//
// Test-only; never included by the product.
#pragma once

#include "sim.h"

namespace gpusim::drv {

// cuInit must have succeeded; GPUSIM_NO_DRIVER makes every call fail.
CUresult ready();

}  // namespace gpusim::drv

// Returns ready()'s error from the calling entry point, if any.
#define READY()                                        \
  do {                                                 \
    if (CUresult r_ = ::gpusim::drv::ready()) return r_; \
  } while (0)

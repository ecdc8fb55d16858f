// The NCCL functions gpuslack's core calls for itself (not hooks): the real
// library's, found at run time like the hooks' targets (runtime_symbols.h,
// Library::kNccl), never linked. When no libnccl is loaded they answer
// ncclSystemError.
//
// Used on slow paths only: the first collective seen on a communicator
// (nccl/communicators.h) and report time (the version).
//
// Thread safety: any thread.
#pragma once

#include <nccl.h>

namespace gpuslack {
namespace cuda {

ncclResult_t nccl_get_version(int* version);
ncclResult_t nccl_comm_count(ncclComm_t comm, int* count);
ncclResult_t nccl_comm_user_rank(ncclComm_t comm, int* rank);
ncclResult_t nccl_comm_cu_device(ncclComm_t comm, int* device);

}  // namespace cuda
}  // namespace gpuslack

#include "cuda/nccl_api.h"

#include <atomic>

#include "cuda/runtime_symbols.h"

namespace gpuslack {
namespace cuda {
// One function per NCCL entry point (GPUSLACK_REAL_CALL, runtime_symbols.h).
#define GPUSLACK_NCCL_CALL(fn, symbol, params, args) \
  GPUSLACK_REAL_CALL(Library::kNccl, ncclResult_t, ncclSystemError, fn, symbol, params, args)
GPUSLACK_NCCL_CALL(nccl_get_version, "ncclGetVersion", (int* version), (version))
GPUSLACK_NCCL_CALL(nccl_comm_count, "ncclCommCount", (ncclComm_t comm, int* count), (comm, count))
GPUSLACK_NCCL_CALL(nccl_comm_user_rank, "ncclCommUserRank", (ncclComm_t comm, int* rank), (comm, rank))
GPUSLACK_NCCL_CALL(nccl_comm_cu_device, "ncclCommCuDevice", (ncclComm_t comm, int* device), (comm, device))
#undef GPUSLACK_NCCL_CALL

}  // namespace cuda
}  // namespace gpuslack

#include "cuda/nccl_api.h"

#include <atomic>

#include "cuda/runtime_symbols.h"

namespace gpuslack {
namespace cuda {
// One function per NCCL entry point: its cached address, its lookup.
#define GPUSLACK_NCCL_CALL(fn, symbol, params, args)                           \
  ncclResult_t fn params {                                                    \
    static std::atomic<void*> slot{nullptr};                                  \
    auto real = resolve_cached<ncclResult_t(*) params>(Library::kNccl, slot, symbol); \
    return real ? real args : ncclSystemError;                                \
  }
GPUSLACK_NCCL_CALL(nccl_get_version, "ncclGetVersion", (int* version), (version))
GPUSLACK_NCCL_CALL(nccl_comm_count, "ncclCommCount", (ncclComm_t comm, int* count), (comm, count))
GPUSLACK_NCCL_CALL(nccl_comm_user_rank, "ncclCommUserRank", (ncclComm_t comm, int* rank), (comm, rank))
GPUSLACK_NCCL_CALL(nccl_comm_cu_device, "ncclCommCuDevice", (ncclComm_t comm, int* device), (comm, device))
#undef GPUSLACK_NCCL_CALL

}  // namespace cuda
}  // namespace gpuslack

#include "cuda/nccl_api.h"

#include <atomic>

#include "cuda/runtime_symbols.h"

namespace gpuslack {
namespace cuda {
namespace {

template <typename Fn>
Fn resolve(std::atomic<void*>& slot, const char* name) {
  void* p = slot.load(std::memory_order_acquire);
  if (!p) {
    p = find_symbol(Library::kNccl, name).address;
    if (p) slot.store(p, std::memory_order_release);
  }
  return reinterpret_cast<Fn>(p);
}

std::atomic<void*> g_get_version{nullptr};
std::atomic<void*> g_comm_count{nullptr};
std::atomic<void*> g_comm_user_rank{nullptr};
std::atomic<void*> g_comm_cu_device{nullptr};

}  // namespace

ncclResult_t nccl_get_version(int* version) {
  auto fn = resolve<ncclResult_t (*)(int*)>(g_get_version, "ncclGetVersion");
  return fn ? fn(version) : ncclSystemError;
}

ncclResult_t nccl_comm_count(ncclComm_t comm, int* count) {
  auto fn = resolve<ncclResult_t (*)(ncclComm_t, int*)>(g_comm_count, "ncclCommCount");
  return fn ? fn(comm, count) : ncclSystemError;
}

ncclResult_t nccl_comm_user_rank(ncclComm_t comm, int* rank) {
  auto fn = resolve<ncclResult_t (*)(ncclComm_t, int*)>(g_comm_user_rank, "ncclCommUserRank");
  return fn ? fn(comm, rank) : ncclSystemError;
}

ncclResult_t nccl_comm_cu_device(ncclComm_t comm, int* device) {
  auto fn = resolve<ncclResult_t (*)(ncclComm_t, int*)>(g_comm_cu_device, "ncclCommCuDevice");
  return fn ? fn(comm, device) : ncclSystemError;
}

}  // namespace cuda
}  // namespace gpuslack

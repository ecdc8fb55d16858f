// libnccl.so.2 of the simulated device: the NCCL calls PyTorch links against
// that the simulated communicators do not model (scalable initialization,
// growing, shrinking, suspending and revoking communicators, windows and
// one-sided signals, device communicators, simulated group ends,
// pre-multiplied sums). They exist because Python loads torch's libraries
// with every symbol bound (RTLD_NOW); each fails with ncclInvalidUsage and
// logs that it was asked (log_unanswered).
//
// The names that the NCCL 2.28 header here does not declare (they came with
// later releases that torch is built against) are defined with an open
// parameter list: they are never meant to be called.
#include "nccl_internal.h"

#define GPUSIM_NCCL_UNSUPPORTED(name)                                  \
  do {                                                                 \
    gpusim::log_unanswered("nccl", #name);                             \
    return ncclsim::fail(ncclInvalidUsage, #name " is not simulated"); \
  } while (0)

// Declared by nccl.h.
NCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* comm, int nranks, int rank, int n_ids,
         ncclUniqueId* ids, ncclConfig_t* config) {
  (void)comm, (void)nranks, (void)rank, (void)n_ids, (void)ids, (void)config;
  GPUSIM_NCCL_UNSUPPORTED(ncclCommInitRankScalable);
}
NCCL_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int flags) {
  (void)comm, (void)flags;
  GPUSIM_NCCL_UNSUPPORTED(ncclCommRevoke);
}
NCCL_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* exclude, int n_exclude, ncclComm_t* out,
         ncclConfig_t* config, int flags) {
  (void)comm, (void)exclude, (void)n_exclude, (void)out, (void)config, (void)flags;
  GPUSIM_NCCL_UNSUPPORTED(ncclCommShrink);
}
NCCL_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
         int flags) {
  (void)comm, (void)buff, (void)size, (void)win, (void)flags;
  GPUSIM_NCCL_UNSUPPORTED(ncclCommWindowRegister);
}
NCCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  (void)comm, (void)win;
  GPUSIM_NCCL_UNSUPPORTED(ncclCommWindowDeregister);
}
NCCL_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* info) {
  (void)info;
  GPUSIM_NCCL_UNSUPPORTED(ncclGroupSimulateEnd);
}
NCCL_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar, ncclDataType_t type,
         ncclScalarResidence_t residence, ncclComm_t comm) {
  (void)op, (void)scalar, (void)type, (void)residence, (void)comm;
  GPUSIM_NCCL_UNSUPPORTED(ncclRedOpCreatePreMulSum);
}
NCCL_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm) {
  (void)op, (void)comm;
  GPUSIM_NCCL_UNSUPPORTED(ncclRedOpDestroy);
}

// Not in the NCCL 2.28 header (NCCL 2.29 and 2.30); exported as nccl.h's
// declarations make the others.
#pragma GCC visibility push(default)
#define GPUSIM_NCCL_LATER(name) \
  NCCL_API(ncclResult_t, name, ...) { GPUSIM_NCCL_UNSUPPORTED(name); }
GPUSIM_NCCL_LATER(ncclCommGetUniqueId)
GPUSIM_NCCL_LATER(ncclCommGrow)
GPUSIM_NCCL_LATER(ncclCommMemStats)
GPUSIM_NCCL_LATER(ncclCommSuspend)
GPUSIM_NCCL_LATER(ncclCommResume)
GPUSIM_NCCL_LATER(ncclDevCommCreate)
GPUSIM_NCCL_LATER(ncclDevCommDestroy)
GPUSIM_NCCL_LATER(ncclGetLsaMultimemDevicePointer)
GPUSIM_NCCL_LATER(ncclGetPeerDevicePointer)
GPUSIM_NCCL_LATER(ncclPutSignal)
GPUSIM_NCCL_LATER(ncclSignal)
GPUSIM_NCCL_LATER(ncclWaitSignal)
GPUSIM_NCCL_LATER(ncclWinGetUserPtr)
#pragma GCC visibility pop

// The hooked NCCL symbols: the second table of the generator in hooks.cc
// (the first is hook_table.h; same columns, plus `track`).
//
// Not to be included outside interpose/.
//
// A row: X(symbol, return type, (parameters), (arguments), category, bytes, info, track)
//   - symbol, parameters, arguments: exactly nccl.h's (NCCL 2.28). libnccl.so.2
//     exports each ncclX as a weak alias of pncclX; gpuslack hooks ncclX and
//     finds the real one in libnccl.so* (cuda/runtime_symbols.h);
//   - category: collectives and point-to-point calls are kCollective (host
//     time in them is lost, docs/time-lost.md); ncclMemAlloc/Free
//     allocation; the rest other;
//   - bytes: the NVTX payload; info: what the main ledger records;
//   - track: an expression over the parameters, evaluated before the call,
//     naming what the collectives ledger does around it (nccl_track.h).
//
// Entry points not listed here pass through untouched (libgpuslack.so does
// not define them).
#pragma once

#include <nccl.h>

#include "describe.h"
#include "nccl_track.h"

#define GPUSLACK_COLL Category::kCollective

#define GPUSLACK_NCCL_HOOKS(X)                                                                             \
  /* ---- collectives ---- */                                                                            \
  X(ncclAllReduce, ncclResult_t,                                                                         \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,        \
     ncclComm_t comm, cudaStream_t stream),                                                              \
    (sendbuff, recvbuff, count, datatype, op, comm, stream), GPUSLACK_COLL, elem_bytes(count, datatype),  \
    CallInfo{}, coll(kAllReduce, count, datatype, comm, stream))                                          \
  X(ncclReduceScatter, ncclResult_t,                                                                     \
    (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op,    \
     ncclComm_t comm, cudaStream_t stream),                                                              \
    (sendbuff, recvbuff, recvcount, datatype, op, comm, stream), GPUSLACK_COLL,                          \
    elem_bytes(recvcount, datatype), CallInfo{}, coll(kReduceScatter, recvcount, datatype, comm, stream)) \
  X(ncclAllGather, ncclResult_t,                                                                         \
    (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,   \
     cudaStream_t stream),                                                                               \
    (sendbuff, recvbuff, sendcount, datatype, comm, stream), GPUSLACK_COLL,                              \
    elem_bytes(sendcount, datatype), CallInfo{}, coll(kAllGather, sendcount, datatype, comm, stream))     \
  X(ncclBroadcast, ncclResult_t,                                                                         \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,              \
     ncclComm_t comm, cudaStream_t stream),                                                              \
    (sendbuff, recvbuff, count, datatype, root, comm, stream), GPUSLACK_COLL,                            \
    elem_bytes(count, datatype), CallInfo{}, coll(kBroadcast, count, datatype, comm, stream))             \
  X(ncclBcast, ncclResult_t,                                                                             \
    (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream), \
    (buff, count, datatype, root, comm, stream), GPUSLACK_COLL, elem_bytes(count, datatype), CallInfo{},  \
    coll(kBroadcast, count, datatype, comm, stream))                                                      \
  X(ncclReduce, ncclResult_t,                                                                            \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,        \
     int root, ncclComm_t comm, cudaStream_t stream),                                                    \
    (sendbuff, recvbuff, count, datatype, op, root, comm, stream), GPUSLACK_COLL,                        \
    elem_bytes(count, datatype), CallInfo{}, coll(kReduce, count, datatype, comm, stream))                \
  X(ncclAlltoAll, ncclResult_t,                                                                          \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,       \
     cudaStream_t stream),                                                                               \
    (sendbuff, recvbuff, count, datatype, comm, stream), GPUSLACK_COLL, elem_bytes(count, datatype),     \
    CallInfo{}, coll(kAlltoAll, count, datatype, comm, stream))                                           \
  X(ncclGather, ncclResult_t,                                                                            \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,              \
     ncclComm_t comm, cudaStream_t stream),                                                              \
    (sendbuff, recvbuff, count, datatype, root, comm, stream), GPUSLACK_COLL,                            \
    elem_bytes(count, datatype), CallInfo{}, coll(kGather, count, datatype, comm, stream))                \
  X(ncclScatter, ncclResult_t,                                                                           \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,              \
     ncclComm_t comm, cudaStream_t stream),                                                              \
    (sendbuff, recvbuff, count, datatype, root, comm, stream), GPUSLACK_COLL,                            \
    elem_bytes(count, datatype), CallInfo{}, coll(kScatter, count, datatype, comm, stream))               \
  X(ncclSend, ncclResult_t,                                                                              \
    (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,             \
     cudaStream_t stream),                                                                               \
    (sendbuff, count, datatype, peer, comm, stream), GPUSLACK_COLL, elem_bytes(count, datatype),         \
    CallInfo{}, p2p(kSend, count, datatype, peer, comm, stream))                                         \
  X(ncclRecv, ncclResult_t,                                                                              \
    (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,                   \
     cudaStream_t stream),                                                                               \
    (recvbuff, count, datatype, peer, comm, stream), GPUSLACK_COLL, elem_bytes(count, datatype),         \
    CallInfo{}, p2p(kRecv, count, datatype, peer, comm, stream))                                         \
  /* ---- groups: grouped collectives are launched in ncclGroupEnd ---- */                               \
  X(ncclGroupStart, ncclResult_t, (), (), GPUSLACK_OTHER, 0, CallInfo{}, GroupStart{})                   \
  X(ncclGroupEnd, ncclResult_t, (), (), GPUSLACK_COLL, 0, CallInfo{}, GroupEnd{})                       \
  /* ---- communicators ---- */                                                                          \
  X(ncclCommInitRank, ncclResult_t, (ncclComm_t * comm, int nranks, ncclUniqueId id, int rank),          \
    (comm, nranks, id, rank), GPUSLACK_OTHER, 0, CallInfo{}, CommInit{})                                 \
  X(ncclCommInitRankConfig, ncclResult_t,                                                                \
    (ncclComm_t * comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config),                    \
    (comm, nranks, id, rank, config), GPUSLACK_OTHER, 0, CallInfo{}, CommInit{})                         \
  X(ncclCommInitAll, ncclResult_t, (ncclComm_t * comm, int ndev, const int* devlist),                    \
    (comm, ndev, devlist), GPUSLACK_OTHER, 0, CallInfo{}, CommInit{})                                    \
  X(ncclCommSplit, ncclResult_t,                                                                         \
    (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config),                    \
    (comm, color, key, newcomm, config), GPUSLACK_OTHER, 0, CallInfo{}, CommInit{})                      \
  X(ncclCommFinalize, ncclResult_t, (ncclComm_t comm), (comm), GPUSLACK_OTHER, 0, CallInfo{},            \
    Untracked{})                                                                                         \
  X(ncclCommDestroy, ncclResult_t, (ncclComm_t comm), (comm), GPUSLACK_OTHER, 0, CallInfo{},             \
    (CommGone{comm, false}))                                                                             \
  X(ncclCommAbort, ncclResult_t, (ncclComm_t comm), (comm), GPUSLACK_OTHER, 0, CallInfo{},               \
    (CommGone{comm, true}))                                                                              \
  X(ncclCommCount, ncclResult_t, (const ncclComm_t comm, int* count), (comm, count), GPUSLACK_OTHER, 0,  \
    CallInfo{}, Untracked{})                                                                             \
  X(ncclCommUserRank, ncclResult_t, (const ncclComm_t comm, int* rank), (comm, rank), GPUSLACK_OTHER, 0, \
    CallInfo{}, Untracked{})                                                                             \
  X(ncclCommCuDevice, ncclResult_t, (const ncclComm_t comm, int* device), (comm, device),                \
    GPUSLACK_OTHER, 0, CallInfo{}, Untracked{})                                                          \
  /* ---- memory ---- */                                                                                 \
  X(ncclMemAlloc, ncclResult_t, (void** ptr, size_t size), (ptr, size), GPUSLACK_ALLOC, size,            \
    alloc_info(size), Untracked{})                                                                       \
  X(ncclMemFree, ncclResult_t, (void* ptr), (ptr), GPUSLACK_ALLOC, 0, free_info(ptr), Untracked{})       \
  X(ncclCommRegister, ncclResult_t, (const ncclComm_t comm, void* buff, size_t size, void** handle),     \
    (comm, buff, size, handle), GPUSLACK_OTHER, 0, CallInfo{}, Untracked{})                              \
  X(ncclCommDeregister, ncclResult_t, (const ncclComm_t comm, void* handle), (comm, handle),             \
    GPUSLACK_OTHER, 0, CallInfo{}, Untracked{})

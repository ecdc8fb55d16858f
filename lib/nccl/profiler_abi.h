// NCCL's profiler plugin interface, as its ABI documents it: the versioned
// structs a plugin exports as `ncclProfiler_vN` and the event descriptors
// NCCL passes to them. Written from NVIDIA/nccl's documentation and headers
// (ext-profiler/README.md; src/include/plugin/nccl_profiler.h and
// src/include/plugin/profiler/profiler_vN.h), field for field, with the
// release each version came with:
//
//   v1  NCCL 2.23  the interface appears; func, datatype, algo and proto
//                  are NCCL's enum values (uint8_t)
//   v2  NCCL 2.24  func, datatype, algo, proto become strings
//   v3  NCCL 2.25  kernelCh (channel id only) and netPlugin events; the
//                  coll's trafficBytes goes
//   v4  NCCL 2.26  init takes commName, commHash, nNodes, nranks, rank and
//                  a logger; coll/p2p lose name and commHash, coll's
//                  nMaxChannels becomes nChannels; kernelCh carries the GPU
//                  globaltimer at start, KernelChStop's state args at stop
//   v5  NCCL 2.28  type becomes uint64_t; API events (groupApi, collApi,
//                  p2pApi, kernelLaunch); coll/p2p gain parentGroup (the
//                  group; parentObj is now the API event); init's commId
//                  moves to the second argument
//   v6  NCCL 2.29  copy-engine events (ceColl, ceCollSync, ceCollBatch);
//                  v5's state args
//
// NCCL loads the newest version it finds (src/plugin/profiler.cc). Strings
// NCCL passes (v2+) are its ncclAlgoToString / ncclProtoToString /
// ncclFuncToString / ncclDatatypeToString: "RING", "TREE",
// "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"; "LL",
// "LL128", "SIMPLE"; "AllReduce", ...; "ncclFloat32", ...
//
// Only the layout matters here: gpuslack reads these structs, never builds
// them (the simulated NCCL of tests/simcuda does, from this header).
// ncclResult_t is an int-sized enum, ncclDebugLogger_t a variadic function
// pointer: declared as such, so that this header needs no nccl.h.
//
// Thread safety: declarations only.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace gpuslack {
namespace nccl {
namespace abi {

using Result = int;  // ncclResult_t: 0 is ncclSuccess
inline constexpr Result kSuccess = 0;
inline constexpr Result kInternalError = 3;  // ncclInternalError
using Logger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

// eActivationMask bits (nccl_profiler.h).
enum : int {
  kProfileGroup = 1 << 0,
  kProfileColl = 1 << 1,
  kProfileP2p = 1 << 2,
  kProfileProxyOp = 1 << 3,
  kProfileProxyStep = 1 << 4,
  kProfileProxyCtrl = 1 << 5,
  kProfileKernelCh = 1 << 6,
  kProfileNetPlugin = 1 << 7,
  kProfileGroupApi = 1 << 8,   // v5
  kProfileCollApi = 1 << 9,    // v5
  kProfileP2pApi = 1 << 10,    // v5
  kProfileKernelLaunch = 1 << 11,  // v5
  kProfileCeColl = 1 << 12,    // v6
  kProfileCeSync = 1 << 13,    // v6
  kProfileCeBatch = 1 << 14,   // v6
};

// ncclProfilerEventState_t (one enum for every version; the values that
// matter here).
using EventState = int;
inline constexpr EventState kKernelChStop = 22;  // ncclProfilerKernelChStop (v4+)

// v1's enum values (NCCL's ncclFunc_t, NCCL_ALGO_*, NCCL_PROTO_*).
enum : uint8_t {
  kFuncBroadcast = 0, kFuncReduce, kFuncAllGather, kFuncReduceScatter, kFuncAllReduce, kFuncSendRecv, kFuncSend,
  kFuncRecv,
};
enum : uint8_t { kAlgoTree = 0, kAlgoRing, kAlgoCollNetDirect, kAlgoCollNetChain, kAlgoNvls, kAlgoNvlsTree, kAlgoPat };
enum : uint8_t { kProtoLL = 0, kProtoLL128, kProtoSimple };

struct ProxyOpDescr {  // identical in every version
  pid_t pid;
  uint8_t channelId;
  int peer;
  int nSteps;
  int chunkSize;
  int isSend;
};

// ---- v1 (NCCL 2.23): ncclProfilerEventDescr_v1_t, ncclProfiler_v1_t ----
struct EventDescrV1 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      uint8_t func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      uint8_t datatype;  // ncclDataType_t
      uint32_t op;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      uint8_t algo;
      uint8_t proto;
      int isCollnet;
      int isNvls;
    } coll;
    struct {
      const char* name;
      uint64_t commHash;
      uint8_t func;
      void* buff;
      uint8_t datatype;
      size_t count;
      int peer;
    } p2p;
    ProxyOpDescr proxyOp;
    struct {
      int step;
    } proxyStep;
  };
};
union StateArgsV1 {
  struct {
    size_t transSize;
    int steps;
  } proxyOp;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
};
struct ProfilerV1 {
  const char* name;
  Result (*init)(void** context, int* eActivationMask);
  Result (*startEvent)(void* context, void** eHandle, EventDescrV1* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, EventState eState, StateArgsV1* eStateArgs);
  Result (*finalize)(void* context);
};

// ---- v2 (NCCL 2.24) ----
struct EventDescrV2 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* name;
      uint64_t commHash;
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
    } p2p;
    ProxyOpDescr proxyOp;
    struct {
      int step;
    } proxyStep;
  };
};
using StateArgsV2 = StateArgsV1;
struct ProfilerV2 {
  const char* name;
  Result (*init)(void** context, int* eActivationMask);
  Result (*startEvent)(void* context, void** eHandle, EventDescrV2* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, EventState eState, StateArgsV2* eStateArgs);
  Result (*finalize)(void* context);
};

// ---- v3 (NCCL 2.25) ----
struct EventDescrV3 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* name;
      uint64_t commHash;
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
    } p2p;
    ProxyOpDescr proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
};
using StateArgsV3 = StateArgsV1;
struct ProfilerV3 {
  const char* name;
  Result (*init)(void** context, int* eActivationMask);
  Result (*startEvent)(void* context, void** eHandle, EventDescrV3* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, EventState eState, StateArgsV3* eStateArgs);
  Result (*finalize)(void* context);
};

// ---- v4 (NCCL 2.26, 2.27) ----
struct CollDescrV4 {
  uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  uint8_t nChannels;
  uint8_t nWarps;
  const char* algo;
  const char* proto;
};
struct P2pDescrV4 {
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
  uint8_t nChannels;
};
struct KernelChDescrV4 {
  uint8_t channelId;
  uint64_t pTimer;  // GPU globaltimer at the channel's start, ns
};
struct EventDescrV4 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    CollDescrV4 coll;
    P2pDescrV4 p2p;
    ProxyOpDescr proxyOp;
    struct {
      int step;
    } proxyStep;
    KernelChDescrV4 kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
};
union StateArgsV4 {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;  // KernelChStop: GPU globaltimer at the channel's end, ns
  } kernelCh;
};
struct ProfilerV4 {
  const char* name;
  Result (*init)(void** context, int* eActivationMask, const char* commName, uint64_t commHash, int nNodes,
                 int nranks, int rank, Logger logfn);
  Result (*startEvent)(void* context, void** eHandle, EventDescrV4* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, EventState eState, StateArgsV4* eStateArgs);
  Result (*finalize)(void* context);
};

// ---- v5 (NCCL 2.28) ----
struct CollDescrV5 {
  uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  uint8_t nChannels;
  uint8_t nWarps;
  const char* algo;
  const char* proto;
  void* parentGroup;
};
struct P2pDescrV5 {
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
  uint8_t nChannels;
  void* parentGroup;
};
struct EventDescrV5 {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    CollDescrV5 coll;
    P2pDescrV5 p2p;
    ProxyOpDescr proxyOp;
    struct {
      int step;
    } proxyStep;
    KernelChDescrV4 kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
};
using StateArgsV5 = StateArgsV4;
struct ProfilerV5 {
  const char* name;
  Result (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                 int nranks, int rank, Logger logfn);
  Result (*startEvent)(void* context, void** eHandle, EventDescrV5* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, EventState eState, StateArgsV5* eStateArgs);
  Result (*finalize)(void* context);
};

// ---- v6 (NCCL 2.29): v5's events plus the copy engine's ----
struct EventDescrV6 {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    CollDescrV5 coll;
    P2pDescrV5 p2p;
    ProxyOpDescr proxyOp;
    struct {
      int step;
    } proxyStep;
    KernelChDescrV4 kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
    struct {
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      const char* syncStrategy;
      bool intraBatchSync;
      uint32_t batchSize;
      uint32_t numBatches;
      uint32_t ceSeqNum;
      void* stream;
    } ceColl;
    struct {
      bool isComplete;
      int nRanks;
    } ceCollSync;
    struct {
      int numOps;
      size_t totalBytes;
      bool useIntraSync;
    } ceCollBatch;
  };
};
using StateArgsV6 = StateArgsV5;
struct ProfilerV6 {
  const char* name;
  Result (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                 int nranks, int rank, Logger logfn);
  Result (*startEvent)(void* context, void** eHandle, EventDescrV6* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, EventState eState, StateArgsV6* eStateArgs);
  Result (*finalize)(void* context);
};

inline constexpr int kOldestVersion = 1;
inline constexpr int kNewestVersion = 6;

}  // namespace abi
}  // namespace nccl
}  // namespace gpuslack

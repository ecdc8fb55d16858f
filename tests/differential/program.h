// A differential program: per host thread, a list of runtime calls over
// buffers and streams named by index, made by generator.h from a seed and
// run by executor.h once against the runtime alone and once through
// gpuslack's hooks.
//
// Names, not pointers: an op says "slot 3 at offset 4096", "own stream 1";
// the executor keeps what each name stands for in the run at hand, so one
// program means the same calls in both runs whatever addresses they get.
//
// Note [What an op may ask the runtime to touch]: the simulated runtime
// validates device pointers against its registry, but treats every address
// it does not know as pageable host memory and really copies to and from it.
// So the ops never hand the runtime a pointer it could fault on: host-side
// ranges (pageable, pinned, registered) always lie inside their buffer;
// NULL, stack and garbage addresses go only where the runtime refuses them
// without touching them (frees, memsets, zero-size copies); freed pointers
// are reused only by a double free, under an exclusive section
// (Op::exclusive) so no allocation in any thread can hand the address out in
// between. Device-side ranges may run past the end, start inside a block, or
// be zero: that is what is tested. The executor enforces the host-side rule
// again (an op that would break it is skipped in both runs), so any subset of
// a program, as shrinking makes, is still safe to run.
//
// Thread safety: plain values; a Program is read-only once generated.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace differential {

// Where an op runs: a stream context. kLegacy is the legacy default stream
// (NULL through a plain entry point), kPerThread the calling thread's
// per-thread default stream (NULL through a _ptsz/_ptds entry point, or
// cudaStreamPerThread), kOwn0..2 the thread's own streams (created with
// cudaStreamCreate, cudaStreamCreateWithFlags(NonBlocking) and
// cudaStreamCreateWithPriority), kBogus a handle no stream has.
enum class Ctx : uint8_t { kNone, kLegacy, kPerThread, kOwn0, kOwn1, kOwn2, kBogus };
constexpr int kOwnStreams = 3;

// What a buffer slot holds.
enum class BufKind : uint8_t {
  kEmpty,
  kDevice,     // cudaMalloc
  kAsync,      // cudaMallocAsync: freed with cudaFreeAsync
  kPool,       // cudaMallocFromPoolAsync (default pool): freed with cudaFreeAsync
  kPitched,    // cudaMallocPitch / cudaMalloc3D: freed with cudaFree
  kManaged,    // cudaMallocManaged
  kPinned,     // cudaMallocHost / cudaHostAlloc: freed with cudaFreeHost
  kPageable,   // the harness's own heap memory (cudaHostRegister may pin it)
};
bool device_side(BufKind k);  // the runtime validates its ranges
bool stream_ordered(BufKind k);

// A pointer an op names that is not a slot. kStack is a buffer of
// kStackBytes on the executing thread's stack: pageable memory the runtime
// may really copy to and from (in range); the others go only where it
// refuses them untouched (frees, memsets, zero-size copies).
enum class Bogus : uint8_t { kNull, kStack, kLow, kKernelSpace };
constexpr uint64_t kStackBytes = 4096;

enum class OpKind : uint8_t {
  // Allocation into slot dst.slot of `n` bytes (variant: entry point or flags).
  kMalloc, kMallocAsync, kMallocFromPool, kMallocPitch, kMalloc3D, kMallocManaged,
  kMallocHost, kHostAlloc, kPageable,
  // Frees of slot dst.slot: the right call; the wrong one (variant: 0
  // cudaFree, 1 cudaFreeHost, 2 cudaFreeAsync); at an interior offset
  // dst.off; twice (an exclusive op); of a bogus pointer dst.bogus (variant:
  // which free, as for kFreeWrong).
  kFree, kFreeWrong, kFreeInterior, kDoubleFree, kFreeBogus,
  kHostRegister,    // variant 0: the slot; 1: again (already registered); 2: size 0; 3: NULL
  kHostUnregister,  // variant 0: the slot; 1: a pointer not registered (stack)
  kAllocEdge,       // invalid or degenerate allocation and stream calls (variant: EdgeCase)
  // Memory: 1D (`n` bytes), 2D (`width` x `height`, pitches).
  kMemset, kMemset2D, kMemcpy, kMemcpy2D, kMemcpyPeer, kMemcpyBatch,
  kKernel,          // gpusim_busy_kernel writing `n` bytes at dst (not a hooked call)
  // Streams and synchronization.
  kStreamCreate, kStreamDestroy,  // own stream `variant` (0..kOwnStreams-1)
  kStreamSync, kDeviceSync, kEventSync, kHostFunc, kWaitEvent, kMemGetInfo, kIpcHandle,
  // Through the driver API only (executor_driver.cc), each self-contained:
  // cuMemAlloc_v2 / cuMemsetD32_v2 / cuMemcpyDtoH_v2 / cuMemFree_v2 rounds,
  // valid or not (variant: DriverAllocCase), and VMM rounds (cuMemCreate,
  // cuMemAddressReserve, cuMemMap, cuMemSetAccess, cuMemUnmap, cuMemRelease;
  // variant: DriverVmmCase) on memory no slot holds.
  kDriverAlloc, kDriverVmm,
  // The harness's own actions, through the runtime's own functions in both
  // runs (never the hooks): fill a host range from the seed, initialize a
  // new buffer, read a buffer back.
  kFill, kInit, kObserve,
  kBarrier,         // every thread meets; thread 0 runs the global checks
};

// kAllocEdge's cases.
enum class EdgeCase : uint8_t {
  kMallocNullOut, kMallocZero, kMallocHuge, kMallocOverCapacity,
  kMallocAsyncNullOut, kMallocAsyncZero, kMallocAsyncBogusStream, kMallocAsyncHuge,
  kPoolBogusPool, kPoolNullOut,
  kMallocHostNullOut, kMallocHostZero, kMallocHostHuge, kHostAllocHuge,
  kPitchNullPitch, kPitchNullOut, kMalloc3DNull, kManagedNullOut,
  kStreamCreateNull, kStreamCreateBadFlags, kStreamPriorityNull, kStreamDestroyNull,
  kStreamDestroyBogus, kStreamCreateDestroy, kMemGetInfoNulls, kMemGetInfoNullTotal,
  kIpcNullHandle, kEventSyncNull, kHostFuncNull, kBatchEmpty, kBatchNullArrays,
  kFreeAsyncBogusStream, kPeerBadDevice,
  kCount,
};

// kDriverAlloc's cases.
enum class DriverAllocCase : uint8_t {
  kRound, kNullOut, kZero, kHuge, kFreeNull, kFreeInterior, kDoubleFree, kFreeBogus, kCount,
};
// kDriverVmm's cases.
enum class DriverVmmCase : uint8_t {
  kRound, kMapBogusHandle, kReleaseTwice, kAccessUnmapped, kCreateOddSize, kUnmapUnmapped, kCount,
};

// One side of a copy or a memset target: a slot and offset, or a bogus
// pointer (only where Note [What an op may ask the runtime to touch] allows).
struct Ref {
  int8_t slot = -1;       // -1: `bogus`
  Bogus bogus = Bogus::kNull;
  uint64_t off = 0;
  // A pinned slot's range may run past its end (--pinned-overruns): the
  // runtime refuses that without touching memory, as for device memory.
  bool may_overrun = false;
};

struct Part {  // one copy of a kMemcpyBatch
  Ref dst, src;
  uint64_t n = 0;
};

struct Op {
  OpKind kind = OpKind::kBarrier;
  uint8_t variant = 0;
  Ctx ctx = Ctx::kNone;       // the stream it runs on (kNone: none)
  Ctx ctx2 = Ctx::kNone;      // kWaitEvent: the stream that records the event
  bool ptsz = false;          // through the _ptsz/_ptds entry point
  bool clear_error = true;    // cudaGetLastError after it (else only peeked)
  bool exclusive = false;     // no other thread runs an op meanwhile
  bool not_under_vmm = false; // a documented difference under allocator:vmm: skipped there
  // kMemset (1D), kMemcpy (1D), kStreamSync, kDeviceSync through the driver
  // API instead (executor_driver.cc): cuMemsetD8/D32 (flags: 8 or 32),
  // cuMemcpyHtoD/DtoH/DtoD by the slots' sides, cuStreamSynchronize,
  // cuCtxSynchronize; variant and ptsz pick the entry point as for the
  // runtime's (_ptds/_ptsz, Async).
  bool driver = false;
  Ref dst, src;               // dst: the one slot of single-target ops (allocate, free, memset, ...)
  uint64_t n = 0;             // bytes (1D), width (2D), or allocation size
  uint64_t height = 1;
  uint64_t dpitch = 0, spitch = 0;
  unsigned flags = 0;
  int value = 0;
  uint32_t micros = 0;        // kKernel: GPU time
  cudaMemcpyKind copy_kind = cudaMemcpyDefault;
  int dst_device = 0, src_device = 0;  // kMemcpyPeer
  std::vector<Part> parts;             // kMemcpyBatch
  std::string note;                    // what the slots held when generated, for reports
};

struct ThreadProgram {
  std::vector<Op> ops;
  std::vector<uint32_t> origin;  // each op's index in the seed's program (empty: the same)
  size_t origin_of(size_t i) const { return origin.empty() ? i : origin[i]; }
};

struct Program {
  uint64_t seed = 0;
  int slots = 0;  // buffer slots per thread
  std::vector<ThreadProgram> threads;
  int barriers = 0;  // kBarrier ops per thread (every thread has as many)
};

// One line naming the op and its arguments, e.g.
// "cudaMemcpyAsync(dst=s3+4096, src=s1+0, n=2097152, H2D, stream=own1)".
std::string describe(const Op& op);
const char* ctx_name(Ctx c);
const char* kind_name(BufKind k);
const char* edge_name(EdgeCase e);
// The driver call a driver op makes, e.g. "cuMemcpyHtoDAsync_v2_ptsz".
std::string driver_entry(const Op& op);

}  // namespace differential

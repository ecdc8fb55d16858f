// The simulated CUDA device: the core shared by the three API libraries.
//
// libcudart.so.13, libcuda.so.1 and libnccl.so.2 in this folder are thin
// translations of the real CUDA 13 / NCCL 2 APIs onto this core, which lives
// in libgpusim.so so that the three share one device (one memory registry,
// one set of streams), as the real runtime, driver and NCCL do.
//
// What is simulated, and how faithfully, is written in README.md beside this
// file; the numbers of the cost model live in config.cc, each with its source.
//
// Not a header of the product: gpuslack never includes it. Test-only.
//
// Thread safety: every function here may be called from any thread. Stream
// bookkeeping is guarded by one process-wide mutex (Core::mu): the simulated
// device has a handful of streams and correctness, not scalability, is what
// the tests need from it.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#define GPUSIM_EXPORT extern "C" __attribute__((visibility("default")))

// Note [Internal calls]: one simulated API function never calls another
// through its exported name. That name is interposable: under LD_PRELOAD a
// call from cudaMallocPitch to cudaMalloc would reach gpuslack's cudaMalloc
// hook, and the summary would count a call the application never made (the
// real runtime's internal paths are invisible to an interposer). Such a call
// goes through a hidden alias instead, bound inside the library at link
// time: GPUSIM_INTERNAL_ALIAS(cudaError_t, cudaMalloc, (void**, size_t))
// after the definition of cudaMalloc defines gpusim_internal_cudaMalloc;
// GPUSIM_INTERNAL_DECL declares it in another file of the same library.
#define GPUSIM_INTERNAL_DECL(ret_t, name, params) \
  extern "C" __attribute__((visibility("hidden"))) ret_t gpusim_internal_##name params
#define GPUSIM_INTERNAL_ALIAS(ret_t, name, params) \
  extern "C" __attribute__((visibility("hidden"), alias(#name))) ret_t gpusim_internal_##name params

namespace gpusim {

using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------- config --

// The cost model and the device's shape, read once from GPUSIM_* variables
// (see README.md). Bandwidths in GB/s (1e9 bytes/s), times in microseconds.
struct Config {
  int device_count = 1;          // GPUSIM_DEVICE_COUNT
  size_t device_bytes = 8ull << 30;  // GPUSIM_DEVICE_MEMORY (bytes; K/M/G suffix)
  bool no_driver = false;        // GPUSIM_NO_DRIVER=1: cuInit fails
  // GPUSIM_NO_VMM=1: a device without virtual memory management
  // (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED reads 0; the
  // VMM calls answer CUDA_ERROR_NOT_SUPPORTED).
  bool no_vmm = false;
  // GPUSIM_VMM_REFUSE=posix_fd,rdma: cuMemCreate answers
  // CUDA_ERROR_NOT_SUPPORTED to a request for the POSIX-fd handle type
  // (posix_fd) or the GPUDirect RDMA flag (rdma) while the device
  // attributes still say both are supported, as a container or a vGPU may.
  bool refuse_posix_fd = false, refuse_rdma = false;
  // GPUSIM_FABRIC_HANDLES=1: the driver offers fabric handles
  // (CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED reads 1;
  // CU_MEM_HANDLE_TYPE_FABRIC can be requested, exported and imported by
  // another process of the same user on this host). Off by default: no
  // fabric, as on a PCIe machine. GPUSIM_VMM_REFUSE=fabric: the attribute
  // still says 1, but cuMemCreate asking for the fabric type answers
  // CUDA_ERROR_NOT_PERMITTED, as a process without an IMEX channel gets.
  bool fabric_handles = false, refuse_fabric = false;
  // Where CUDA's documentation reads two ways, the Programming Guide's
  // reading is the default (README.md, "Where the documentation is not
  // clear"); tests/conformance checks each against a real device.
  // GPUSIM_MALLOC_SYNC=1: cudaMalloc waits for the device to go idle; by
  // default it is an implicit ordering point between streams only
  // (Programming Guide, "Implicit Synchronization").
  bool malloc_syncs = false;
  // GPUSIM_PAGEABLE_ASYNC_BYTES (K/M/G suffix): pageable host-to-device
  // copies of at most this many bytes do not drain their stream (Programming
  // Guide, "Concurrent Execution between Host and Device": "memory copies
  // from host to device of a memory block of 64 KB or less"); 0: every
  // pageable copy drains (Runtime API, "API synchronization behavior").
  size_t pageable_async_bytes = 64 << 10;
  double nccl_timeout_s = 60;    // GPUSIM_NCCL_TIMEOUT_S: a cross-process rank waits this long for a peer
  // GPUSIM_NCCL_PROFILER_VERSION: the newest profiler plugin interface the
  // simulated NCCL looks for (ncclProfiler_v6 .. _v1, newest first: 6 is
  // NCCL 2.29, 4 NCCL 2.26, 1 NCCL 2.23); 0: it loads no plugin (NCCL
  // before 2.23). README.md, "NCCL's profiler plugin".
  int nccl_profiler_version = 6;
  // GPUSIM_NVML_THROTTLE=device:ratio[:reason]: that device's NVML reports
  // its SM clock at `ratio` of the maximum, the reason (an
  // nvmlClocksEventReason bit: sw_thermal unless named) and a high
  // temperature; its kernels take 1/ratio as long.
  int throttle_device = -1;
  double throttle_ratio = 1.0;
  unsigned long long throttle_reason = 0;

  double pinned_h2d_gbps = 50;   // DMA, pinned host -> device
  double pinned_d2h_gbps = 50;   // DMA, device -> pinned host
  double pageable_gbps = 12;     // host staging copy of a pageable transfer
  double d2d_gbps = 1500;        // device memory, counted as read + write
  double memset_gbps = 3000;     // device memory writes
  double copy_latency_us = 2;    // per copy or memset on the GPU
  double nccl_gbps = 100;        // bus bandwidth of one NCCL link
  double nccl_latency_us = 10;   // per collective
  // The NCCL fabric (README.md, "NCCL", "Fabric"): nodes x GPUs per node.
  // Set by GPUSIM_NVLINK_LINKS, GPUSIM_NVLINK_VERSION, GPUSIM_NET_GBPS,
  // GPUSIM_NET_LATENCY_US and GPUSIM_NODE; with neither GPUSIM_NVLINK_LINKS
  // nor GPUSIM_NET_GBPS set (`fabric` false), collectives keep the one-link
  // time above (nccl_gbps, nccl_latency_us). NVML reports the same links
  // (nvml.cc): NVLink links up per GPU (0..18), 0 = PCIe only, as before;
  // and their generation (1..5: NVML answers the matching
  // nvmlNvlinkVersion_t). The PCIe link is gen 5 x16.
  int nvlink_links = 0;          // GPUSIM_NVLINK_LINKS: NVLink links up per GPU; 0 = PCIe only
  int nvlink_version = 4;        // GPUSIM_NVLINK_VERSION
  double net_gbps = 0;           // GPUSIM_NET_GBPS: network per GPU per direction (0: nccl_gbps)
  double net_latency_us = 0;     // GPUSIM_NET_LATENCY_US: per network hop (0: NCCL's own figure)
  int node = 0;                  // GPUSIM_NODE: this process's simulated node
  bool fabric = false;           // nvlink_links > 0 or net_gbps > 0
  // GPUSIM_NCCL_ALGO_DEFAULT: what NCCL's tuner picks where NCCL_ALGO
  // leaves it a choice. false ("tuned", the default): the cost model's
  // fastest; true ("ring"): Ring whenever allowed (the field report's NCCL).
  bool nccl_ring_default = false;
  // GPUSIM_NCCL_DATA=0: collectives keep their time but move no data (their
  // outputs are left as they were), so that a job of many ranks of large
  // buffers on a few host cores is timed by the model, not by memcpy. Set it
  // alike for every rank of a communicator.
  bool nccl_moves_data = true;

  double malloc_us = 10;         // cudaMalloc base cost
  double malloc_per_gib_us = 100;
  double free_us = 14;           // cudaFree, device idle
  double host_alloc_us = 20;     // cudaMallocHost / cudaHostAlloc base
  double host_pin_gbps = 4;      // pinning rate of cudaHostAlloc/Register
  double free_host_us = 10;      // cudaFreeHost base (plus device sync)
  double malloc_async_us = 1.5;  // cudaMallocAsync / cudaFreeAsync
  double event_record_us = 1;    // cudaEventRecord
  // The VMM calls (README.md, "Cost model", "The VMM calls"): calibrated on
  // the one published per-call measurement found, on an A100 80GB with
  // 2 MiB handles (ovg-project/kvcached, benchmarks/bench_vmm/README.md:
  // cuMemCreate 193.32 us, cuMemMap 1.45, cuMemSetAccess 35.99, cuMemUnmap
  // 25.63, averages of 4096 calls on one thread); no H100/H200 figure was
  // found. How each grows with size is not published: the per-byte parts
  // below are estimates, the per-call parts make a 2 MiB call cost what was
  // measured. Computed by vmm_cost_us() below.
  double mem_create_us = 191;    // cuMemCreate per call
  double mem_create_gbps = 1000; // cuMemCreate zeroing (estimate: HBM speed)
  double mem_map_us = 1.5;       // cuMemMap per call
  double mem_unmap_us = 25.6;    // cuMemUnmap per mapping (handle) it removes
  double set_access_us = 34;     // cuMemSetAccess per call
  double set_access_per_2mib_us = 2;  // cuMemSetAccess per 2 MiB granule (estimate)
  double mem_release_us = 0;     // cuMemRelease: no published figure, not charged
  // Kernels (cudaLaunchKernel, cuLaunchKernel, ...) are never computed: each
  // occupies its stream for kernel_us + kernel_per_block_us x blocks.
  double kernel_us = 5;             // GPU time of any launch
  double kernel_per_block_us = 0.005;  // per block of the grid
  double launch_us = 2;             // host-side cost of a launch call
  // Math library kernels (the simulated cuBLAS/cuBLASLt: gemm, gemv, dot)
  // occupy their stream for kernel_us + flops / rate; never computed.
  double gemm_tflops = 50;          // FLOP rate of a math-library kernel (TFLOP/s)
};
const Config& config();
// How much longer a kernel on `device` takes than the cost model says (1
// unless GPUSIM_NVML_THROTTLE names the device).
double kernel_slowdown(int device);

// Host-side cost of an API call: the calling thread loses `us` of wall time
// (spinning below 20 us, where sleeping is too coarse; sleeping above).
void charge(double us);
// Host-side CPU work of `us`: the calling thread spins, never sleeping,
// but yields its CPU to any other runnable thread at each turn. A kernel
// launch is such work (the driver builds and submits the launch on the
// calling thread; it never sleeps): modeled as a sleep, a 150 us launch on
// a loaded machine waits for a scheduler slice to wake and turns into
// milliseconds; modeled as a plain spin, it holds a core the simulated
// GPU's worker threads need, and on a 2-core machine with anything else
// running the GPU falls behind the host, which a real GPU never does.
void charge_cpu(double us);
// GPU-side time: blocks the current (worker) thread until `deadline`.
void wait_until(Clock::time_point deadline);
Clock::time_point after(Clock::time_point t, double us);
double transfer_us(size_t bytes, double gbps);
// The modeled host time of one VMM call (README.md, "Cost model"): `bytes`
// is the call's size, `mappings` the mappings a cuMemUnmap removes. The
// driver charges exactly this; tests read it back.
enum class VmmCall { kCreate, kMap, kUnmap, kSetAccess, kRelease };
double vmm_cost_us(VmmCall call, size_t bytes, size_t mappings = 1);
// Per-direction bandwidth of one NVLink link of `version`, GB/s (NVLink 4:
// 25, 18 links = 450 per direction, 900 GB/s both ways); 0 unknown version.
double nvlink_link_gbps(int version);

// Says on stderr, once per (api, name), that the simulated device was asked
// for something it cannot answer: "gpusim: unanswered <api>: <name>". The
// torch tests fail on such a line (README.md, "Hosting PyTorch").
void log_unanswered(const char* api, const char* name);

// The CUDA runtime's teardown at exit: "The CUDA interfaces use global
// state that is initialized during host program initiation and destroyed
// during host program termination ... using any of these interfaces
// (implicitly or explicitly) during program initiation or termination
// (after main) will result in undefined behavior" (CUDA C++ Programming
// Guide, "Initialization"). The simulated runtime registers its teardown
// (an atexit handler) when it first makes a primary context, as the real
// one registers its own when it initializes; with GPUSIM_CHECK_TEARDOWN=1 a
// driver call made after it says so, once, on stderr: "gpusim: a driver
// call after the CUDA runtime's teardown".
void register_runtime_teardown();
bool runtime_torn_down();

// ---------------------------------------------------------------- faults --

// GPUSIM_FAIL="cuMemCreate:3,cudaMalloc:1+" makes the 3rd call of cuMemCreate
// fail, and every call of cudaMalloc from the 1st on. Returns true when the
// current call of `name` is to fail. Counting is per process.
bool should_fail(const char* name);

// ---------------------------------------------------------------- memory --

enum class MemKind { kDevice, kDeviceAsync, kPinned, kRegistered, kManaged, kVmmReserve };

struct Region {
  uintptr_t base = 0;
  size_t size = 0;
  MemKind kind = MemKind::kDevice;
  int device = 0;
  unsigned flags = 0;
  size_t charged = 0;  // bytes counted against the device's capacity

  Region() = default;
  Region(const void* p, size_t bytes, MemKind k, int dev, unsigned fl = 0, size_t charged_bytes = 0)
      : base(reinterpret_cast<uintptr_t>(p)), size(bytes), kind(k), device(dev), flags(fl),
        charged(charged_bytes) {}
};

// Process-wide registry of every range the simulated device knows.
class Memory {
 public:
  static Memory& get();

  // Anonymous, page-aligned, lazily backed host memory (MAP_NORESERVE).
  static void* map_anonymous(size_t bytes);
  static void unmap(void* p, size_t bytes);

  // Device capacity accounting. reserve() fails (returns false) past the
  // configured capacity.
  bool reserve(int device, size_t bytes);
  void unreserve(int device, size_t bytes);
  size_t used(int device);

  void add(const Region& r);
  bool remove(uintptr_t base, Region* out);
  // The region containing [p, p + bytes), if any.
  bool find(const void* p, size_t bytes, Region* out);
  // The region that starts exactly at `p` and is of kind `a` or `b`: what a
  // free must be given.
  bool find_start(const void* p, MemKind a, MemKind b, Region* out);

 private:
  std::mutex mu_;
  std::map<uintptr_t, Region> regions_;
  std::vector<size_t> used_;
};

// Classifies an address as the runtime's cudaPointerGetAttributes would.
enum class Where { kDevice, kPinned, kPageable };
Where classify(const void* p, size_t bytes, int* device = nullptr);

// ------------------------------------------------------------- devices ----

int current_device();
void set_current_device(int d);
bool valid_device(int d);

}  // namespace gpusim

// --------------------------------------------------------------- streams ---

// The opaque handle types of the CUDA headers, defined here. The runtime's
// cudaStream_t and the driver's CUstream are the same pointer type.
struct CUevent_st;
struct CUgraph_st;

namespace gpusim {

struct Dep {
  CUstream_st* stream;
  uint64_t seq;
};

// ------------------------------------------------------------- activity ---
//
// What an observer of the device (the simulated CUPTI, cupti_*.cc) learns of
// each op: its kind and metadata, given when it is enqueued, and its start
// and end, stamped by the stream's worker around `run` (steady clock, ns).
// The hot path pays one relaxed atomic load per op while no sink is
// registered: nothing is stamped and no record is made.

enum class OpKind : uint8_t { kOther, kKernel, kMemcpy, kMemset };

// A kernel's launch shape, as CUPTI's kernel record gives it: grid and
// block dimensions, registers per thread (0: not known to the simulation,
// e.g. a kernel launched through the CUDA APIs), static and dynamic shared
// memory per block.
struct KernelShape {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t registers = 0;
  uint32_t static_shared = 0;
  uint32_t dynamic_shared = 0;
  uint64_t blocks() const { return static_cast<uint64_t>(grid[0]) * grid[1] * grid[2]; }
};

// The device the simulation stands for: an H100 SXM (compute capability
// 9.0), as cudaGetDeviceProperties and cuDeviceGetAttribute answer.
inline constexpr int kSmCount = 132;

struct OpInfo {
  OpKind kind = OpKind::kOther;
  Where src = Where::kDevice;  // copies: where each side lives
  Where dst = Where::kDevice;
  bool peer = false;           // copies between two devices
  uint8_t memset_value = 0;
  uint32_t correlation = 0;    // given by enqueue when 0 (kinds other than kOther)
  // The host thread that enqueued the op (kernel thread id), given by
  // enqueue: CUPTI keeps activity buffers per such thread by default
  // (CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER; README.md, "CUPTI").
  uint32_t launcher = 0;
  uint64_t bytes = 0;          // copies and memsets
  uint64_t blocks = 0;         // kernels: blocks of the grid
  KernelShape shape;           // kernels: grid, block, registers, shared memory
  // Kernels: the name as CUPTI would give it (mangled), interned for the
  // process (intern_name); nullptr when no sink was registered at launch.
  const char* name = nullptr;
  // The GPU time the cost model gives the op, ns (0: not modeled).
  // Its activity record ends that long after it started: the simulated GPU
  // finishes a kernel in the modeled time, while the worker thread that
  // stands for it wakes up when a loaded host lets it (README, "CUPTI").
  uint64_t modeled_ns = 0;
};

// One completed op, as the worker saw it.
struct OpRecord {
  OpInfo info;
  int device = 0;
  uint32_t stream_id = 0;
  int64_t start_ns = 0;  // Clock (steady_clock, CLOCK_MONOTONIC) nanoseconds
  int64_t end_ns = 0;
};

// Called on the stream's worker thread after each op of a kind other than
// kOther finished and before its completion is visible to waiters (so a
// thread that synchronized with the op finds its record already given).
// Must be thread-safe and must not block on the device.
using ActivitySink = void (*)(const OpRecord& record);
// Registers `sink` (nullptr: none). One sink for the process.
void set_activity_sink(ActivitySink sink);
// True while a sink is registered: launches resolve kernel names only then.
bool activity_observed();
// Process-wide correlation ids, as CUPTI numbers API calls: from 1.
uint32_t next_correlation_id();
// A copy of `name` that lives as long as the process (same text, same pointer).
const char* intern_name(const char* name);
// Kernel names: a handle (host stub of __cudaRegisterFunction, a library's
// kernel, a module's CUfunction) is registered with its device name.
void register_kernel_name(const void* handle, const char* name);
// The same for a name that lives as long as the handle's module (the
// strings of a fat binary's registration): kept as a pointer, copied only
// when first launched while observed. Cheap enough for every kernel torch
// registers at load.
void register_static_kernel_name(const void* handle, const char* name);
// The registered name of `handle`, else its dynamic symbol (dladdr: the
// mangled name, as CUPTI reports), else "gpusim_kernel". Interned.
const char* kernel_name(const void* handle);
// For the stream workers (stream.cc): the steady clock in ns, and the
// handing of one finished op to the sink.
int64_t now_ns();
void emit_activity(const OpInfo& info, int device, uint32_t stream_id, int64_t start_ns, int64_t end_ns);

// One unit of GPU work. `run` executes on the stream's worker thread and
// blocks it for the modeled GPU time (see wait_until).
struct Op {
  std::function<void()> run;
  std::vector<Dep> deps;
  uint64_t seq = 0;
  OpInfo info;
};

// A captured op: replayed with its metadata by launch_graph.
struct GraphNode {
  std::function<void()> run;
  OpInfo info;
};

}  // namespace gpusim

struct CUstream_st {
  int device = 0;
  unsigned flags = 0;   // cudaStreamNonBlocking or cudaStreamDefault
  int priority = 0;
  bool legacy = false;      // the device's legacy default stream
  bool per_thread = false;  // a thread's per-thread default stream
  bool destroyed = false;
  uint32_t id = 0;          // CUPTI's streamId: unique in the process, from 1

  // Guarded by Core::mu.
  std::deque<gpusim::Op> queue;
  uint64_t enqueued = 0;   // seq of the last op enqueued
  uint64_t completed = 0;  // seq of the last op finished
  bool running = false;    // the worker is executing queue.front()

  // Stream capture (guarded by Core::mu).
  CUgraph_st* capture_graph = nullptr;
  cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;
  bool capture_invalidated = false;
  bool capture_into_own = false;  // capture_graph is the application's (BeginCaptureToGraph)

  std::thread worker;
};

struct CUevent_st {
  unsigned flags = 0;
  // Guarded by Core::mu. An event never recorded counts as complete.
  CUstream_st* stream = nullptr;
  uint64_t seq = 0;
  // Filled by the marker op when the GPU reaches the record.
  std::shared_ptr<std::atomic<int64_t>> stamp_ns;
  // An interprocess event's page shared with the other processes that
  // opened it (cudart_ipc.cc), or null.
  void* ipc = nullptr;
};

// A user object (cudaUserObjectCreate): its destructor runs when the last
// reference goes (cudaUserObjectRelease, or the graph or executable graph
// that held references being destroyed).
struct CUuserObject_st {
  void* ptr = nullptr;
  void (*destroy)(void*) = nullptr;
  std::atomic<long> refs{0};
};
// The references a graph (cudaGraphRetainUserObject) or an executable
// graph instantiated from it holds; released when it is destroyed.
using UserObjectRefs = std::vector<std::pair<CUuserObject_st*, unsigned>>;

// A graph captured from one stream: its ops, replayed in order on launch.
struct CUgraph_st {
  std::vector<gpusim::GraphNode> nodes;
  UserObjectRefs user_objects;
};
struct CUgraphExec_st {
  std::vector<gpusim::GraphNode> nodes;
  UserObjectRefs user_objects;
};

namespace gpusim {

// Stream bookkeeping shared by all streams and events.
struct Core {
  std::mutex mu;
  std::condition_variable cv;  // notified whenever any op completes
  std::vector<CUstream_st*> streams;  // every stream ever made; never freed
  std::vector<CUstream_st*> legacy;   // per device
  // Ops enqueued after an implicit device barrier (cudaMalloc,
  // cudaMallocHost) wait for everything enqueued before it.
  std::vector<Dep> barrier;
};
Core& core();

CUstream_st* legacy_stream(int device);
CUstream_st* per_thread_stream();
CUstream_st* new_stream(int device, unsigned flags, int priority);
void destroy_stream(CUstream_st* s);

// Resolves a handle as the runtime does: NULL is the legacy default stream,
// or the per-thread one for the _ptsz/_ptds entry points; cudaStreamLegacy
// and cudaStreamPerThread are themselves. Returns nullptr for a handle that
// is not a live stream.
CUstream_st* resolve(cudaStream_t s, bool per_thread_default);

// Enqueues `run` with the implicit dependencies of the stream's kind (the
// legacy default stream waits for blocking streams, blocking streams wait for
// the legacy stream) and of any pending device barrier. While the stream
// captures, the op is appended to the graph instead. Returns the op's seq (0
// when captured).
uint64_t enqueue(CUstream_st* s, std::function<void()> run,
                 std::vector<Dep> extra_deps = {});
// The same for an op an observer sees (a kernel, copy or memset: `info`).
uint64_t enqueue(CUstream_st* s, std::function<void()> run, OpInfo info,
                 std::vector<Dep> extra_deps = {});
bool is_capturing(CUstream_st* s);
// True when a blocking stream of `device` captures: using the legacy default
// stream then would join the capture implicitly, which CUDA refuses
// (cudaErrorStreamCaptureImplicit); such captures are invalidated.
bool legacy_use_conflicts(int device);
// True when any stream captures in global mode: "unsafe" calls (cudaMalloc,
// synchronizing calls) are then prohibited process-wide.
bool any_global_capture();
// Marks the capture of `s` as invalidated (an unsupported call was made).
void invalidate_capture(CUstream_st* s);

// Blocks until `s` has finished the op `seq` (and all before it).
void wait_op(CUstream_st* s, uint64_t seq);
// Blocks until `s` has finished every op enqueued so far.
void sync_stream(CUstream_st* s);
// Enqueues a marker (with the legacy stream's implicit dependencies) and
// waits for it: what the driver does before a pageable staging copy.
void drain_stream(CUstream_st* s);
bool stream_idle(CUstream_st* s);
void sync_device(int device);
// Held shared by every stream worker while it runs an op (the simulated
// device's accesses to device memory), exclusively by whoever must move
// device memory's bytes with no access in flight: the driver's first export
// of a VMM handle (driver_vmm_backing.h). Such a mover waits at most 2 s
// for it (kDeviceAccessWait), then moves anyway: an op may be waiting for
// the mover's own thread (a stream waiting on a value the host writes).
std::shared_timed_mutex& device_access_lock();
inline constexpr std::chrono::seconds kDeviceAccessWait{2};
// Counts a device synchronization made by cudaFree (gpusim_free_syncs).
void count_free_sync();
// The calls that give or take device memory, the runtime's host-side
// waits, and event records, counted for gpusim_calls() (every call, successful or not);
// kCountedCalls is their number.
enum class Counted { kCudaMalloc, kCudaFree, kCuMemCreate, kCuMemRelease, kCuMemMap, kCuMemUnmap,
                     kCuMemSetAccess, kCuMemAddressReserve, kCuMemAddressFree, kCudaDeviceSynchronize,
                     kCudaStreamSynchronize, kCudaEventSynchronize, kCudaEventRecord, kCountedCalls };
void count_call(Counted c);
// Implicit barrier: later work on any stream of `device` waits for all work
// enqueued before.
void device_barrier(int device);

void record_event(CUevent_st* e, CUstream_st* s);
bool event_done(CUevent_st* e);
void sync_event(CUevent_st* e);
void wait_event(CUstream_st* s, CUevent_st* e);

// `into`: the application's graph (cudaStreamBeginCaptureToGraph,
// cuStreamBeginCaptureToGraph), else a new one.
cudaError_t begin_capture(CUstream_st* s, cudaStreamCaptureMode mode, CUgraph_st* into = nullptr);
cudaError_t end_capture(CUstream_st* s, CUgraph_st** graph);
void launch_graph(CUgraphExec_st* exec, CUstream_st* s);
// Drops `count` references of `o`; the last one runs its destructor.
void release_user_object(CUuserObject_st* o, unsigned count);

// A kernel launch: `blocks` blocks of nothing, on `s`, for the modeled time
// (Config::kernel_us, kernel_per_block_us). Charges the host's launch cost.
// While `s` captures, it becomes a kernel node of the graph.
// `func` names it (kernel_name), looked up only while observed.
void launch_kernel(CUstream_st* s, uint64_t blocks, const void* func);
// The same with the launch's whole shape (grid, block, shared memory).
void launch_kernel(CUstream_st* s, const KernelShape& shape, const void* func);
// A math-library kernel of `shape` that takes `us` of GPU time (the
// simulated cuBLAS's tiled GEMMs: cublas_internal.h). Like launch_kernel;
// `name` is a literal.
void launch_timed(CUstream_st* s, const KernelShape& shape, double us, const char* name);
// A math-library kernel (the simulated cuBLAS) of `flops` floating-point
// operations on `s`: kernel_us + flops at gemm_tflops. Like launch_kernel;
// `name` is a literal (a cuBLAS-like kernel name).
void launch_flops(CUstream_st* s, double flops, const char* name);

}  // namespace gpusim

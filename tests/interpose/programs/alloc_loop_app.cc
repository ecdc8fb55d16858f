// Plain programs that allocate and free large device buffers over and over,
// for the VMM allocator's end-to-end test (alloc_loop_test.py) and its
// benchmark row (bench/alloc_loop.py). Real runtime API calls only; linked
// against the simulated runtime, run natively and with libgpuslack.so
// preloaded (allocator:vmm).
//
// Usage: alloc_loop_app MODE [ARGS]
//   loop [SIZE_MIB [BUFFERS [ITERATIONS]]]   (default 160 2 200)
//            each iteration: BUFFERS cudaMallocs of SIZE_MIB, a cudaMemset
//            of each, cudaDeviceSynchronize, then the cudaFrees; checks one
//            byte of every buffer came back as written
//   p2p [MAX_MIB [REPS]]                     (default 64 10)
//            a peer-to-peer bandwidth test in the style of NVIDIA's
//            p2pBandwidthLatencyTest on devices 0 and 1: peer access enabled
//            both ways; for each size from 4 KiB doubling up to MAX_MIB,
//            two phases as the sample runs its matrices: each device
//            allocates a source and a destination buffer, REPS
//            cudaMemcpyPeerAsync one way (0->1, 1->0) or both ways at once
//            on non-blocking streams, timed with events, and frees them
//            (so each phase allocates what the last one just freed).
//            Checks the copied bytes arrived. Prints one "size_kib <n> uni_gbps <x> bidi_gbps <y>"
//            line per size.
// Both end with one line:
//   malloc_ms <ms in cudaMalloc> free_ms <ms in cudaFree> total_ms <ms>
// where total_ms is the whole mode, wall clock. Exits 0 after the work, 1 on
// a CUDA error or a wrong byte, 2 on bad arguments.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#define CHECK(x)                                                                 \
  do {                                                                           \
    cudaError_t e_ = (x);                                                        \
    if (e_ != cudaSuccess) {                                                     \
      std::fprintf(stderr, "alloc_loop_app: %s: %s\n", #x, cudaGetErrorName(e_)); \
      std::exit(1);                                                              \
    }                                                                            \
  } while (0)

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// cudaMalloc and cudaFree, each timed on the calling thread.
struct TimedCalls {
  double malloc_ms = 0, free_ms = 0;

  void* malloc(size_t bytes) {
    void* p = nullptr;
    auto t = Clock::now();
    cudaError_t e = cudaMalloc(&p, bytes);
    malloc_ms += ms_since(t);
    if (e != cudaSuccess) {
      std::fprintf(stderr, "alloc_loop_app: cudaMalloc(%zu): %s\n", bytes, cudaGetErrorName(e));
      std::exit(1);
    }
    return p;
  }

  void free(void* p) {
    auto t = Clock::now();
    cudaError_t e = cudaFree(p);
    free_ms += ms_since(t);
    CHECK(e);
  }
};

// The byte at `offset` of device memory `p`.
unsigned char byte_at(const void* p, size_t offset) {
  unsigned char b = 0;
  CHECK(cudaMemcpy(&b, static_cast<const char*>(p) + offset, 1, cudaMemcpyDeviceToHost));
  return b;
}

bool holds(const void* p, size_t bytes, unsigned char value) {
  return byte_at(p, 0) == value && byte_at(p, bytes / 2) == value && byte_at(p, bytes - 1) == value;
}

int loop(size_t bytes, int buffers, int iterations) {
  TimedCalls calls;
  std::vector<void*> p(buffers);
  auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) {
    for (auto& b : p) b = calls.malloc(bytes);
    for (int k = 0; k < buffers; ++k) CHECK(cudaMemset(p[k], (i + k + 1) & 0xff, bytes));
    CHECK(cudaDeviceSynchronize());
    // First and last iteration only: a check of every iteration would
    // put three copies per buffer into what is timed.
    if (i == 0 || i == iterations - 1)
      for (int k = 0; k < buffers; ++k)
        if (!holds(p[k], bytes, (i + k + 1) & 0xff)) {
          std::fprintf(stderr, "alloc_loop_app: iteration %d buffer %d lost its memset\n", i, k);
          return 1;
        }
    for (void* b : p) calls.free(b);
  }
  std::printf("malloc_ms %.3f free_ms %.3f total_ms %.3f\n", calls.malloc_ms, calls.free_ms, ms_since(start));
  return 0;
}

constexpr int kDevices = 2;

// One phase of the peer test at one size, as p2pBandwidthLatencyTest runs
// each of its matrices: each device allocates a source and a destination
// buffer and clears them; REPS peer copies one way (0->1 then 1->0) or both
// ways at once, timed with events; the buffers are freed. The bandwidth in
// GB/s (one way: the mean of the two directions; both ways: their sum).
double p2p_phase(TimedCalls& calls, size_t bytes, int reps, bool both_ways, const cudaStream_t* stream,
                 const cudaEvent_t* begin, const cudaEvent_t* end) {
  void *src[kDevices], *dst[kDevices];
  for (int d = 0; d < kDevices; ++d) {
    CHECK(cudaSetDevice(d));
    src[d] = calls.malloc(bytes);
    dst[d] = calls.malloc(bytes);
    CHECK(cudaMemset(src[d], d + 1, bytes));
    CHECK(cudaMemset(dst[d], 0, bytes));
  }
  for (int d = 0; d < kDevices; ++d) {
    CHECK(cudaSetDevice(d));
    CHECK(cudaDeviceSynchronize());
  }
  double gbps = 0;
  if (!both_ways) {
    // Device d's source into the peer's destination, on d's stream.
    for (int d = 0; d < kDevices; ++d) {
      CHECK(cudaSetDevice(d));
      CHECK(cudaEventRecord(begin[d], stream[d]));
      for (int r = 0; r < reps; ++r) CHECK(cudaMemcpyPeerAsync(dst[1 - d], 1 - d, src[d], d, bytes, stream[d]));
      CHECK(cudaEventRecord(end[d], stream[d]));
      CHECK(cudaEventSynchronize(end[d]));
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, begin[d], end[d]));
      gbps += ms > 0 ? double(bytes) * reps / (ms * 1e6) / kDevices : 0;
    }
  } else {
    // Device 1's stream starts when device 0's does; device 0's ends
    // when both have.
    CHECK(cudaSetDevice(0));
    CHECK(cudaEventRecord(begin[0], stream[0]));
    CHECK(cudaStreamWaitEvent(stream[1], begin[0], 0));
    for (int r = 0; r < reps; ++r)
      for (int d = 0; d < kDevices; ++d) {
        CHECK(cudaSetDevice(d));
        CHECK(cudaMemcpyPeerAsync(dst[1 - d], 1 - d, src[d], d, bytes, stream[d]));
      }
    CHECK(cudaSetDevice(1));
    CHECK(cudaEventRecord(end[1], stream[1]));
    CHECK(cudaSetDevice(0));
    CHECK(cudaStreamWaitEvent(stream[0], end[1], 0));
    CHECK(cudaEventRecord(end[0], stream[0]));
    CHECK(cudaEventSynchronize(end[0]));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, begin[0], end[0]));
    gbps = ms > 0 ? double(bytes) * reps * kDevices / (ms * 1e6) : 0;
  }
  for (int d = 0; d < kDevices; ++d)
    if (!holds(dst[1 - d], bytes, static_cast<unsigned char>(d + 1))) {
      std::fprintf(stderr, "alloc_loop_app: %zu bytes from device %d did not arrive\n", bytes, d);
      std::exit(1);
    }
  for (int d = 0; d < kDevices; ++d) {
    CHECK(cudaSetDevice(d));
    calls.free(src[d]);
    calls.free(dst[d]);
  }
  return gbps;
}

int p2p(size_t max_bytes, int reps) {
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  if (count < kDevices) {
    std::fprintf(stderr, "alloc_loop_app: p2p needs two devices, found %d (GPUSIM_DEVICE_COUNT)\n", count);
    return 1;
  }
  TimedCalls calls;
  auto start = Clock::now();
  cudaStream_t stream[kDevices];
  cudaEvent_t begin[kDevices], end[kDevices];
  for (int d = 0; d < kDevices; ++d) {
    CHECK(cudaSetDevice(d));
    int can = 0;
    CHECK(cudaDeviceCanAccessPeer(&can, d, 1 - d));
    if (!can) {
      std::fprintf(stderr, "alloc_loop_app: device %d cannot access device %d\n", d, 1 - d);
      return 1;
    }
    CHECK(cudaDeviceEnablePeerAccess(1 - d, 0));
    CHECK(cudaStreamCreateWithFlags(&stream[d], cudaStreamNonBlocking));
    CHECK(cudaEventCreate(&begin[d]));
    CHECK(cudaEventCreate(&end[d]));
  }
  for (size_t bytes = 4 << 10; bytes <= max_bytes; bytes *= 2) {
    double uni = p2p_phase(calls, bytes, reps, false, stream, begin, end);
    double bidi = p2p_phase(calls, bytes, reps, true, stream, begin, end);
    std::printf("size_kib %zu uni_gbps %.2f bidi_gbps %.2f\n", bytes >> 10, uni, bidi);
  }
  for (int d = 0; d < kDevices; ++d) {
    CHECK(cudaSetDevice(d));
    CHECK(cudaStreamDestroy(stream[d]));
    CHECK(cudaEventDestroy(begin[d]));
    CHECK(cudaEventDestroy(end[d]));
  }
  std::printf("malloc_ms %.3f free_ms %.3f total_ms %.3f\n", calls.malloc_ms, calls.free_ms, ms_since(start));
  return 0;
}

// The positional argument `i` as a positive integer, else `fallback`;
// exits 2 when it is there but not a positive integer.
long arg(int argc, char** argv, int i, long fallback) {
  if (i >= argc) return fallback;
  char* end = nullptr;
  long v = std::strtol(argv[i], &end, 10);
  if (*end || v <= 0) {
    std::fprintf(stderr, "alloc_loop_app: argument %d: not a positive integer: %s\n", i, argv[i]);
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::string_view mode = argc > 1 ? argv[1] : "";
  if (mode == "loop")
    return loop(size_t(arg(argc, argv, 2, 160)) << 20, int(arg(argc, argv, 3, 2)), int(arg(argc, argv, 4, 200)));
  if (mode == "p2p") return p2p(size_t(arg(argc, argv, 2, 64)) << 20, int(arg(argc, argv, 3, 10)));
  std::fprintf(stderr, "usage: alloc_loop_app loop [SIZE_MIB [BUFFERS [ITERATIONS]]] | p2p [MAX_MIB [REPS]]\n");
  return 2;
}

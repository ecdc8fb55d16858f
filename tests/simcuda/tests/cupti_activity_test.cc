// The simulated CUPTI's Activity API (README.md, "CUPTI"): records made from
// the simulated device's own op times, the buffers they travel in, flushing,
// timestamps and dropped records. Run with kernel_us = 2000 and 1 us per
// block, so a kernel's modeled time is large against scheduling noise.
#include <cublas_v2.h>
#include <dlfcn.h>
#include <nccl.h>

#include <ctime>
#include <thread>
#include <vector>

#include "cupti_test_util.h"
#include "sim.h"

using namespace cuptitest;

namespace {

constexpr double kKernelUs = 2000, kPerBlockUs = 1;
// A record may last longer than modeled (a loaded machine), never shorter.
constexpr uint64_t kSlackNs = 25'000'000;

using C = Collector<0>;

void start_legacy(CUpti_ActivityKind kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
  ASSERT_EQ(CUPTI_SUCCESS, C::register_legacy());
  ASSERT_EQ(CUPTI_SUCCESS, cuptiActivityEnable(kind));
}

uint64_t realtime_ns() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + t.tv_nsec;
}

TEST(CuptiActivity, KernelRecordsCarryTheModeledTimeAndTheMangledName) {
  start_legacy();
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  for (unsigned blocks : {1000u, 10u, 500u}) CUDA_OK(launch(s, blocks));
  CUDA_OK(cudaStreamSynchronize(s));
  CUPTI_OK(cuptiActivityFlushAll(0));
  uint32_t stream_id = 0;
  CUPTI_OK(cuptiGetStreamId(nullptr, s, &stream_id));
  std::lock_guard<std::mutex> l(C::mu);
  ASSERT_EQ(3u, C::kernels.size());
  EXPECT_EQ(0, C::bad_records);
  const unsigned blocks[] = {1000, 10, 500};
  for (size_t i = 0; i < 3; ++i) {
    const CUpti_ActivityKernel11& k = C::kernels[i];
    EXPECT_EQ(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, k.kind);
    uint64_t modeled = static_cast<uint64_t>((kKernelUs + kPerBlockUs * blocks[i]) * 1000);
    EXPECT_GE(k.end - k.start, modeled) << i;
    EXPECT_LT(k.end - k.start, modeled + kSlackNs) << i;
    EXPECT_EQ(k.end, k.completed);
    EXPECT_STREQ(kTestKernelName, k.name);
    EXPECT_EQ(static_cast<int32_t>(blocks[i]), k.gridX);
    EXPECT_EQ(0u, k.deviceId);
    EXPECT_EQ(1u, k.contextId);
    EXPECT_EQ(stream_id, k.streamId);
    if (i > 0) {
      EXPECT_GT(k.correlationId, C::kernels[i - 1].correlationId);
      EXPECT_GE(k.start, C::kernels[i - 1].end);  // one stream: in order, no overlap
    }
  }
  cudaStreamDestroy(s);
}

TEST(CuptiActivity, KernelKindFollowsWhatWasEnabled) {
  start_legacy(CUPTI_ACTIVITY_KIND_KERNEL);
  CUDA_OK(launch(nullptr, 1));
  CUDA_OK(cudaDeviceSynchronize());
  CUPTI_OK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  std::lock_guard<std::mutex> l(C::mu);
  ASSERT_EQ(1u, C::kernels.size());
  EXPECT_EQ(CUPTI_ACTIVITY_KIND_KERNEL, C::kernels[0].kind);
}

TEST(CuptiActivity, DriverLaunchesCarryTheFunctionsName) {
  start_legacy();
  ASSERT_EQ(CUDA_SUCCESS, cuInit(0));
  // A driver-only thread has no context until it binds one.
  CUcontext ctx;
  ASSERT_EQ(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&ctx, 0));
  ASSERT_EQ(CUDA_SUCCESS, cuCtxSetCurrent(ctx));
  CUmodule m;
  CUfunction f;
  static const char image[] = "cubin";
  ASSERT_EQ(CUDA_SUCCESS, cuModuleLoadData(&m, image));
  ASSERT_EQ(CUDA_SUCCESS, cuModuleGetFunction(&f, m, "_Z7my_funcv"));
  ASSERT_EQ(CUDA_SUCCESS, cuLaunchKernel(f, 4, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  ASSERT_EQ(CUDA_SUCCESS, cuModuleUnload(m));  // the record's name outlives the module
  CUPTI_OK(cuptiActivityFlushAll(0));
  std::lock_guard<std::mutex> l(C::mu);
  ASSERT_EQ(1u, C::kernels.size());
  EXPECT_STREQ("_Z7my_funcv", C::kernels[0].name);
  // The launch's shape, as given (registers: unknown to the simulation).
  EXPECT_EQ(4, C::kernels[0].gridX);
  EXPECT_EQ(1, C::kernels[0].gridY);
  EXPECT_EQ(32, C::kernels[0].blockX);
  EXPECT_EQ(1, C::kernels[0].blockZ);
  EXPECT_EQ(0, C::kernels[0].registersPerThread);
}

// Note [GEMM tiles] (cublas_internal.h): a GEMM is a grid of output tiles,
// timed by waves. 3072 x 2048 takes 256x128 tiles: 12 x 16 = 192 blocks of
// one per SM, two waves on 132 SMs; 200 x 100 holds no tile larger than
// 128x64: 2 x 2.
TEST(CuptiActivity, GemmsAreGridsOfTilesTimedByWaves) {
  start_legacy();
  cublasHandle_t h;
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasCreate(&h));
  float one = 1;
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 3072, 2048, 1024, &one, nullptr,
                                                CUDA_R_16BF, 1024, nullptr, CUDA_R_16BF, 1024, &one, nullptr,
                                                CUDA_R_16BF, 3072, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS,
            cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 200, 100, 64, &one, nullptr, 200, nullptr, 64, &one, nullptr, 200));
  CUDA_OK(cudaDeviceSynchronize());
  CUPTI_OK(cuptiActivityFlushAll(0));
  {
    std::lock_guard<std::mutex> l(C::mu);
    ASSERT_EQ(2u, C::kernels.size());
    const CUpti_ActivityKernel11& big = C::kernels[0];
    EXPECT_NE(nullptr, std::strstr(big.name, "tilesize256x128x64"));
    EXPECT_EQ(12, big.gridX);
    EXPECT_EQ(16, big.gridY);
    EXPECT_EQ(1, big.gridZ);
    EXPECT_EQ(384, big.blockX);
    EXPECT_EQ(168, big.registersPerThread);
    EXPECT_EQ(4 * (256 + 128) * 64 * 2, big.dynamicSharedMemory);
    // Two waves of one tile each: 2 x 2 x 256 x 128 x 1024 flops at a
    // 132nd of gemm_tflops (50), plus kernel_us.
    const double wave_us = 2.0 * 256 * 128 * 1024 / (50e6 / 132);
    const uint64_t modeled = static_cast<uint64_t>((kKernelUs + 2 * wave_us) * 1000);
    EXPECT_GE(big.end - big.start, modeled - 1000);
    EXPECT_LT(big.end - big.start, modeled + kSlackNs);
    const CUpti_ActivityKernel11& small = C::kernels[1];
    EXPECT_NE(nullptr, std::strstr(small.name, "tilesize128x64x64"));
    EXPECT_EQ(2, small.gridX);
    EXPECT_EQ(2, small.gridY);
    EXPECT_EQ(128, small.blockX);
  }
  cublasDestroy(h);
}

TEST(CuptiActivity, LibraryKernelsAreNamedLikeTheirs) {
  start_legacy();
  // NCCL: one rank, so the collective runs alone.
  ncclComm_t comm;
  int dev = 0;
  ASSERT_EQ(ncclSuccess, ncclCommInitAll(&comm, 1, &dev));
  float* buf;
  CUDA_OK(cudaMalloc(&buf, 1024 * sizeof(float)));
  ASSERT_EQ(ncclSuccess, ncclAllReduce(buf, buf, 1024, ncclFloat32, ncclSum, comm, nullptr));
  ASSERT_EQ(ncclSuccess, ncclAllGather(buf, buf, 256, ncclBfloat16, comm, nullptr));
  // cuBLAS.
  cublasHandle_t h;
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasCreate(&h));
  float one = 1;
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS,
            cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 16, 16, 16, &one, buf, 16, buf, 16, &one, buf, 16));
  CUDA_OK(cudaDeviceSynchronize());
  CUPTI_OK(cuptiActivityFlushAll(0));
  {
    std::lock_guard<std::mutex> l(C::mu);
    ASSERT_EQ(3u, C::kernels.size());
    EXPECT_STREQ("_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE",
                 C::kernels[0].name);
    EXPECT_STREQ("_Z31ncclDevKernel_AllGather_RING_LL24ncclDevKernelArgsStorageILm4096EE", C::kernels[1].name);
    EXPECT_NE(nullptr, std::strstr(C::kernels[2].name, "gemm"));
  }
  cublasDestroy(h);
  ncclCommDestroy(comm);
  cudaFree(buf);
}

TEST(CuptiActivity, CopiesAndMemsetsAreRecordedWithTheirKinds) {
  ASSERT_EQ(CUPTI_SUCCESS, C::register_legacy());
  CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY));
  CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET));
  constexpr size_t n = 4 << 20;
  void *dev, *pinned;
  CUDA_OK(cudaMalloc(&dev, n));
  CUDA_OK(cudaMallocHost(&pinned, n));
  std::vector<char> pageable(n, 1);
  CUDA_OK(cudaMemcpyAsync(dev, pinned, n, cudaMemcpyHostToDevice, nullptr));
  CUDA_OK(cudaMemcpyAsync(pinned, dev, n / 2, cudaMemcpyDeviceToHost, nullptr));
  CUDA_OK(cudaMemcpy(dev, pageable.data(), n, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemsetAsync(dev, 0x5a, n, nullptr));
  CUDA_OK(launch(nullptr, 1));  // not enabled: no record
  CUDA_OK(cudaDeviceSynchronize());
  CUPTI_OK(cuptiActivityFlushAll(0));
  std::lock_guard<std::mutex> l(C::mu);
  EXPECT_TRUE(C::kernels.empty());
  ASSERT_EQ(3u, C::memcpys.size());
  const auto& h2d = C::memcpys[0];
  EXPECT_EQ(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, h2d.copyKind);
  EXPECT_EQ(CUPTI_ACTIVITY_MEMORY_KIND_PINNED, h2d.srcKind);
  EXPECT_EQ(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, h2d.dstKind);
  EXPECT_EQ(n, h2d.bytes);
  // Pinned at 50 GB/s plus 2 us of latency, as the cost model says.
  uint64_t modeled = static_cast<uint64_t>((2 + n / 50e3) * 1000);
  EXPECT_GE(h2d.end - h2d.start, modeled);
  EXPECT_LT(h2d.end - h2d.start, modeled + kSlackNs);
  EXPECT_EQ(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, C::memcpys[1].copyKind);
  EXPECT_EQ(CUPTI_ACTIVITY_MEMORY_KIND_PINNED, C::memcpys[1].dstKind);
  EXPECT_EQ(n / 2, C::memcpys[1].bytes);
  EXPECT_EQ(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, C::memcpys[2].copyKind);
  EXPECT_EQ(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, C::memcpys[2].srcKind);
  EXPECT_LT(C::memcpys[0].correlationId, C::memcpys[1].correlationId);
  ASSERT_EQ(1u, C::memsets.size());
  EXPECT_EQ(CUPTI_ACTIVITY_KIND_MEMSET, C::memsets[0].kind);
  EXPECT_EQ(n, C::memsets[0].bytes);
  EXPECT_EQ(0x5au, C::memsets[0].value);
  EXPECT_EQ(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, C::memsets[0].memoryKind);
  EXPECT_GE(C::memsets[0].start, C::memcpys[2].end);
  cudaFree(dev);
  cudaFreeHost(pinned);
}

TEST(CuptiActivity, TimestampsAreCuptisTimebaseNotTheMonotonicClock) {
  start_legacy();
  uint64_t t0 = 0, t1 = 0;
  CUPTI_OK(cuptiGetTimestamp(&t0));
  CUDA_OK(launch(nullptr, 1));
  CUDA_OK(cudaDeviceSynchronize());
  CUPTI_OK(cuptiGetTimestamp(&t1));
  CUPTI_OK(cuptiActivityFlushAll(0));
  std::lock_guard<std::mutex> l(C::mu);
  ASSERT_EQ(1u, C::kernels.size());
  EXPECT_LE(t0, C::kernels[0].start);
  EXPECT_LE(C::kernels[0].end, t1);
  // CLOCK_REALTIME's epoch, as CUPTI on Linux: far from CLOCK_MONOTONIC's.
  uint64_t rt = realtime_ns();
  EXPECT_LT(rt > t1 ? rt - t1 : t1 - rt, 1'000'000'000ull);
  uint64_t mono = static_cast<uint64_t>(gpusim::now_ns());
  EXPECT_GT(t1 - mono, 1'000'000'000ull);
}

uint64_t CUPTIAPI shifted_clock() { return static_cast<uint64_t>(gpusim::now_ns()) + 5'000'000'000'000ull; }

TEST(CuptiActivity, ATimestampCallbackReplacesTheTimebase) {
  CUPTI_OK(cuptiActivityRegisterTimestampCallback(shifted_clock));
  start_legacy();
  uint64_t t0 = 0, t1 = 0;
  CUPTI_OK(cuptiGetTimestamp(&t0));
  CUDA_OK(launch(nullptr, 1));
  CUDA_OK(cudaDeviceSynchronize());
  CUPTI_OK(cuptiGetTimestamp(&t1));
  CUPTI_OK(cuptiActivityFlushAll(0));
  std::lock_guard<std::mutex> l(C::mu);
  ASSERT_EQ(1u, C::kernels.size());
  EXPECT_LE(t0, C::kernels[0].start);
  EXPECT_LE(C::kernels[0].end, t1);
  EXPECT_GE(C::kernels[0].end - C::kernels[0].start, static_cast<uint64_t>((kKernelUs + kPerBlockUs) * 1000));
}

TEST(CuptiActivity, FlushAllCompletesOnTheCallingThread) {
  start_legacy();
  CUDA_OK(launch(nullptr, 1));
  CUDA_OK(cudaDeviceSynchronize());
  {
    std::lock_guard<std::mutex> l(C::mu);
    EXPECT_EQ(0, C::buffers);  // a partial buffer waits for a flush
  }
  CUPTI_OK(cuptiActivityFlushAll(0));
  std::lock_guard<std::mutex> l(C::mu);
  ASSERT_EQ(1, C::buffers);
  EXPECT_EQ(tid(), C::completing_threads[0]);
  EXPECT_EQ(1u, C::kernels.size());
}

TEST(CuptiActivity, FullBuffersCompleteOnCuptisOwnThread) {
  C::max_records = 2;  // each buffer completes after two records
  start_legacy();
  for (int i = 0; i < 7; ++i) CUDA_OK(launch(nullptr, 1));
  CUDA_OK(cudaDeviceSynchronize());
  ASSERT_TRUE(eventually([] {
    std::lock_guard<std::mutex> l(C::mu);
    return C::buffers >= 3;
  }));
  {
    std::lock_guard<std::mutex> l(C::mu);
    for (uint64_t t : C::completing_threads) EXPECT_NE(tid(), t);
    EXPECT_EQ(6u, C::kernels.size());
  }
  CUPTI_OK(cuptiActivityFlushAll(0));  // the seventh, alone in its buffer
  std::lock_guard<std::mutex> l(C::mu);
  EXPECT_EQ(4, C::buffers);
  EXPECT_EQ(7u, C::kernels.size());
  EXPECT_EQ(tid(), C::completing_threads.back());
}

TEST(CuptiActivity, ABufferTooSmallForMoreCompletesAndAnotherIsRequested) {
  C::buffer_bytes = 2 * sizeof(CUpti_ActivityKernel11) + 8;
  start_legacy();
  for (int i = 0; i < 5; ++i) CUDA_OK(launch(nullptr, 1));
  CUDA_OK(cudaDeviceSynchronize());
  CUPTI_OK(cuptiActivityFlushAll(0));
  size_t dropped = 1;
  CUPTI_OK(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped));
  EXPECT_EQ(0u, dropped);
  std::lock_guard<std::mutex> l(C::mu);
  EXPECT_EQ(5u, C::kernels.size());
  EXPECT_EQ(3, C::buffers);
}

TEST(CuptiActivity, DeclinedBuffersDropRecordsAndCountThem) {
  C::buffer_bytes = 0;
  start_legacy();
  for (int i = 0; i < 3; ++i) CUDA_OK(launch(nullptr, 1));
  CUDA_OK(cudaDeviceSynchronize());
  CUPTI_OK(cuptiActivityFlushAll(0));
  size_t dropped = 0;
  CUPTI_OK(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped));
  EXPECT_EQ(3u, dropped);
  CUPTI_OK(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped));
  EXPECT_EQ(0u, dropped);  // reset by reading
  C::buffer_bytes = 1 << 20;
  CUDA_OK(launch(nullptr, 1));
  CUDA_OK(cudaDeviceSynchronize());
  CUPTI_OK(cuptiActivityFlushAll(0));
  EXPECT_EQ(1u, C::kernel_count());
}

TEST(CuptiActivity, ConcurrentLaunchesAndFlushesLoseNothing) {
  C::max_records = 3;  // buffers complete on the worker while others flush
  start_legacy();
  constexpr int kThreads = 4, kLaunches = 30;
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      cudaStream_t s;
      EXPECT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      for (int i = 0; i < kLaunches; ++i) EXPECT_EQ(cudaSuccess, launch(s, 1));
      EXPECT_EQ(cudaSuccess, cudaStreamSynchronize(s));
      cudaStreamDestroy(s);
      done.fetch_add(1);
    });
  while (done.load() < kThreads) EXPECT_EQ(CUPTI_SUCCESS, cuptiActivityFlushAll(0));
  for (auto& t : threads) t.join();
  CUPTI_OK(cuptiActivityFlushAll(0));
  size_t dropped = 1;
  CUPTI_OK(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped));
  EXPECT_EQ(0u, dropped);
  std::lock_guard<std::mutex> l(C::mu);
  EXPECT_EQ(static_cast<size_t>(kThreads * kLaunches), C::kernels.size());
  std::set<uint32_t> ids;
  for (const auto& k : C::kernels) ids.insert(k.correlationId);
  EXPECT_EQ(C::kernels.size(), ids.size());
  EXPECT_EQ(0, C::bad_records);
}

TEST(CuptiActivity, ReplacedCallbacksGetTheirOwnBuffersBack) {
  using Later = Collector<3>;
  start_legacy();
  CUDA_OK(launch(nullptr, 1));
  CUDA_OK(cudaDeviceSynchronize());
  // A second tool takes over the process-wide registration.
  CUPTI_OK(Later::register_legacy());
  {
    std::lock_guard<std::mutex> l(C::mu);
    EXPECT_EQ(1, C::buffers);
    EXPECT_EQ(1u, C::kernels.size());
    EXPECT_EQ(tid(), C::completing_threads[0]);
  }
  for (int i = 0; i < 2; ++i) CUDA_OK(launch(nullptr, 1));
  CUDA_OK(cudaDeviceSynchronize());
  CUPTI_OK(cuptiActivityFlushAll(0));
  EXPECT_EQ(1u, C::kernel_count());
  EXPECT_EQ(2u, Later::kernel_count());
}

// CUPTI fills one buffer per thread that launches work by default
// (CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER is 1: cupti_activity.h
// 13.2); set to 0, every thread's records share one.
TEST(CuptiActivity, EachLaunchingThreadFillsItsOwnBufferByDefault) {
  start_legacy();
  uint8_t per_thread = 0;
  size_t size = sizeof(per_thread);
  CUPTI_OK(cuptiActivityGetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &size, &per_thread));
  EXPECT_EQ(1, per_thread);
  auto launch_from_threads = [] {
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i)
      threads.emplace_back([] {
        cudaStream_t s;
        if (cudaStreamCreate(&s) != cudaSuccess) return;
        launch(s, 1);
        cudaStreamSynchronize(s);
        cudaStreamDestroy(s);
      });
    for (std::thread& t : threads) t.join();
  };
  launch_from_threads();
  CUPTI_OK(cuptiActivityFlushAll(0));
  {
    std::lock_guard<std::mutex> l(C::mu);
    EXPECT_EQ(4u, C::kernels.size());
    EXPECT_EQ(4, C::buffers);  // one per launching thread
  }
  per_thread = 0;
  CUPTI_OK(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &size, &per_thread));
  launch_from_threads();
  CUPTI_OK(cuptiActivityFlushAll(0));
  {
    std::lock_guard<std::mutex> l(C::mu);
    EXPECT_EQ(8u, C::kernels.size());
    EXPECT_EQ(5, C::buffers);  // one for all four
  }
  per_thread = 1;
  CUPTI_OK(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &size, &per_thread));
}

TEST(CuptiActivity, GetNextRecordEndsAndRefusesGarbage) {
  alignas(8) uint8_t buf[256] = {};
  CUpti_Activity* r = nullptr;
  EXPECT_EQ(CUPTI_ERROR_MAX_LIMIT_REACHED, cuptiActivityGetNextRecord(buf, 0, &r));
  EXPECT_EQ(CUPTI_ERROR_INVALID_PARAMETER, cuptiActivityGetNextRecord(nullptr, 16, &r));
  auto* garbage = reinterpret_cast<CUpti_Activity*>(buf);
  garbage->kind = static_cast<CUpti_ActivityKind>(12345);
  r = nullptr;
  EXPECT_EQ(CUPTI_ERROR_INVALID_KIND, cuptiActivityGetNextRecord(buf, sizeof(buf), &r));
  // A kernel record cut short is incomplete.
  garbage->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  r = nullptr;
  EXPECT_EQ(CUPTI_ERROR_INVALID_KIND, cuptiActivityGetNextRecord(buf, 64, &r));
}

TEST(CuptiActivity, FlushWithoutCallbacksIsAnInvalidOperation) {
  EXPECT_EQ(CUPTI_ERROR_INVALID_OPERATION, cuptiActivityFlushAll(0));
  EXPECT_EQ(CUPTI_ERROR_INVALID_PARAMETER, cuptiActivityRegisterCallbacks(nullptr, nullptr));
  EXPECT_EQ(CUPTI_ERROR_INVALID_KIND, cuptiActivityEnable(CUPTI_ACTIVITY_KIND_INVALID));
}

TEST(CuptiActivity, TheDeviceIsObservedOnlyWhileAKindIsEnabled) {
  EXPECT_FALSE(gpusim::activity_observed());
  start_legacy();
  EXPECT_TRUE(gpusim::activity_observed());
  // Kinds the model never produces are accepted, and produce nothing.
  CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME));
  CUPTI_OK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  EXPECT_FALSE(gpusim::activity_observed());
  CUDA_OK(launch(nullptr, 1));
  CUDA_OK(cudaDeviceSynchronize());
  cuptiActivityFlushAll(0);
  EXPECT_EQ(0u, C::kernel_count());
}

TEST(CuptiActivity, GraphReplaysShareTheLaunchsCorrelationId) {
  start_legacy();
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CUDA_OK(launch(s, 1));
  CUDA_OK(launch(s, 2));
  cudaGraph_t g;
  CUDA_OK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
  CUDA_OK(cudaGraphLaunch(exec, s));
  CUDA_OK(cudaGraphLaunch(exec, s));
  CUDA_OK(cudaStreamSynchronize(s));
  CUPTI_OK(cuptiActivityFlushAll(0));
  {
    std::lock_guard<std::mutex> l(C::mu);
    ASSERT_EQ(4u, C::kernels.size());
    EXPECT_EQ(C::kernels[0].correlationId, C::kernels[1].correlationId);
    EXPECT_EQ(C::kernels[2].correlationId, C::kernels[3].correlationId);
    EXPECT_NE(C::kernels[0].correlationId, C::kernels[2].correlationId);
    EXPECT_EQ(2, C::kernels[3].gridX);
    EXPECT_STREQ(kTestKernelName, C::kernels[3].name);
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
}

TEST(CuptiActivity, ExternalCorrelationIdsAreAPerThreadStack) {
  uint64_t id = 0;
  EXPECT_EQ(CUPTI_ERROR_QUEUE_EMPTY, cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN, &id));
  CUPTI_OK(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN, 7));
  CUPTI_OK(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN, 9));
  CUPTI_OK(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN, &id));
  EXPECT_EQ(9u, id);
  CUPTI_OK(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN, &id));
  EXPECT_EQ(7u, id);
}

TEST(CuptiActivity, VersionAndResultStrings) {
  uint32_t v = 0;
  CUPTI_OK(cuptiGetVersion(&v));
  EXPECT_EQ(static_cast<uint32_t>(CUPTI_API_VERSION), v);
  const char* s = nullptr;
  CUPTI_OK(cuptiGetResultString(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, &s));
  EXPECT_STREQ("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED", s);
}

}  // namespace

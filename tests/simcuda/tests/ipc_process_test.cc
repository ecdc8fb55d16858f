// IPC of memory across processes on the simulated device (README.md, "IPC of
// memory"): the runtime's cudaIpc* handles of cudaMalloc memory and events,
// and the driver's POSIX file-descriptor shareable handles. The other
// process is ipc_peer (IPC_PEER), which prints "ok" or what failed.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

#define CUDA_OK(x) ASSERT_EQ(cudaSuccess, (x))

template <typename H>
std::string hex(const H& h) {
  std::string s;
  char b[3];
  for (size_t i = 0; i < sizeof(H); ++i) {
    std::snprintf(b, sizeof(b), "%02x", reinterpret_cast<const unsigned char*>(&h)[i]);
    s += b;
  }
  return s;
}

// Runs ipc_peer with `args`; its first line of output.
std::string peer(std::vector<std::string> args) {
  args.insert(args.begin(), IPC_PEER);
  int out[2];
  if (pipe(out) != 0) return "pipe failed";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, IPC_PEER, &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  if (rc != 0) return "spawn failed";
  std::string text;
  char buf[256];
  ssize_t n;
  while ((n = read(out[0], buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!text.empty() && text.back() == '\n') text.pop_back();
  if (!WIFEXITED(status)) return "peer died: " + text;
  return text;
}

std::vector<unsigned char> read_back(void* p, size_t n) {
  std::vector<unsigned char> v(n);
  EXPECT_EQ(cudaSuccess, cudaMemcpy(v.data(), p, n, cudaMemcpyDeviceToHost));
  return v;
}

bool all_are(const std::vector<unsigned char>& v, int byte) {
  for (unsigned char c : v)
    if (c != byte) return false;
  return true;
}

constexpr size_t kSize = (3 << 20) + 1000;  // not a whole number of pages

TEST(IpcMem, AnotherProcessSeesAndWritesTheSameBytes) {
  void* p = nullptr;
  CUDA_OK(cudaMalloc(&p, kSize));
  CUDA_OK(cudaMemset(p, 0x11, kSize));
  cudaIpcMemHandle_t h;
  CUDA_OK(cudaIpcGetMemHandle(&h, p));
  EXPECT_EQ("ok", peer({"mem", hex(h), std::to_string(kSize), "17", "34"}));
  EXPECT_TRUE(all_are(read_back(p, kSize), 0x22));
  // Written after the export, seen by the next importer; the lazy flag too.
  CUDA_OK(cudaMemset(p, 0x33, kSize));
  CUDA_OK(cudaDeviceSynchronize());  // cudaMemset is asynchronous to the host
  cudaIpcMemHandle_t again;
  CUDA_OK(cudaIpcGetMemHandle(&again, p));
  EXPECT_EQ(0, std::memcmp(&h, &again, sizeof(h))) << "one allocation, one handle";
  EXPECT_EQ("ok", peer({"mem", hex(h), std::to_string(kSize), "51", "68", "1"}));
  EXPECT_TRUE(all_are(read_back(p, kSize), 0x44));
  CUDA_OK(cudaFree(p));
}

TEST(IpcMem, OpenedTwiceIsOnePointerClosedTwice) {
  void* p = nullptr;
  CUDA_OK(cudaMalloc(&p, 1 << 20));
  cudaIpcMemHandle_t h;
  CUDA_OK(cudaIpcGetMemHandle(&h, p));
  EXPECT_EQ("ok", peer({"twice", hex(h)}));
  CUDA_OK(cudaFree(p));
}

TEST(IpcMem, RefusedWhereCudaRefusesIt) {
  void* p = nullptr;
  CUDA_OK(cudaMalloc(&p, 1 << 20));
  cudaIpcMemHandle_t h;
  // Not the base of an allocation; not device memory.
  EXPECT_EQ(cudaErrorInvalidValue, cudaIpcGetMemHandle(&h, static_cast<char*>(p) + 512));
  int host = 0;
  EXPECT_EQ(cudaErrorInvalidValue, cudaIpcGetMemHandle(&h, &host));
  EXPECT_EQ(cudaErrorInvalidValue, cudaIpcGetMemHandle(nullptr, p));
  CUDA_OK(cudaIpcGetMemHandle(&h, p));
  // In the exporting process: "invalid device context", as real drivers.
  void* q = nullptr;
  EXPECT_EQ(cudaErrorDeviceUninitialized, cudaIpcOpenMemHandle(&q, h, 0));
  cudaGetLastError();
  EXPECT_EQ(cudaErrorInvalidValue, cudaIpcOpenMemHandle(&q, h, 2)) << "unknown flags";
  cudaGetLastError();
  EXPECT_EQ(cudaErrorInvalidValue, cudaIpcCloseMemHandle(p)) << "not opened from a handle";
  cudaGetLastError();
  // A handle of freed memory names nothing; nor do 64 bytes of noise.
  CUDA_OK(cudaFree(p));
  EXPECT_EQ(std::to_string(cudaErrorInvalidValue), peer({"open-error", hex(h)}));
  cudaIpcMemHandle_t noise;
  std::memset(&noise, 0x5a, sizeof(noise));
  EXPECT_EQ(std::to_string(cudaErrorInvalidValue), peer({"open-error", hex(noise)}));
  // A new allocation at the same address gets a new handle.
  CUDA_OK(cudaMalloc(&p, 1 << 20));
  cudaIpcMemHandle_t fresh;
  CUDA_OK(cudaIpcGetMemHandle(&fresh, p));
  EXPECT_NE(0, std::memcmp(&h, &fresh, sizeof(h)));
  CUDA_OK(cudaFree(p));
}

void CUDART_CB sleep_300ms(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(300)); }

TEST(IpcEvent, AnotherProcessWaitsForTheRecord) {
  void* p = nullptr;
  CUDA_OK(cudaMalloc(&p, 1 << 20));
  CUDA_OK(cudaMemset(p, 0, 1 << 20));
  cudaIpcMemHandle_t h;
  CUDA_OK(cudaIpcGetMemHandle(&h, p));
  cudaEvent_t ev;
  EXPECT_EQ(cudaErrorInvalidValue, cudaEventCreateWithFlags(&ev, cudaEventInterprocess)) << "needs DisableTiming";
  cudaGetLastError();
  cudaIpcEventHandle_t eh;
  CUDA_OK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  EXPECT_EQ(cudaErrorInvalidResourceHandle, cudaIpcGetEventHandle(&eh, ev)) << "not interprocess";
  cudaGetLastError();
  CUDA_OK(cudaEventDestroy(ev));
  CUDA_OK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming | cudaEventInterprocess));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // The write lands 300 ms from now; the peer must wait for it.
  CUDA_OK(cudaLaunchHostFunc(s, sleep_300ms, nullptr));
  CUDA_OK(cudaMemsetAsync(p, 0x5a, 1 << 20, s));
  CUDA_OK(cudaEventRecord(ev, s));
  CUDA_OK(cudaIpcGetEventHandle(&eh, ev));
  EXPECT_EQ("ok not-ready-at-first", peer({"event", hex(eh), hex(h), std::to_string(1 << 20), "90"}));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaEventDestroy(ev));
  CUDA_OK(cudaStreamDestroy(s));
  CUDA_OK(cudaFree(p));
}

// The driver's shareable handles: a POSIX fd taken from this process with
// pidfd_getfd, imported, mapped: the same bytes both ways. The exporter
// released its handle and unmapped first: the exported descriptor keeps the
// memory (cuMemRelease: freed once every mapping and every shareable
// counterpart is gone).
TEST(IpcVmm, PosixFdHandleMapsTheSameBytesInAnotherProcess) {
  ASSERT_EQ(CUDA_SUCCESS, cuInit(0));
  CUcontext ctx;
  ASSERT_EQ(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&ctx, 0));
  ASSERT_EQ(CUDA_SUCCESS, cuCtxSetCurrent(ctx));
  constexpr size_t kBytes = 4 << 20;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemGenericAllocationHandle h;
  ASSERT_EQ(CUDA_SUCCESS, cuMemCreate(&h, kBytes, &prop, 0));
  CUdeviceptr va = 0;
  ASSERT_EQ(CUDA_SUCCESS, cuMemAddressReserve(&va, kBytes, 0, 0, 0));
  ASSERT_EQ(CUDA_SUCCESS, cuMemMap(va, kBytes, 0, h, 0));
  CUmemAccessDesc d{};
  d.location = prop.location;
  d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  ASSERT_EQ(CUDA_SUCCESS, cuMemSetAccess(va, kBytes, &d, 1));
  void* p = reinterpret_cast<void*>(va);
  CUDA_OK(cudaMemset(p, 0x21, kBytes));
  CUDA_OK(cudaDeviceSynchronize());  // the first export moves the bytes
  int fd = -1;
  ASSERT_EQ(CUDA_SUCCESS, cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  EXPECT_EQ("ok", peer({"vmm", std::to_string(getpid()), std::to_string(fd), std::to_string(kBytes), "33", "66"}));
  EXPECT_TRUE(all_are(read_back(p, kBytes), 66));
  CUDA_OK(cudaMemset(p, 0x77, kBytes));
  CUDA_OK(cudaDeviceSynchronize());
  ASSERT_EQ(CUDA_SUCCESS, cuMemUnmap(va, kBytes));
  ASSERT_EQ(CUDA_SUCCESS, cuMemRelease(h));
  EXPECT_EQ("ok", peer({"vmm", std::to_string(getpid()), std::to_string(fd), std::to_string(kBytes), "119", "1"}));
  close(fd);
  cuMemAddressFree(va, kBytes);
}

}  // namespace

// IPC of the VMM allocator's blocks between two processes (alloc/block_ipc.h),
// run under LD_PRELOAD=libgpuslack.so with GPUSLACK_CONF=allocator:vmm
// (tests/interpose/CMakeLists.txt, interpose.ipc_*). The exporter (no
// arguments) allocates blocks, exports them, and starts itself again as the
// importer ("import ..."), which opens each handle, checks the bytes, the
// pointer's attributes and cuMemGetAddressRange, writes bytes back, and
// closes; the exporter checks what it wrote. Both ways, byte for byte. Then:
// the exporter's free (and trim, which releases the chunks in the exporter)
// while the importer holds the block leaves the importer's mapping and bytes
// intact until it closes; a handle of a freed block, an interior pointer,
// the exporter's own process, and a process without gpuslack are refused.
// With IPC_APP_NO_FDS=1 (interpose.ipc_fabric, on a driver offering fabric
// handles) every importer is denied both ways a descriptor could reach it
// (pidfd_getfd and recvmsg, by seccomp): the blocks must travel as fabric
// handles. IPC_APP_IMPORTER_ENV=NAME=VALUE sets one more variable for the
// importers (interpose.ipc_fabric_import_refused: their simulated driver
// offers no fabric handles). Prints "ipc_app: ok" when everything held.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace {

int g_failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "ipc_app (%d): FAILED: %s\n", static_cast<int>(getpid()), what);
    ++g_failures;
  }
}

std::string hex(const cudaIpcMemHandle_t& h) {
  std::string s;
  char b[3];
  for (char c : h.reserved) {
    std::snprintf(b, sizeof(b), "%02x", static_cast<unsigned char>(c));
    s += b;
  }
  return s;
}

cudaIpcMemHandle_t from_hex(const char* s) {
  cudaIpcMemHandle_t h;
  for (size_t i = 0; i < sizeof(h.reserved); ++i) {
    unsigned v = 0;
    std::sscanf(s + 2 * i, "%2x", &v);
    h.reserved[i] = static_cast<char>(v);
  }
  return h;
}

bool all_are(const void* dev, size_t n, unsigned char byte) {
  std::vector<unsigned char> host(n);
  if (cudaMemcpy(host.data(), dev, n, cudaMemcpyDeviceToHost) != cudaSuccess) return false;
  for (unsigned char c : host)
    if (c != byte) return false;
  return true;
}

// Makes pidfd_getfd fail with EPERM in this process, as ptrace rules (Yama,
// a non-dumpable exporter) or a container's seccomp profile make it; with
// `recvmsg_too`, recvmsg as well (no descriptor can arrive over a socket).
bool refuse_pidfd_getfd(bool recvmsg_too = false) {
  sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_getfd, 1, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<__u32>(recvmsg_too ? SYS_recvmsg : SYS_pidfd_getfd), 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof(f) / sizeof(f[0])), f};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

// The importer's side of one block. "hold": after checking, says "held"
// and waits for a line on stdin before checking again and closing.
int import(const char* handle, size_t size, int expect, int write, bool hold) {
  void* p = nullptr;
  cudaError_t e = cudaIpcOpenMemHandle(&p, from_hex(handle), cudaIpcMemLazyEnablePeerAccess);
  if (e != cudaSuccess) {
    std::printf("open-error %d\n", static_cast<int>(e));
    return 0;
  }
  check(all_are(p, size, static_cast<unsigned char>(expect)), "the importer sees the exporter's bytes");
  cudaPointerAttributes a{};
  check(cudaPointerGetAttributes(&a, p) == cudaSuccess && a.type == cudaMemoryTypeDevice && a.device == 0,
        "imported memory is device memory of device 0");
  CUdeviceptr base = 0;
  size_t range = 0;
  check(cuMemGetAddressRange(&base, &range, reinterpret_cast<CUdeviceptr>(p) + size - 1) == CUDA_SUCCESS &&
            base == reinterpret_cast<CUdeviceptr>(p) && range == size,
        "cuMemGetAddressRange names the opened block");
  void* again = nullptr;
  check(cudaIpcOpenMemHandle(&again, from_hex(handle), 0) == cudaSuccess && again == p,
        "opened twice: the same pointer");
  check(cudaIpcCloseMemHandle(again) == cudaSuccess, "the first of two closes");
  check(cudaFree(p) != cudaSuccess, "cudaFree of opened memory is refused");
  cudaGetLastError();
  if (hold) {
    std::printf("held\n");
    std::fflush(stdout);
    char line[16];
    if (!std::fgets(line, sizeof(line), stdin)) check(false, "the exporter said go");
    check(all_are(p, size, static_cast<unsigned char>(expect)),
          "after the exporter's free and trim, the opened bytes are intact");
  }
  check(cudaMemset(p, write, size) == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess,
        "the importer writes");
  check(cudaIpcCloseMemHandle(p) == cudaSuccess, "the last close");
  check(cudaIpcCloseMemHandle(p) != cudaSuccess, "a third close is refused");
  cudaGetLastError();
  std::printf("%s\n", g_failures ? "failed" : "imported");
  return g_failures ? 1 : 0;
}

struct Child {
  pid_t pid = -1;
  FILE* out = nullptr;  // its stdout
  FILE* in = nullptr;   // its stdin
};

// Starts this program as the importer; `with_gpuslack` false drops
// LD_PRELOAD from its environment.
Child start(const std::vector<std::string>& args, bool with_gpuslack) {
  int to[2], from[2];
  Child c;
  if (pipe(to) != 0 || pipe(from) != 0) return c;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, to[0], 0);
  posix_spawn_file_actions_adddup2(&fa, from[1], 1);
  posix_spawn_file_actions_addclose(&fa, to[1]);
  posix_spawn_file_actions_addclose(&fa, from[0]);
  std::vector<std::string> env;
  // IPC_APP_IMPORTER_ENV=NAME=VALUE: that variable as every importer sees
  // it (the exporter's own of that name left out: getenv finds the first).
  const char* extra = std::getenv("IPC_APP_IMPORTER_ENV");
  const char* eq = extra ? std::strchr(extra, '=') : nullptr;
  const size_t extra_name = eq ? static_cast<size_t>(eq - extra) + 1 : 0;
  for (char** e = environ; *e; ++e)
    if ((with_gpuslack || std::strncmp(*e, "LD_PRELOAD=", 11) != 0) &&
        (!extra_name || std::strncmp(*e, extra, extra_name) != 0))
      env.push_back(*e);
  if (extra_name) env.push_back(extra);
  std::vector<char*> envp, argv;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string self = "/proc/self/exe";
  char path[4096];
  ssize_t n = readlink(self.c_str(), path, sizeof(path) - 1);
  path[n > 0 ? n : 0] = '\0';
  std::vector<std::string> all = {path};
  all.insert(all.end(), args.begin(), args.end());
  for (auto& s : all) argv.push_back(s.data());
  argv.push_back(nullptr);
  if (posix_spawn(&c.pid, path, &fa, nullptr, argv.data(), envp.data()) != 0) c.pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  close(to[0]);
  close(from[1]);
  c.in = fdopen(to[1], "w");
  c.out = fdopen(from[0], "r");
  return c;
}

std::string line_of(Child& c) {
  char buf[256] = {0};
  if (!std::fgets(buf, sizeof(buf), c.out)) return "";
  std::string s = buf;
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

// Waits for the child; its last line.
std::string finish(Child& c, std::string last = "") {
  if (c.in) fclose(c.in);
  for (std::string l; !(l = line_of(c)).empty();) last = l;
  fclose(c.out);
  int status = 0;
  waitpid(c.pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) check(false, "the importer exited cleanly");
  return last;
}

std::string run(const std::vector<std::string>& args, bool with_gpuslack = true) {
  Child c = start(args, with_gpuslack);
  return finish(c);
}

void export_round_trip(size_t size, unsigned char first, unsigned char second, const char* what) {
  void* p = nullptr;
  check(cudaMalloc(&p, size) == cudaSuccess, "cudaMalloc");
  check(cudaMemset(p, first, size) == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess, "memset");
  cudaIpcMemHandle_t h, again;
  check(cudaIpcGetMemHandle(&h, p) == cudaSuccess, "cudaIpcGetMemHandle of a VMM block");
  check(cudaIpcGetMemHandle(&again, p) == cudaSuccess && std::memcmp(&h, &again, sizeof(h)) == 0,
        "one block, one handle");
  std::string got = run({"import", hex(h), std::to_string(size), std::to_string(first), std::to_string(second)});
  check(got == "imported", what);
  check(all_are(p, size, second), "the exporter sees the importer's bytes");
  check(cudaFree(p) == cudaSuccess, "cudaFree");
}

}  // namespace

int main(int argc, char** argv) {
  const bool importer = argc >= 6 && std::strcmp(argv[1], "import") == 0;
  const bool no_fds = importer && std::getenv("IPC_APP_NO_FDS") && std::strcmp(std::getenv("IPC_APP_NO_FDS"), "1") == 0;
  if (((argc >= 7 && std::strcmp(argv[6], "no-pidfd") == 0) || no_fds) && !refuse_pidfd_getfd(no_fds)) {
    std::printf("seccomp refused\n");
    return 1;
  }
  if (importer)
    return import(argv[2], std::strtoull(argv[3], nullptr, 0), std::atoi(argv[4]), std::atoi(argv[5]),
                  argc > 6 && std::strcmp(argv[6], "hold") == 0);
  void* probe = nullptr;
  if (cudaMalloc(&probe, 1 << 20) != cudaSuccess) return 1;
  auto* trim = reinterpret_cast<unsigned long long (*)(int)>(dlsym(RTLD_DEFAULT, "gpuslack_trim"));
  check(trim != nullptr, "run under LD_PRELOAD=libgpuslack.so");

  // A small block (inside one 2 MiB chunk), a large one over several
  // chunks (map_chunk_mb 16 by default: 40 MiB is at least three).
  export_round_trip(1000, 0x11, 0x22, "a small block opens in another process");
  export_round_trip(40u << 20, 0x33, 0x44, "a block over several chunks opens in another process");
  // Where pidfd_getfd is refused, the exporter's socket serves.
  {
    void* p = nullptr;
    check(cudaMalloc(&p, 3u << 20) == cudaSuccess && cudaMemset(p, 0x66, 3u << 20) == cudaSuccess &&
              cudaDeviceSynchronize() == cudaSuccess,
          "cudaMalloc");
    cudaIpcMemHandle_t h;
    check(cudaIpcGetMemHandle(&h, p) == cudaSuccess, "cudaIpcGetMemHandle");
    check(run({"import", hex(h), std::to_string(3u << 20), "102", "119", "no-pidfd"}) == "imported",
          "an importer refused pidfd_getfd takes the descriptors over the socket");
    check(all_are(p, 3u << 20, 119), "the exporter sees the importer's bytes");
    cudaFree(p);
  }

  // The exporter frees and trims while the importer holds the block.
  {
    const size_t size = 24u << 20;
    void* p = nullptr;
    check(cudaMalloc(&p, size) == cudaSuccess, "cudaMalloc");
    check(cudaMemset(p, 0x55, size) == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess, "memset");
    cudaIpcMemHandle_t h;
    check(cudaIpcGetMemHandle(&h, p) == cudaSuccess, "cudaIpcGetMemHandle");
    Child c = start({"import", hex(h), std::to_string(size), "85", "102", "hold"}, true);
    check(line_of(c) == "held", "the importer holds the block");
    check(cudaFree(p) == cudaSuccess, "the exporter frees the opened block");
    if (trim) check(trim(0) > 0, "the trim releases the freed block's chunks in the exporter");
    void* q = nullptr;  // new memory, written: it must not show in the importer
    check(cudaMalloc(&q, size) == cudaSuccess && cudaMemset(q, 0x77, size) == cudaSuccess &&
              cudaDeviceSynchronize() == cudaSuccess,
          "a new block");
    std::fputs("go\n", c.in);
    std::fflush(c.in);
    check(finish(c) == "imported", "the importer's mapping outlived the exporter's free");
    cudaFree(q);
    // The freed block's handle opens nowhere now.
    check(run({"import", hex(h), std::to_string(size), "0", "0"}) == "open-error 1",
          "a freed block's handle: cudaErrorInvalidValue");
  }

  // Refusals.
  {
    void* p = nullptr;
    check(cudaMalloc(&p, 4096) == cudaSuccess, "cudaMalloc");
    cudaIpcMemHandle_t h;
    check(cudaIpcGetMemHandle(&h, static_cast<char*>(p) + 256) == cudaErrorInvalidValue,
          "inside a block: cudaErrorInvalidValue");
    cudaGetLastError();
    check(cudaIpcGetMemHandle(&h, p) == cudaSuccess, "cudaIpcGetMemHandle");
    void* q = nullptr;
    check(cudaIpcOpenMemHandle(&q, h, 0) == cudaErrorDeviceUninitialized,
          "opened in the exporting process: invalid device context");
    cudaGetLastError();
    check(run({"import", hex(h), "4096", "0", "0"}, false) == "open-error 1",
          "a process without gpuslack gets the runtime's error (cudaErrorInvalidValue)");
    cudaFree(p);
  }
  cudaFree(probe);
  if (g_failures == 0) std::printf("ipc_app: ok\n");
  return g_failures ? 1 : 0;
}

// Shared by the in-process tests of the NCCL hooks (nccl_hooks_test.cc,
// nccl_busbw_test.cc): the hooked NCCL entry points and NCCL's own, the
// live summary's collectives rows read back, and kRanks ranks as devices of
// this process (GPUSIM_DEVICE_COUNT=4) with a stream each.
//
// The test links the simulated libnccl.so.2 and dlopen()s libgpuslack.so
// RTLD_LOCAL (in_process.h), so each NCCL entry point is reachable twice.
// GPU time is sampled on every call (collective_timing_every:1). One test
// executable includes it (its functions are inline for that one).
#pragma once

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "hook_table.h"
#include "in_process.h"
#include "nccl_hook_table.h"

namespace nccl_in_process {

using gpuslack::CallInfo;  // named by the table's info column

// The simulated NCCL really reduces the data on the CPU: under a sanitizer
// that work, not the modeled link, can set the pace, so the lower bound of
// a measured bandwidth relaxes there (the upper bound never does), and the
// link is slower there (0.025 GB/s, tests/interpose/CMakeLists.txt) so that
// the model still dominates on a loaded machine.
// A wide margin in every build: on a loaded 2-core machine the simulated
// ranks' CPU reductions compete with everything else (0.48 of the model
// measured at a load of 10; below 0.3 once at a load of 10 with six
// builds running). The bound still catches a bandwidth off by an order of
// magnitude; the upper bound, which never relaxes, catches one too high.
inline constexpr double kSlowest = 0.15;
using namespace gpuslack::interpose;  // the table's track column

// Every hooked NCCL function, as a pointer.
struct Nccl {
#define GPUSLACK_NCCL_MEMBER(sym, ret, params, args, cat, bytes, info, track) ret(*sym) params = nullptr;
  GPUSLACK_NCCL_HOOKS(GPUSLACK_NCCL_MEMBER)
#undef GPUSLACK_NCCL_MEMBER
};

// Quiet (the summary is read through the C API), every call timed.
inline void* gpuslack_handle() {
  return in_process::gpuslack("text_summary:off,json_summary:false,collective_timing_every:1");
}

inline Nccl load(void* handle) {
  Nccl a;
#define GPUSLACK_NCCL_LOAD(sym, ret, params, args, cat, bytes, info, track) \
  a.sym = handle ? reinterpret_cast<decltype(a.sym)>(dlsym(handle, #sym)) : nullptr;
  GPUSLACK_NCCL_HOOKS(GPUSLACK_NCCL_LOAD)
#undef GPUSLACK_NCCL_LOAD
  return a;
}

inline const Nccl& direct() {
  static Nccl a = load(dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD));
  return a;
}
inline const Nccl& hooks() {
  static Nccl a = load(gpuslack_handle());
  return a;
}

inline std::string summary_json() { return in_process::summary_json(gpuslack_handle()); }

// ------------------------------------------------ reading the summary ----
// The collectives rows are flat objects: read them textually.

struct Row {
  std::string op;
  uint64_t count = 0, captured = 0, timed = 0, bytes = 0;
  int nranks = 0;
  double gpu_s = 0, gpu_s_estimated = 0, algbw_gbps = 0, busbw_gbps = 0;
  bool mostly_captured = false;
};

inline double number_after(const std::string& obj, const std::string& key) {
  size_t at = obj.find("\"" + key + "\": ");
  return at == std::string::npos ? -1 : std::atof(obj.c_str() + at + key.size() + 4);
}

inline std::string string_after(const std::string& obj, const std::string& key) {
  size_t at = obj.find("\"" + key + "\": \"");
  if (at == std::string::npos) return "";
  at += key.size() + 5;
  return obj.substr(at, obj.find('"', at) - at);
}

// The text of the collectives section, "" when it is null.
inline std::string collectives_section(const std::string& json) {
  size_t at = json.find("\"collectives\": {");
  return at == std::string::npos ? "" : json.substr(at);
}

inline std::vector<Row> rows(const std::string& json) {
  std::vector<Row> out;
  std::string c = collectives_section(json);
  size_t at = c.find("\"rows\": [");
  if (at == std::string::npos) return out;
  size_t end = c.find(']', at);
  for (size_t b = c.find('{', at); b != std::string::npos && b < end; b = c.find('{', b + 1)) {
    std::string obj = c.substr(b, c.find('}', b) - b);
    Row r;
    r.op = string_after(obj, "op");
    r.count = static_cast<uint64_t>(number_after(obj, "count"));
    r.captured = static_cast<uint64_t>(number_after(obj, "captured"));
    r.timed = static_cast<uint64_t>(number_after(obj, "timed"));
    r.bytes = static_cast<uint64_t>(number_after(obj, "bytes"));
    r.nranks = static_cast<int>(number_after(obj, "nranks"));
    r.gpu_s = number_after(obj, "gpu_s");
    r.gpu_s_estimated = number_after(obj, "gpu_s_estimated");
    r.algbw_gbps = number_after(obj, "algbw_gbps");
    r.busbw_gbps = number_after(obj, "busbw_gbps");
    r.mostly_captured = obj.find("\"mostly_captured\": true") != std::string::npos;
    out.push_back(r);
  }
  return out;
}

// Every row of `op`, summed (busbw: of the last one).
inline Row total(const std::vector<Row>& rs, const std::string& op) {
  Row t;
  t.op = op;
  for (const Row& r : rs) {
    if (r.op != op) continue;
    t.count += r.count;
    t.captured += r.captured;
    t.timed += r.timed;
    t.bytes += r.bytes;
    t.gpu_s += r.gpu_s;
    t.gpu_s_estimated += r.gpu_s_estimated;
    t.nranks = r.nranks;
    t.busbw_gbps = r.busbw_gbps;
  }
  return t;
}

// ------------------------------------------------------------ ranks ------

inline constexpr int kRanks = 4;

struct Ranks {
  std::vector<ncclComm_t> comms = std::vector<ncclComm_t>(kRanks);
  std::vector<cudaStream_t> streams = std::vector<cudaStream_t>(kRanks);
  std::vector<void*> buffers;
  ncclResult_t init = ncclInternalError;
  const Nccl& a;
  explicit Ranks(const Nccl& api) : a(api) {
    init = a.ncclCommInitAll(comms.data(), kRanks, nullptr);
    for (int r = 0; r < kRanks; ++r) {
      cudaSetDevice(r);
      EXPECT_EQ(cudaSuccess, cudaStreamCreate(&streams[r]));
    }
    cudaSetDevice(0);
  }
  ~Ranks() {
    sync();
    for (int r = 0; r < kRanks; ++r) {
      cudaStreamDestroy(streams[r]);
      if (init == ncclSuccess) EXPECT_EQ(ncclSuccess, a.ncclCommDestroy(comms[r]));
    }
    for (void* p : buffers) cudaFree(p);
  }
  void sync() {
    for (int r = 0; r < kRanks; ++r) EXPECT_EQ(cudaSuccess, cudaStreamSynchronize(streams[r]));
  }
  // Device memory of rank r, filled from `init` or zeroed.
  void* alloc(int r, size_t bytes, const void* init = nullptr) {
    cudaSetDevice(r);
    void* p = nullptr;
    EXPECT_EQ(cudaSuccess, cudaMalloc(&p, bytes));
    if (init) {
      EXPECT_EQ(cudaSuccess, cudaMemcpy(p, init, bytes, cudaMemcpyHostToDevice));
    } else {
      EXPECT_EQ(cudaSuccess, cudaMemset(p, 0, bytes));
    }
    cudaSetDevice(0);
    buffers.push_back(p);
    return p;
  }
  std::vector<unsigned char> download(const void* d, size_t bytes) {
    std::vector<unsigned char> h(bytes);
    EXPECT_EQ(cudaSuccess, cudaMemcpy(h.data(), d, bytes, cudaMemcpyDeviceToHost));
    return h;
  }
};

}  // namespace nccl_in_process

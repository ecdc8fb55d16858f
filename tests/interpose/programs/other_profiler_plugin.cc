// Another NCCL profiler plugin, as a site or NCCL's Inspector would be: it
// exports ncclProfiler_v4 only, declared here by hand from NCCL's
// profiler_v4.h (not from gpuslack's lib/nccl/profiler_abi.h, so that the
// two declarations check each other), counts the collective events NCCL
// sends it and, at each finalize, appends "colls=N algo=A proto=P" to the
// file $OTHER_PLUGIN_OUT. nccl_profiler_test.py runs it beside gpuslack.
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace {

typedef int ncclResult_t;
typedef void (*ncclDebugLogger_t)(int, unsigned long, const char*, int, const char*, ...);

typedef struct {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      uint8_t channelId;
      uint64_t pTimer;
    } kernelCh;
  };
} ncclProfilerEventDescr_v4_t;

typedef union {
  struct {
    uint64_t pTimer;
  } kernelCh;
} ncclProfilerEventStateArgs_v4_t;

std::atomic<int> g_colls{0};
std::mutex g_mu;  // NCCL calls start from every rank's thread at once
char g_algo[32] = "?";   // guarded by g_mu
char g_proto[32] = "?";  // guarded by g_mu
int g_token;

ncclResult_t init(void** context, int* mask, const char*, uint64_t, int, int, int, ncclDebugLogger_t) {
  *context = &g_token;
  *mask = 1 << 1;  // ncclProfileColl
  return 0;
}

ncclResult_t start(void*, void** handle, ncclProfilerEventDescr_v4_t* d) {
  *handle = nullptr;
  if (d->type == (1 << 1)) {
    g_colls.fetch_add(1);
    std::lock_guard<std::mutex> lock(g_mu);
    std::snprintf(g_algo, sizeof(g_algo), "%s", d->coll.algo ? d->coll.algo : "null");
    std::snprintf(g_proto, sizeof(g_proto), "%s", d->coll.proto ? d->coll.proto : "null");
    *handle = &g_token;
  }
  return 0;
}

ncclResult_t stop(void*) { return 0; }
ncclResult_t record(void*, int, ncclProfilerEventStateArgs_v4_t*) { return 0; }

ncclResult_t finalize(void*) {
  if (const char* path = std::getenv("OTHER_PLUGIN_OUT")) {
    if (FILE* f = std::fopen(path, "a")) {
      std::lock_guard<std::mutex> lock(g_mu);
      std::fprintf(f, "colls=%d algo=%s proto=%s\n", g_colls.load(), g_algo, g_proto);
      std::fclose(f);
    }
  }
  return 0;
}

}  // namespace

extern "C" {
typedef struct {
  const char* name;
  ncclResult_t (*init)(void**, int*, const char*, uint64_t, int, int, int, ncclDebugLogger_t);
  ncclResult_t (*startEvent)(void*, void**, ncclProfilerEventDescr_v4_t*);
  ncclResult_t (*stopEvent)(void*);
  ncclResult_t (*recordEventState)(void*, int, ncclProfilerEventStateArgs_v4_t*);
  ncclResult_t (*finalize)(void*);
} ncclProfiler_v4_t;

__attribute__((visibility("default"))) ncclProfiler_v4_t ncclProfiler_v4 = {"other", init, start, stop, record,
                                                                             finalize};
}

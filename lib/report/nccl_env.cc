#include "report/nccl_env.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/ascii.h"

namespace gpuslack {
namespace report {
namespace {

// NCCL's documented tuning variables, from its "Environment Variables"
// page (through NCCL 2.2x): whole families by prefix...
constexpr const char* kTuningFamilies[] = {
    "NCCL_IB_",      // InfiniBand / RoCE transport: HCA, timeouts, GID, SL, TC, QPs, adaptive routing
    "NCCL_P2P_",     // peer-to-peer transport: level, disable, chunk sizes, read, PXN level
    "NCCL_SHM_",     // shared-memory transport
    "NCCL_SOCKET_",  // socket transport: interface, family, threads, retries
    "NCCL_NVLS_",    // NVLink SHARP
    "NCCL_COLLNET_",
};

// ...and single variables.
constexpr const char* kTuningVariables[] = {
    "NCCL_ALGO", "NCCL_PROTO", "NCCL_BUFFSIZE", "NCCL_NTHREADS", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS",
    "NCCL_MIN_NRINGS", "NCCL_MAX_NRINGS", "NCCL_MIN_CTAS", "NCCL_MAX_CTAS", "NCCL_CGA_CLUSTER_SIZE",
    "NCCL_CROSS_NIC", "NCCL_NSOCKS_PERTHREAD", "NCCL_NET", "NCCL_NET_PLUGIN", "NCCL_TUNER_PLUGIN",
    "NCCL_NET_GDR_LEVEL", "NCCL_NET_GDR_READ", "NCCL_NET_GDR_C2C", "NCCL_NET_SHARED_BUFFERS",
    "NCCL_NET_SHARED_COMMS", "NCCL_NET_DISABLE_INTRA", "NCCL_NET_FORCE_FLUSH",
    "NCCL_SINGLE_RING_THRESHOLD", "NCCL_LL_THRESHOLD", "NCCL_LL128_THRESHOLD", "NCCL_TREE_THRESHOLD",
    "NCCL_NVB_DISABLE", "NCCL_PXN_DISABLE", "NCCL_LAUNCH_MODE", "NCCL_CHECK_POINTERS", "NCCL_CHECKS_DISABLE",
    "NCCL_GRAPH_REGISTER", "NCCL_LOCAL_REGISTER", "NCCL_GRAPH_MIXING_SUPPORT", "NCCL_DMABUF_ENABLE",
    "NCCL_CUMEM_ENABLE", "NCCL_CUMEM_HOST_ENABLE", "NCCL_MNNVL_ENABLE", "NCCL_NCHANNELS_PER_NET_PEER",
    "NCCL_MEM_SYNC_DOMAIN", "NCCL_IGNORE_CPU_AFFINITY", "NCCL_IGNORE_DISABLED_P2P", "NCCL_COMM_BLOCKING",
    "NCCL_RUNTIME_CONNECT", "NCCL_WORK_FIFO_DEPTH", "NCCL_WORK_FIFO_BYTES", "NCCL_ALLOC_P2P_NET_LL_BUFFERS",
    "NCCL_SET_STACK_SIZE", "NCCL_TOPO_FILE", "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS",
};

// Never recorded, whatever the lists say.
constexpr const char* kSecretWords[] = {"PASSWORD", "SECRET", "TOKEN", "KEY"};

}  // namespace

bool nccl_variable_recorded(std::string_view name) {
  const std::string upper = absl::AsciiStrToUpper(std::string(name));
  for (const char* word : kSecretWords)
    if (upper.find(word) != std::string::npos) return false;
  for (const char* v : kTuningVariables)
    if (name == v) return true;
  for (const char* family : kTuningFamilies)
    if (name.size() > std::strlen(family) && name.compare(0, std::strlen(family), family) == 0) return true;
  return false;
}

std::vector<std::pair<std::string, std::string>> nccl_variables(const char* const* envp) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const char* const* e = envp; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (!eq) continue;
    std::string_view name(*e, static_cast<size_t>(eq - *e));
    if (nccl_variable_recorded(name)) out.emplace_back(std::string(name), std::string(eq + 1));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace report
}  // namespace gpuslack

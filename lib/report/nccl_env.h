// Which NCCL_* environment variables the summary records beside the
// collectives (collectives.h: CollectivesSection::env, the JSON's
// collectives.env and the text's "environment:" line).
//
// Note [NCCL variables]: the summary is a file of mode 0644 and a block of
// stderr, and NCCL_* variables are not all tuning: NCCL_IB_PASSWORD went
// into both once. Recorded are only the variables of NCCL's documented
// tuning surface that change how collectives perform (the allow-list in
// nccl_env.cc: algorithm and protocol, channels and threads, buffers, the
// transports' families NCCL_IB_*, NCCL_P2P_*, NCCL_SHM_*, NCCL_SOCKET_*,
// NCCL_NVLS_*, NCCL_COLLNET_*, GPUDirect levels, plugins, debug level), and
// never one whose name holds PASSWORD, SECRET, TOKEN or KEY in any case,
// allow-listed or not (so NCCL_IB_PKEY is not recorded either). Addresses
// and files (NCCL_COMM_ID, NCCL_HOSTID, NCCL_DEBUG_FILE, NCCL_CONF_FILE)
// are not tuning and not recorded.
//
// Thread safety: pure functions of their arguments.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuslack {
namespace report {

// True when the variable `name` may be recorded (Note [NCCL variables]).
bool nccl_variable_recorded(std::string_view name);

// The recorded variables of `envp` (an environ-style array, null-terminated;
// null: none), sorted by name.
std::vector<std::pair<std::string, std::string>> nccl_variables(const char* const* envp);

}  // namespace report
}  // namespace gpuslack

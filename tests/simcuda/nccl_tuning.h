// libnccl.so.2 of the simulated device: which algorithm and protocol a
// collective runs with, as NCCL decides it (README.md, "NCCL", "Fabric").
//
//   - NCCL_ALGO / NCCL_PROTO: parsed as NCCL's parseList does (NCCL 2.24 and
//     later, src/graph/tuning.cc; the environment variable documentation):
//     a comma list of names (case-insensitive), '^' first to exclude them
//     instead, and per function "allreduce:tree;broadcast:ring" entries
//     after an optional first entry for every function. An unknown name or
//     function is an error (NCCL fails the communicator's init).
//   - The choice among what is left: the cost model's fastest (NCCL's tuner,
//     ncclTopoGetAlgoTime), or Ring whenever it is allowed (the "ring"
//     default, GPUSIM_NCCL_ALGO_DEFAULT), its protocol by the model.
//
// Pure functions over their arguments (no environment, no I/O), so the
// tests compile this file too and check the choice directly.
//
// Thread safety: none needed; nothing is shared.
#pragma once

#include <cstdint>
#include <string>

#include "nccl/cost_model.h"

namespace ncclsim {
namespace tuning {

using gpuslack::nccl::Algo;
using gpuslack::nccl::CollectiveOp;
using gpuslack::nccl::Cost;
using gpuslack::nccl::Links;
using gpuslack::nccl::Proto;
using gpuslack::nccl::Shape;

// NCCL's functions, in its order (ncclFunc_t), as the per-function prefixes
// name them: "Broadcast", "Reduce", "AllGather", "ReduceScatter",
// "AllReduce". Other ops (AlltoAll, Gather, Scatter, Send, Recv) are
// point-to-point in NCCL and have no algorithm to choose.
inline constexpr int kFuncCount = 5;
// NCCL 2.28's algorithms (ncclAlgoStr), in its order; Tree and Ring alone
// are modeled.
inline constexpr int kNcclAlgoCount = 7;
inline constexpr int kTree = 0, kRing = 1;
extern const char* const kNcclAlgoNames[kNcclAlgoCount];
extern const char* const kFuncNames[kFuncCount];

// What NCCL_ALGO and NCCL_PROTO leave enabled, per function.
struct Enabled {
  bool algo[kFuncCount][kNcclAlgoCount];
  bool proto[kFuncCount][gpuslack::nccl::kProtoCount];
  Enabled();  // everything enabled (neither variable set)
};

// Applies one variable's value to `e` (`algos`: NCCL_ALGO, else NCCL_PROTO).
// False with `*error` (one line, NCCL's words) when NCCL would refuse it;
// `e` is then unspecified.
bool parse_list(const char* value, bool algos, Enabled* e, std::string* error);

// The function of `op` (0..kFuncCount-1), or -1 for a point-to-point op.
int func_of(CollectiveOp op);

struct Decision {
  Algo algo = Algo::kRing;
  Proto proto = Proto::kSimple;
  Cost cost;  // the model's, for that algorithm and protocol (valid may be false: op not modeled)
  // NCCL_ALGO left no modeled algorithm for this function (only CollNet,
  // NVLS or PAT, which are not modeled): every modeled one was considered,
  // as NCCL itself did for an unsupported CollNet named alone.
  bool algo_fallback = false;
  // NCCL_PROTO left no protocol: every one was considered.
  bool proto_fallback = false;
};

// The choice for one call of `bytes` (nccl-tests' S) of `op`: among the
// enabled modeled (algorithm, protocol) pairs whose cost the model gives,
// Ring when `ring_default` allows it, then the least time (ties: Ring before
// Tree; LL, LL128, Simple in that order, as best_choice breaks them).
// Point-to-point ops: Ring/Simple.
Decision choose(CollectiveOp op, uint64_t bytes, const Shape& shape, const Links& links, const Enabled& enabled,
                bool ring_default);

}  // namespace tuning
}  // namespace ncclsim

// libnccl.so.2 of the simulated device: NCCL_ALGO / NCCL_PROTO and the
// choice of algorithm and protocol (nccl_tuning.h).
#include "nccl_tuning.h"

#include <strings.h>

#include <cstring>
#include <string>
#include <vector>

namespace ncclsim {
namespace tuning {

namespace gn = gpuslack::nccl;

const char* const kNcclAlgoNames[kNcclAlgoCount] = {"Tree", "Ring", "CollNetDirect", "CollNetChain",
                                                    "NVLS", "NVLSTree", "PAT"};
const char* const kFuncNames[kFuncCount] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};

namespace {
const char* const kProtoNames[gn::kProtoCount] = {"LL", "LL128", "Simple"};

// Splits `s` at `sep`, dropping empty pieces (as strtok does).
std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= s.size()) {
    size_t end = s.find(sep, at);
    if (end == std::string::npos) end = s.size();
    if (end > at) out.push_back(s.substr(at, end - at));
    at = end + 1;
  }
  return out;
}
}  // namespace

Enabled::Enabled() {
  for (int f = 0; f < kFuncCount; ++f) {
    for (bool& a : algo[f]) a = true;
    for (bool& p : proto[f]) p = true;
  }
}

// NCCL's parseList (src/graph/tuning.cc, 2.24 and later): entries split at
// ';'; each is "[function:]list", only the first may omit the function (it
// then applies to every function); a list starting with '^' enables all but
// its names, otherwise only its names; names and functions match without
// regard to case; an unknown one fails.
bool parse_list(const char* value, bool algos, Enabled* e, std::string* error) {
  const char* const* names = algos ? kNcclAlgoNames : kProtoNames;
  const int count = algos ? kNcclAlgoCount : gn::kProtoCount;
  const char* var = algos ? "NCCL_ALGO" : "NCCL_PROTO";
  const std::vector<std::string> entries = split(value ? value : "", ';');
  for (size_t i = 0; i < entries.size(); ++i) {
    std::vector<std::string> parts = split(entries[i], ':');
    std::string prefix, list;
    if (parts.size() >= 2) {
      prefix = parts[0];
      list = parts[1];
    } else if (i == 0 && parts.size() == 1) {
      list = parts[0];
    } else {
      *error = std::string(var) + ": all entries except the first must have a prefix: \"" + value + "\"";
      return false;
    }
    bool set = true;
    if (!list.empty() && list[0] == '^') {
      set = false;
      list.erase(0, 1);
    }
    bool found = false;
    for (int f = 0; f < kFuncCount; ++f) {
      if (!prefix.empty() && strcasecmp(prefix.c_str(), kFuncNames[f]) != 0) continue;
      found = true;
      bool* row = algos ? e->algo[f] : e->proto[f];
      for (int k = 0; k < count; ++k) row[k] = !set;
      for (const std::string& name : split(list, ',')) {
        int k = 0;
        while (k < count && strcasecmp(name.c_str(), names[k]) != 0) ++k;
        if (k == count) {
          *error = std::string(var) + ": unrecognized element token \"" + name + "\" when parsing \"" + value + "\"";
          return false;
        }
        row[k] = set;
      }
    }
    if (!found) {
      *error = std::string(var) + ": unrecognized prefix token \"" + prefix + "\" when parsing \"" + value + "\"";
      return false;
    }
  }
  return true;
}

int func_of(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kBroadcast: return 0;
    case CollectiveOp::kReduce: return 1;
    case CollectiveOp::kAllGather: return 2;
    case CollectiveOp::kReduceScatter: return 3;
    case CollectiveOp::kAllReduce: return 4;
    default: return -1;
  }
}

namespace {

// The fastest enabled pair; false when the model gives none.
bool fastest(CollectiveOp op, uint64_t bytes, const Shape& shape, const Links& links, const bool algo_ok[2],
             const bool proto_ok[gn::kProtoCount], Decision* d) {
  static constexpr Algo kAlgos[2] = {Algo::kRing, Algo::kTree};
  static constexpr Proto kProtos[gn::kProtoCount] = {Proto::kLL, Proto::kLL128, Proto::kSimple};
  bool found = false;
  for (int a = 0; a < 2; ++a) {
    if (!algo_ok[a]) continue;
    for (int p = 0; p < gn::kProtoCount; ++p) {
      if (!proto_ok[p]) continue;
      Cost c = gn::collective_cost(op, bytes, kAlgos[a], kProtos[p], shape, links);
      if (!c.valid || (found && !(c.time_s < d->cost.time_s))) continue;
      found = true;
      d->algo = kAlgos[a];
      d->proto = kProtos[p];
      d->cost = c;
    }
  }
  return found;
}

}  // namespace

Decision choose(CollectiveOp op, uint64_t bytes, const Shape& shape, const Links& links, const Enabled& enabled,
                bool ring_default) {
  Decision d;
  const int f = func_of(op);
  if (f < 0) {
    d.cost = gn::collective_cost(op, bytes, Algo::kRing, Proto::kSimple, shape, links);
    return d;
  }
  bool algo_ok[2] = {enabled.algo[f][kRing], enabled.algo[f][kTree]};  // in Algo's order
  bool proto_ok[gn::kProtoCount];
  bool any_proto = false;
  for (int p = 0; p < gn::kProtoCount; ++p) any_proto |= proto_ok[p] = enabled.proto[f][p];
  if (!any_proto) {
    d.proto_fallback = true;
    for (bool& p : proto_ok) p = true;
  }
  if (ring_default && algo_ok[0]) algo_ok[1] = false;
  if (fastest(op, bytes, shape, links, algo_ok, proto_ok, &d)) return d;
  // Nothing modeled is enabled for this function (NCCL_ALGO=NVLS, or Tree
  // for a function Tree does not run): every modeled algorithm.
  d.algo_fallback = true;
  const bool all[2] = {true, !ring_default};
  if (fastest(op, bytes, shape, links, all, proto_ok, &d)) return d;
  d.proto_fallback = true;
  const bool every_proto[gn::kProtoCount] = {true, true, true};
  if (!fastest(op, bytes, shape, links, all, every_proto, &d)) {
    d.algo = Algo::kRing;
    d.proto = Proto::kSimple;
    d.cost = Cost();
  }
  return d;
}

}  // namespace tuning
}  // namespace ncclsim

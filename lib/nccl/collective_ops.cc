// The naming and sizing half of collectives.h: operation and datatype names,
// nccl-tests' size S and bus-bandwidth factors (nccl-tests, doc/PERFORMANCE.md).
#include "nccl/collectives.h"

namespace gpuslack {
namespace nccl {

const char* collective_op_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return "all-reduce";
    case CollectiveOp::kReduceScatter: return "reduce-scatter";
    case CollectiveOp::kAllGather: return "all-gather";
    case CollectiveOp::kBroadcast: return "broadcast";
    case CollectiveOp::kReduce: return "reduce";
    case CollectiveOp::kAlltoAll: return "all-to-all";
    case CollectiveOp::kGather: return "gather";
    case CollectiveOp::kScatter: return "scatter";
    case CollectiveOp::kSend: return "send";
    case CollectiveOp::kRecv: return "recv";
  }
  return "?";
}

namespace {
bool is_total_sized(CollectiveOp op) {
  return op == CollectiveOp::kReduceScatter || op == CollectiveOp::kAllGather || op == CollectiveOp::kAlltoAll ||
         op == CollectiveOp::kGather || op == CollectiveOp::kScatter;
}
}  // namespace

double bus_factor(CollectiveOp op, int nranks) {
  if (nranks <= 0) return 1;
  double n = nranks;
  if (op == CollectiveOp::kAllReduce) return 2 * (n - 1) / n;
  if (is_total_sized(op)) return (n - 1) / n;
  return 1;
}

double bus_bytes(CollectiveOp op, int nranks, double bytes, double local_bytes) {
  if (op == CollectiveOp::kSend || op == CollectiveOp::kRecv) return bytes - local_bytes;
  return bytes * bus_factor(op, nranks);
}

uint64_t collective_bytes(CollectiveOp op, size_t count, size_t elem_size, int nranks) {
  uint64_t s = static_cast<uint64_t>(count) * elem_size;
  if (is_total_sized(op) && nranks > 0) s *= static_cast<uint64_t>(nranks);
  return s;
}

namespace {
struct Type {
  const char* name;
  size_t size;
};
// By ncclDataType_t value (nccl.h, NCCL 2.28).
constexpr Type kTypes[] = {{"int8", 1},    {"uint8", 1},    {"int32", 4},    {"uint32", 4},
                           {"int64", 8},   {"uint64", 8},   {"float16", 2},  {"float32", 4},
                           {"float64", 8}, {"bfloat16", 2}, {"fp8e4m3", 1},  {"fp8e5m2", 1}};
constexpr int kTypeCount = sizeof(kTypes) / sizeof(kTypes[0]);
}  // namespace

const char* datatype_name(int datatype) {
  return datatype >= 0 && datatype < kTypeCount ? kTypes[datatype].name : "?";
}

size_t datatype_size(int datatype) { return datatype >= 0 && datatype < kTypeCount ? kTypes[datatype].size : 0; }

}  // namespace nccl
}  // namespace gpuslack

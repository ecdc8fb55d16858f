// The collectives section's NCCL choices (collectives.h, add_algorithms):
// NCCL's profiler plugin records as AlgoProtoRows, and each CollectiveRow's
// algorithm, protocol, channels and nodes from the records of its calls.
#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "report/collectives.h"
#include "report/summary.h"

namespace gpuslack {
namespace report {
namespace {

double finite(double v) { return std::isfinite(v) && v > 0 ? v : 0; }

int bucket_of(uint64_t v) { return v ? 63 - __builtin_clzll(v) : 0; }

// The row's operation by its name (collective_op_name's inverse).
nccl::CollectiveOp row_op(const CollectiveRow& row) {
  for (int i = 0; i < nccl::kCollectiveOpCount; ++i) {
    auto op = static_cast<nccl::CollectiveOp>(i);
    if (row.op == nccl::collective_op_name(op)) return op;
  }
  return nccl::CollectiveOp::kAllReduce;
}

}  // namespace

void add_algorithms(const RunInfo& run, CollectivesSection* c) {
  const nccl::profiler::Snapshot& p = run.profiler;
  c->profiler = run.profiler_status;
  c->profiler_records = p.records;
  c->profiler_dropped = p.dropped;
  for (const nccl::profiler::Record& r : p.rows) {
    if (r.calls == 0) continue;
    AlgoProtoRow a;
    a.comm_hash = r.comm_hash;
    a.nranks = r.nranks;
    a.nnodes = r.nnodes;
    a.op = nccl::collective_op_name(r.op);
    a.bucket = r.bucket;
    a.algo = nccl::profiler::algo_name(r.algo);
    a.proto = nccl::profiler::proto_name(r.proto);
    a.calls = r.calls;
    a.channels = finite(static_cast<double>(r.channels_sum) / static_cast<double>(r.calls));
    a.gpu_s = finite(static_cast<double>(r.gpu_ns) * 1e-9);
    if (a.gpu_s > 0 && r.nranks > 0)
      a.busbw_gbps = finite(static_cast<double>(r.timed_bytes) / a.gpu_s / 1e9 * nccl::bus_factor(r.op, r.nranks));
    c->algorithms.push_back(std::move(a));
  }
  std::stable_sort(c->algorithms.begin(), c->algorithms.end(),
                   [](const AlgoProtoRow& x, const AlgoProtoRow& y) { return x.calls > y.calls; });
  // Each ledger row takes the choice of most of its calls: the records of
  // its op and size bucket on communicators of its size. v1-v3 records do
  // not know the size (nranks 0): they match any, by the bucket of one
  // rank's bytes (profiler_records.h sizes them as on one rank).
  for (CollectiveRow& row : c->rows) {
    std::map<std::pair<std::string, std::string>, uint64_t> mix;
    uint64_t calls = 0, channels = 0;
    int nnodes = 0;
    const uint64_t per_call = row.count > 0 ? row.bytes / row.count : 0;
    const uint64_t one_rank = row.nranks > 1 && nccl::collective_bytes(row_op(row), 1, 1, 2) == 2
                                  ? per_call / static_cast<uint64_t>(row.nranks)
                                  : per_call;
    for (const nccl::profiler::Record& r : p.rows) {
      if (r.calls == 0 || row.op != nccl::collective_op_name(r.op)) continue;
      if (r.nranks != 0 && row.nranks != 0 && r.nranks != row.nranks) continue;
      if (r.nranks != 0 ? row.bucket != r.bucket : bucket_of(one_rank) != r.bucket) continue;
      mix[{nccl::profiler::algo_name(r.algo), nccl::profiler::proto_name(r.proto)}] += r.calls;
      calls += r.calls;
      channels += r.channels_sum;
      nnodes = std::max(nnodes, r.nnodes);
    }
    if (calls == 0) continue;
    auto most = std::max_element(mix.begin(), mix.end(),
                                 [](const auto& x, const auto& y) { return x.second < y.second; });
    row.algo = most->first.first;
    row.proto = most->first.second;
    row.channels = finite(static_cast<double>(channels) / static_cast<double>(calls));
    row.nnodes = nnodes;
  }
}

}  // namespace report
}  // namespace gpuslack

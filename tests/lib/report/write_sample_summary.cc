// Writes JSON summaries for the ctests that validate them against
// docs/summary.schema.json:
//   argv[1]: the sample summary (sample_summary.h: every optional part
//            filled, the GPU timeline included, strings that need escaping),
//            with a collectives row carrying the cost model's expectation;
//   argv[2]: optional, the summary build_summary() makes when no thread made
//            a hooked call (worst_thread null, empty arrays).
#include <cstdio>
#include <string>

#include "report/json.h"
#include "sample_summary.h"

namespace {

bool write(const char* path, const std::string& json) {
  std::FILE* out = std::fopen(path, "wb");
  if (out == nullptr) {
    std::perror(path);
    return false;
  }
  bool ok = std::fwrite(json.data(), 1, json.size(), out) == json.size();
  ok = std::fclose(out) == 0 && ok;
  if (!ok) std::perror(path);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gpuslack::report;
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: %s SAMPLE.json [EMPTY.json]\n", argv[0]);
    return 2;
  }
  Summary sample = testing_sample::sample_summary_with_gpu_timeline();
  sample.collectives.present = true;
  CollectiveRow row;
  row.op = "all-reduce";
  row.datatype = "float32";
  row.bucket = 28;
  row.nranks = 8;
  row.count = row.timed = 10;
  row.bytes = 10ull << 28;
  row.gpu_s = 0.118;
  row.busbw_gbps = 40;
  row.algbw_gbps = 22.9;
  row.expected_busbw_gbps = 40.1;
  row.expected_from = "within a node: measured: NVML; between nodes: knob: fabric=ib400; 2 nodes x 4 ranks (NCCL)";
  row.best_algo = "Tree";
  row.best_proto = "Simple";
  row.best_channels = 4;
  row.best_time_s = 0.0041;
  row.chosen_time_s = 0.0118;
  sample.collectives.rows.push_back(row);
  if (!write(argv[1], format_json(sample))) return 1;
  if (argc == 3) {
    RunInfo run;
    run.reason = "exit";
    run.tick_seconds = 1e-9;
    if (!write(argv[2], format_json(build_summary({}, run)))) return 1;
  }
  return 0;
}

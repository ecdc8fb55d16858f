// The replay event stream: what bench/replay/trace_events.py writes from a
// PyTorch snapshot, an RMM log or a minimalloc problem, read back for
// bench/trace_replay. The format's definition is that script's docstring;
// in short:
//   # gpuslack-events 1
//   # <key> <value>          header lines (name, source, pytorch_peak_reserved, ...)
//   a <id> <size> <stream>   allocate; ids 0, 1, 2, ... in order, never reused
//   f <id>                   free a live block
//
// read_trace() checks what the replayer relies on (ids in order, frees of
// live blocks only, each block freed at most once) so that a replay never
// meets a malformed event; a file that breaks it is refused with one line.
//
// Plain data, no CUDA, no state: call it from any thread.
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpuslack {
namespace bench {

struct Event {
  enum Kind : uint8_t { kAlloc, kFree };
  Kind kind;
  uint64_t id;
  uint64_t size;    // kAlloc only
  uint64_t stream;  // kAlloc only: the cudaStream_t the trace recorded, as an integer
};

struct Trace {
  std::string name;
  std::map<std::string, std::string> header;  // every "# key value" line but the first
  std::vector<Event> events;
  uint64_t blocks = 0;  // ids used: 0 .. blocks-1
  // What the trace records about PyTorch's caching allocator; absent for
  // traces that do not record it (RMM logs, minimalloc problems).
  std::optional<uint64_t> pytorch_peak_reserved;
};

// Reads a whole stream into `out`. False on a malformed stream, with
// `error` set to one line ("line N: what is wrong").
bool read_trace(std::istream& in, Trace* out, std::string* error);

}  // namespace bench
}  // namespace gpuslack

#include "event_stream.h"

#include <sstream>

namespace gpuslack {
namespace bench {
namespace {

// A whole unsigned decimal number, nothing else.
bool parse_u64(const std::string& s, uint64_t* v) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t x = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    uint64_t next = x * 10 + static_cast<uint64_t>(c - '0');
    if (next / 10 != x) return false;  // overflow
    x = next;
  }
  *v = x;
  return true;
}

}  // namespace

bool read_trace(std::istream& in, Trace* out, std::string* error) {
  *out = Trace{};
  std::string line;
  size_t n = 0;
  auto fail = [&](const std::string& why) {
    *error = "line " + std::to_string(n) + ": " + why;
    return false;
  };
  std::vector<bool> live;  // by id
  bool in_events = false;
  while (std::getline(in, line)) {
    ++n;
    if (n == 1) {
      if (line != "# gpuslack-events 1") return fail("not a gpuslack event stream (bench/replay/trace_events.py makes one)");
      continue;
    }
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (in_events) return fail("a header line after the first event");
      std::istringstream fields(line.substr(1));
      std::string key, value;
      fields >> key;
      std::getline(fields >> std::ws, value);
      if (key.empty()) return fail("an empty header line");
      out->header[key] = value;
      continue;
    }
    in_events = true;
    std::istringstream fields(line);
    std::string kind, a, b, c, extra;
    fields >> kind >> a >> b >> c >> extra;
    Event e{};
    if (kind == "a") {
      e.kind = Event::kAlloc;
      if (!extra.empty() || !parse_u64(a, &e.id) || !parse_u64(b, &e.size) || !parse_u64(c, &e.stream))
        return fail("an allocation is 'a <id> <size> <stream>'");
      if (e.id != out->blocks) return fail("block ids must be 0, 1, 2, ... in order");
      ++out->blocks;
      live.push_back(true);
    } else if (kind == "f") {
      e.kind = Event::kFree;
      if (!b.empty() || !parse_u64(a, &e.id)) return fail("a free is 'f <id>'");
      if (e.id >= live.size() || !live[e.id]) return fail("a free of block " + a + ", which is not live");
      live[e.id] = false;
    } else {
      return fail("unknown record '" + kind + "'");
    }
    out->events.push_back(e);
  }
  if (n == 0) return fail("empty file");
  auto name = out->header.find("name");
  out->name = name == out->header.end() ? "?" : name->second;
  auto peak = out->header.find("pytorch_peak_reserved");
  if (peak != out->header.end()) {
    uint64_t v = 0;
    if (!parse_u64(peak->second, &v)) {
      *error = "header: pytorch_peak_reserved is not a number";
      return false;
    }
    out->pytorch_peak_reserved = v;
  }
  return true;
}

}  // namespace bench
}  // namespace gpuslack

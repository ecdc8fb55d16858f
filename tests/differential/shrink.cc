// See shrink.h.
#include "shrink.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

extern char** environ;

namespace differential {
namespace {

struct Outcome {
  int status = 0;         // 0: equal
  std::string signature;  // of the first difference, or how the child died
  bool failed() const { return status != 0; }
};

std::string quote(const std::string& s) {
  if (s.find_first_of(" ;'\"*?$&|<>()") == std::string::npos) return s;
  return "'" + s + "'";
}

// Runs the harness on `seed` (a subset of it when `spec` is not empty) in
// a child; its output goes to /dev/null when `quiet`.
Outcome run_child(const Supervisor& sup, uint64_t seed, const std::string& spec, bool quiet) {
  char path[] = "/tmp/differential-signature-XXXXXX";
  int fd = mkstemp(path);
  if (fd >= 0) close(fd);
  std::vector<std::string> args = sup.args;
  args.push_back("--seed");
  args.push_back(std::to_string(seed));
  if (!spec.empty()) {
    args.push_back("--subset");
    args.push_back(spec);
  }
  args.push_back("--signature-file");
  args.push_back(path);
  if (quiet) args.push_back("--quiet");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) {
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  }
  Outcome out;
  pid_t pid;
  std::fflush(stdout);
  std::fflush(stderr);
  if (posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ) != 0) {
    out.status = 2;
    out.signature = "cannot start";
  } else {
    int ws = 0;
    waitpid(pid, &ws, 0);
    std::ifstream f(path);
    std::getline(f, out.signature);
    if (WIFSIGNALED(ws)) {
      out.status = 128 + WTERMSIG(ws);
      out.signature = "signal " + std::to_string(WTERMSIG(ws));
    } else {
      out.status = WEXITSTATUS(ws);
      if (out.status != 0 && out.signature.empty()) out.signature = "exit " + std::to_string(out.status);
    }
  }
  posix_spawn_file_actions_destroy(&actions);
  unlink(path);
  return out;
}

size_t count_kept(const std::vector<std::vector<bool>>& keep) {
  size_t n = 0;
  for (const auto& t : keep)
    for (bool k : t) n += k;
  return n;
}

bool allocates(OpKind k) {
  return k == OpKind::kMalloc || k == OpKind::kMallocAsync || k == OpKind::kMallocFromPool ||
         k == OpKind::kMallocPitch || k == OpKind::kMalloc3D || k == OpKind::kMallocManaged ||
         k == OpKind::kMallocHost || k == OpKind::kHostAlloc || k == OpKind::kPageable;
}

// The ops of a shrunk thread that matter to a reader: those kept, the
// initializations of buffers they allocate, and the synchronizations
// between the first and the last of them.
void print_thread(const ThreadProgram& tp, size_t t) {
  long first = -1, last = -1;
  for (size_t i = 0; i < tp.ops.size(); ++i)
    if (droppable(tp.ops[i])) {
      if (first < 0) first = static_cast<long>(i);
      last = static_cast<long>(i);
    }
  if (first < 0) return;  // synchronizations only
  std::set<int> allocated;
  for (size_t i = 0; i < tp.ops.size(); ++i) {
    const Op& op = tp.ops[i];
    bool show = droppable(op);
    if (op.kind == OpKind::kInit) show = allocated.count(op.dst.slot) > 0 && static_cast<long>(i) < last;
    else if (!show && op.kind != OpKind::kBarrier && op.kind != OpKind::kStreamCreate &&
             op.kind != OpKind::kStreamDestroy)
      show = static_cast<long>(i) > first && static_cast<long>(i) < last;
    if (allocates(op.kind)) allocated.insert(op.dst.slot);
    if (op.kind == OpKind::kFree || op.kind == OpKind::kDoubleFree) allocated.erase(op.dst.slot);
    if (show) std::printf("  t%zu #%zu %s\n", t, tp.origin_of(i), describe(op).c_str());
  }
}

}  // namespace

bool droppable(const Op& op) {
  switch (op.kind) {
    case OpKind::kStreamCreate:
    case OpKind::kStreamDestroy:
    case OpKind::kStreamSync:
    case OpKind::kDeviceSync:
    case OpKind::kEventSync:
    case OpKind::kInit:
    case OpKind::kBarrier:
      return false;
    default:
      return true;
  }
}

std::string encode_subset(const std::vector<std::vector<bool>>& keep) {
  std::string s;
  for (size_t t = 0; t < keep.size(); ++t) {
    std::string ranges;
    for (size_t i = 0; i < keep[t].size(); ++i) {
      if (!keep[t][i]) continue;
      size_t j = i;
      while (j + 1 < keep[t].size() && keep[t][j + 1]) ++j;
      ranges += (ranges.empty() ? "" : ",") + std::to_string(i) + (j > i ? "-" + std::to_string(j) : "");
      i = j;
    }
    s += (s.empty() ? "" : ";") + std::to_string(t) + ":" + ranges;
  }
  return s;
}

bool apply_subset(const std::string& spec, Program* program) {
  std::map<size_t, std::set<size_t>> kept;
  std::stringstream threads(spec);
  std::string part;
  while (std::getline(threads, part, ';')) {
    size_t colon = part.find(':');
    if (colon == std::string::npos) return false;
    char* end = nullptr;
    const size_t t = std::strtoul(part.c_str(), &end, 10);
    if (end != part.c_str() + colon) return false;
    std::set<size_t>& ks = kept[t];
    std::stringstream ranges(part.substr(colon + 1));
    std::string r;
    while (std::getline(ranges, r, ',')) {
      size_t a = std::strtoul(r.c_str(), &end, 10), b = a;
      if (*end == '-') b = std::strtoul(end + 1, &end, 10);
      if (*end || b < a) return false;
      for (size_t i = a; i <= b; ++i) ks.insert(i);
    }
  }
  for (size_t t = 0; t < program->threads.size(); ++t) {
    ThreadProgram& tp = program->threads[t];
    ThreadProgram out;
    for (size_t i = 0; i < tp.ops.size(); ++i) {
      if (droppable(tp.ops[i]) && !(kept.count(t) && kept[t].count(i))) continue;
      out.ops.push_back(tp.ops[i]);
      out.origin.push_back(static_cast<uint32_t>(i));
    }
    tp = std::move(out);
  }
  return true;
}

int supervise(const Supervisor& sup, const Program& program) {
  const uint64_t seed = program.seed;
  const Outcome first = run_child(sup, seed, "", false);
  if (!first.failed()) return 0;
  if (first.status == 2 && first.signature == "cannot start") return 2;

  const auto t0 = std::chrono::steady_clock::now();
  auto in_budget = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < sup.budget_s;
  };
  std::vector<std::vector<bool>> keep(program.threads.size());
  for (size_t t = 0; t < keep.size(); ++t)
    for (const Op& op : program.threads[t].ops) keep[t].push_back(droppable(op));
  const size_t total = count_kept(keep);
  int runs = 0;
  auto still_fails = [&](const std::vector<std::vector<bool>>& k) {
    ++runs;
    const Outcome o = run_child(sup, seed, encode_subset(k), true);
    return o.failed() && o.signature == first.signature;
  };

  // Where it failed: "thread T op I ..." (else a barrier, the end, or a crash).
  long ft = -1, fi = -1;
  std::sscanf(first.signature.c_str(), "thread %ld op %ld", &ft, &fi);
  if (ft >= 0 && static_cast<size_t>(ft) < keep.size()) {
    auto trial = keep;
    for (size_t t = 0; t < trial.size(); ++t)
      for (size_t i = 0; i < trial[t].size(); ++i)
        if (static_cast<long>(t) != ft || static_cast<long>(i) > fi) trial[t][i] = false;
    if (fi >= 0 && static_cast<size_t>(fi) < trial[ft].size()) trial[ft][fi] = keep[ft][fi];
    if (in_budget() && still_fails(trial)) keep = trial;
  }
  // Delta debugging over what is left, the failing op itself excepted.
  std::vector<std::pair<size_t, size_t>> candidates;
  auto collect = [&] {
    candidates.clear();
    for (size_t t = 0; t < keep.size(); ++t)
      for (size_t i = 0; i < keep[t].size(); ++i)
        if (keep[t][i] && !(static_cast<long>(t) == ft && static_cast<long>(i) == fi)) candidates.emplace_back(t, i);
  };
  collect();
  for (size_t chunk = std::max<size_t>(1, candidates.size() / 2); chunk >= 1 && in_budget(); chunk /= 2) {
    for (size_t start = 0; start < candidates.size() && in_budget();) {
      auto trial = keep;
      const size_t end = std::min(candidates.size(), start + chunk);
      for (size_t c = start; c < end; ++c) trial[candidates[c].first][candidates[c].second] = false;
      if (still_fails(trial)) {
        keep = trial;
        candidates.erase(candidates.begin() + static_cast<long>(start), candidates.begin() + static_cast<long>(end));
      } else {
        start = end;
      }
    }
    if (chunk == 1) break;
  }

  const std::string spec = encode_subset(keep);
  Program shrunk = program;
  apply_subset(spec, &shrunk);
  std::printf("\ndifferential: SHRUNK seed %llu from %zu droppable ops to %zu in %d runs (%s); the program:\n",
              static_cast<unsigned long long>(seed), total, count_kept(keep), runs,
              in_budget() ? "minimal for single drops" : "time budget spent");
  for (size_t t = 0; t < shrunk.threads.size(); ++t) print_thread(shrunk.threads[t], t);
  std::string cmd;
  for (const std::string& a : sup.args) cmd += (cmd.empty() ? "" : " ") + quote(a);
  std::printf("differential: rerun it: %s --seed %llu --subset %s\n", cmd.c_str(), static_cast<unsigned long long>(seed),
              quote(spec).c_str());
  std::printf("differential: the shrunk program's own run:\n");
  run_child(sup, seed, spec, false);
  return first.status;
}

}  // namespace differential

// gpuslack_differential: the differential harness of issue 11 ("Do no
// harm"). It drives random runtime traffic, valid and invalid, from several
// threads on several streams, once against the simulated runtime alone and
// once through gpuslack's hooks in one configuration, and compares every
// return code, last error, errno, byte of memory and, at barriers, free
// device memory (compare.h has the rules). About one op in seven goes
// through the driver API instead (issue 18): the runtime's memsets, copies
// and synchronizations made as cuMemsetD8/D32, cuMemcpyHtoD/DtoH/DtoD (and
// Async, _ptds/_ptsz), cuStreamSynchronize and cuCtxSynchronize, and
// self-contained cuMemAlloc_v2/cuMemFree_v2 and VMM rounds (cuMemCreate,
// cuMemAddressReserve, cuMemMap, cuMemSetAccess, cuMemUnmap, cuMemRelease),
// valid and invalid (NULL, freed, interior and bogus pointers, ranges past
// the end, bogus streams and handles); generator_driver.cc, executor_driver.cc.
//
//   gpuslack_differential --mode vmm --seeds 1-3            (what CI runs, per mode)
//   gpuslack_differential --mode all --random --duration 600 (the long run:
//       bench target differential_fuzz; each mode in a process of its own)
//   gpuslack_differential --mode default --seed 7 --print-program
//   gpuslack_differential --mode vmm --seed 7 --shrink  (a failing seed, shrunk: shrink.h)
//
// Modes: default (GPUSLACK_CONF empty), vmm (allocator:vmm), async_d2h
// (async_d2h:true), exact (exact_copy_semantics:true); --conf adds keys.
//
// Why one process per mode, and both runs in it. gpuslack reads its
// configuration once per process, so a mode is a process. Within it, the
// test links the simulated runtime and dlopen()s libgpuslack.so
// (tests/interpose/in_process.h): every hooked symbol is reachable as the
// runtime's own function and as gpuslack's hook, and a seed's program runs
// first through the one, then through the other. That is sound because the
// runtime's run leaves nothing behind that the hooked run could see: every
// buffer is freed, every stream synchronized and destroyed, and its threads
// (whose per-thread streams and last errors are theirs) have exited;
// between seeds gpuslack_trim gives back what the VMM allocator cached, so
// each runtime run starts from the whole device. Addresses differ between
// the runs, and nothing compared depends on them. Running in one process
// also lets the hooked run compare op by op and stop at the first
// difference, before a diverged state can crash it; if it crashes anyway
// (an overrunning copy can), crash_report.h names each thread's op.
//
// What is not compared (each a documented difference, skipped in both runs):
//   - under allocator:vmm, cudaFree of cudaMallocAsync memory / cudaFreeAsync
//     of cudaMalloc memory, and cudaIpcGetMemHandle of cudaMallocAsync
//     memory: the simulated runtime refuses them, the VMM allocator (one
//     heap for both) accepts them, and real CUDA allows at least the first
//     (an NVIDIA engineer in cupy/cupy#4537);
//   - IPC across processes: a seed's two runs share one process, and a
//     handle opens only in another (in its own process both refuse it,
//     which is compared); tests/interpose/programs/ipc_app.cc runs the
//     cases between two processes, under gpuslack and without it on the
//     importer's side, and tests/simcuda/tests/ipc_process_test.cc the
//     runtime's own;
//   - under allocator:vmm, driver copies and memsets (cuMemcpy*, cuMemsetD*)
//     whose device range runs past the end of a runtime allocation: inside
//     one of the VMM allocator's blocks the driver sees a mapped range and
//     succeeds (interpose/driver_hook_table.h: mixing the two APIs on one
//     pointer is not supported under allocator:vmm; generator_driver.cc);
//   - copies and memsets past the end of a pinned block: the simulated
//     runtime refuses them, gpuslack's pinned heap (whose blocks lie inside
//     its chunks) does not, and no point of issue 11 covers them yet; off
//     by default, --pinned-overruns generates them.
//
// Determinism: each thread owns its buffers and streams, the generator
// orders every cross-stream and host use (Note [Ordering the generator
// keeps], generator.h), and the ops never let the runtime touch memory it
// could fault on (Note [What an op may ask the runtime to touch],
// program.h). --check-harness runs the runtime's own run twice and
// compares the two (and nothing else): the harness's own test.
#include <dlfcn.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "compare.h"
#include "crash_report.h"
#include "executor.h"
#include "generator.h"
#include "in_process.h"
#include "shrink.h"

extern char** environ;

namespace differential {
namespace {

struct Mode {
  const char* name;
  const char* conf;
};
constexpr Mode kModes[] = {
    {"default", ""},
    {"vmm", "allocator:vmm"},
    {"async_d2h", "async_d2h:true"},
    {"exact", "exact_copy_semantics:true"},
};

struct Options {
  std::string mode = "default";
  std::string extra_conf;
  std::vector<uint64_t> seeds;
  bool random = false;
  double duration_s = 0;
  Shape shape;
  bool check_harness = false;
  bool print_program = false;
  bool quiet = false;
  bool keep_going = false;  // report every difference, not only the first (the run may then crash)
  bool shrink = false;      // run each seed in a child and shrink a failure (shrink.h)
  double shrink_budget_s = 90;
  std::string subset;          // run only this subset of each seed's program (shrink.h)
  std::string signature_file;  // where a failing run writes its first difference's signature
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "gpuslack_differential: %s\n"
               "usage: gpuslack_differential [--mode default|vmm|async_d2h|exact|all] [--conf k:v,...]\n"
               "         [--seed N | --seeds A-B | --seeds A,B,C | --random [--duration S]]\n"
               "         [--threads N] [--slots N] [--ops N] [--phases N] [--check-harness] [--print-program] "
               "[--quiet] [--keep-going] [--pinned-overruns]\n"
               "         [--shrink [--shrink-budget S]] [--subset SPEC]\n",
               why);
  std::exit(2);
}

uint64_t number(const char* s) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (!s[0] || *end) usage("not a number");
  return v;
}

std::vector<uint64_t> parse_seeds(const std::string& s) {
  std::vector<uint64_t> out;
  size_t dash = s.find('-');
  if (dash != std::string::npos) {
    uint64_t a = number(s.substr(0, dash).c_str()), b = number(s.substr(dash + 1).c_str());
    for (uint64_t x = a; x <= b; ++x) out.push_back(x);
    return out;
  }
  size_t at = 0;
  while (at <= s.size()) {
    size_t comma = s.find(',', at);
    out.push_back(number(s.substr(at, comma - at).c_str()));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage("missing value");
      return argv[++i];
    };
    if (a == "--mode") o.mode = value();
    else if (a == "--conf") o.extra_conf = value();
    else if (a == "--seed" || a == "--seeds") o.seeds = parse_seeds(value());
    else if (a == "--random") o.random = true;
    else if (a == "--duration") o.duration_s = static_cast<double>(number(value()));
    else if (a == "--threads") o.shape.threads = static_cast<int>(number(value()));
    else if (a == "--slots") o.shape.slots = static_cast<int>(number(value()));
    else if (a == "--ops") o.shape.ops = static_cast<int>(number(value()));
    else if (a == "--phases") o.shape.phases = static_cast<int>(number(value()));
    else if (a == "--check-harness") o.check_harness = true;
    else if (a == "--print-program") o.print_program = true;
    else if (a == "--quiet") o.quiet = true;
    else if (a == "--keep-going") o.keep_going = true;
    else if (a == "--pinned-overruns") o.shape.pinned_overruns = true;
    else if (a == "--shrink") o.shrink = true;
    else if (a == "--shrink-budget") o.shrink_budget_s = static_cast<double>(number(value()));
    else if (a == "--subset") o.subset = value();
    else if (a == "--signature-file") o.signature_file = value();
    else usage(("unknown argument " + a).c_str());
  }
  if (o.shape.threads < 1 || o.shape.threads > 32 || o.shape.slots < 1 || o.shape.slots > 100 || o.shape.phases < 1)
    usage("shape out of range (threads 1-32, slots 1-100, phases >= 1)");
  if (o.seeds.empty() && !o.random) o.seeds = {1};
  return o;
}

const Mode* find_mode(const std::string& name) {
  for (const Mode& m : kModes)
    if (name == m.name) return &m;
  return nullptr;
}

// --mode all: each mode in a process of its own (the configuration is read
// once per process); the first failure's status is the result.
int run_all_modes(int argc, char** argv) {
  int status = 0;
  for (const Mode& m : kModes) {
    std::vector<std::string> args = {argv[0]};
    for (int i = 1; i < argc; ++i) {
      if (std::string(argv[i]) == "--mode") {
        ++i;
        continue;
      }
      args.push_back(argv[i]);
    }
    args.push_back("--mode");
    args.push_back(m.name);
    std::vector<char*> cargs;
    for (std::string& s : args) cargs.push_back(s.data());
    cargs.push_back(nullptr);
    pid_t pid;
    if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, cargs.data(), environ) != 0) return 2;
    int ws = 0;
    waitpid(pid, &ws, 0);
    const int rc = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    std::printf("differential: mode %s: %s\n", m.name, rc == 0 ? "equal" : "DIFFERENT (see above)");
    if (rc && !status) status = rc;
  }
  return status;
}

std::string rerun_line(const Options& o, uint64_t seed) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "gpuslack_differential --mode %s%s%s%s --seed %llu --threads %d --slots %d --ops %d --phases %d",
                o.mode.c_str(), o.extra_conf.empty() ? "" : " --conf '", o.extra_conf.c_str(),
                o.extra_conf.empty() ? "" : "'", static_cast<unsigned long long>(seed), o.shape.threads,
                o.shape.slots, o.shape.ops, o.shape.phases);
  std::string s = buf;
  if (o.shape.pinned_overruns) s += " --pinned-overruns";
  if (!o.subset.empty()) s += " --subset '" + o.subset + "'";
  else s += " (add --shrink for a smaller program)";
  return s;
}

// How much the runtime's run exercised: ops run, and those it refused.
std::string coverage(const Program& p, const Trace& t) {
  size_t ops = 0, refused = 0, skipped = 0;
  for (size_t th = 0; th < p.threads.size(); ++th)
    for (size_t i = 0; i < p.threads[th].ops.size(); ++i) {
      if (p.threads[th].ops[i].kind == OpKind::kBarrier) continue;
      const Result& r = t.threads[th][i];
      ++ops;
      skipped += r.skipped;
      refused += !r.skipped && r.rc != 0;
    }
  return std::to_string(ops) + " ops, " + std::to_string(refused) + " refused by the runtime, " +
         std::to_string(skipped) + " skipped";
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool g_any_failed = false;  // --keep-going: some seed differed

struct Apis {
  Api runtime, hooks;
  void* gpuslack = nullptr;
};

// One seed: the runtime's run, then the hooked one compared against it.
bool run_seed(const Options& o, const Apis& apis, bool vmm, uint64_t seed) {
  Program program = generate(o.shape, seed);
  if (!o.subset.empty() && !apply_subset(o.subset, &program)) usage("bad --subset");
  std::vector<std::vector<std::string>> descriptions;
  for (const ThreadProgram& t : program.threads) {
    descriptions.emplace_back();
    for (const Op& op : t.ops) descriptions.back().push_back(describe(op));
  }
  if (o.print_program)
    for (size_t t = 0; t < descriptions.size(); ++t)
      for (size_t i = 0; i < descriptions[t].size(); ++i)
        std::printf("t%zu #%zu %s\n", t, program.threads[t].origin_of(i), descriptions[t][i].c_str());
  const std::string how = rerun_line(o, seed);

  RunConfig native;
  native.api = &apis.runtime;
  native.vmm = vmm;
  native.label = "runtime alone";
  auto t0 = std::chrono::steady_clock::now();
  crash_report::begin("runtime alone", seed, &descriptions);
  const Trace reference = execute(program, native, nullptr);
  crash_report::end();
  const double native_s = seconds_since(t0);

  if (o.check_harness) {
    crash_report::begin("runtime alone, again", seed, &descriptions);
    Comparator again(program, reference, "no: the runtime's own run, twice", how + " --check-harness");
    RunConfig second = native;
    second.reference = &reference;
    second.check = [&](int t, size_t i, const Result& r) { return again.op(t, i, r); };
    second.check_global = [&](size_t b, const GlobalResult& g) { return again.global(b, g); };
    Trace twice = execute(program, second, nullptr);
    again.finish(twice);
    crash_report::end();
    if (again.failed()) {
      std::fprintf(stderr, "differential: THE HARNESS IS NOT DETERMINISTIC (the runtime's own run differs from itself):\n%s",
                   again.report().c_str());
      return false;
    }
    if (!o.quiet)
      std::printf("differential: seed %llu: the runtime's own run, twice, the same (%s)\n",
                  static_cast<unsigned long long>(seed), coverage(program, reference).c_str());
    return true;  // the harness's own check: gpuslack is not involved
  }

  Comparator cmp(program, reference, o.mode + (o.extra_conf.empty() ? "" : "," + o.extra_conf), how);
  RunConfig hooked;
  hooked.api = &apis.hooks;
  hooked.vmm = vmm;
  hooked.reference = &reference;
  hooked.label = "gpuslack";
  hooked.check = [&](int t, size_t i, const Result& r) { return cmp.op(t, i, r) || o.keep_going; };
  hooked.check_global = [&](size_t b, const GlobalResult& g) { return cmp.global(b, g) || o.keep_going; };
  t0 = std::chrono::steady_clock::now();
  crash_report::begin("gpuslack (" + o.mode + ")", seed, &descriptions);
  bool stopped = false;
  const Trace trace = execute(program, hooked, &stopped);
  crash_report::end();
  if (!stopped) cmp.finish(trace);
  const double hooked_s = seconds_since(t0);
  if (cmp.failed()) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s", cmp.report().c_str());
    if (!o.signature_file.empty())
      if (FILE* f = std::fopen(o.signature_file.c_str(), "w")) {
        std::fprintf(f, "%s\n", cmp.signature().c_str());
        std::fclose(f);
      }
    g_any_failed = true;
    if (!o.keep_going) return false;
  }
  if (!o.quiet && !cmp.failed())
    std::printf("differential: mode %s, seed %llu: equal (%s; %.2f s alone, %.2f s under gpuslack)\n", o.mode.c_str(),
                static_cast<unsigned long long>(seed), coverage(program, reference).c_str(), native_s, hooked_s);
  // What the VMM allocator cached goes back: the next runtime run starts
  // from the whole device.
  auto trim = reinterpret_cast<unsigned long long (*)(int)>(dlsym(apis.gpuslack, "gpuslack_trim"));
  cudaDeviceSynchronize();
  if (trim) trim(-1);
  cudaGetLastError();
  return true;
}

// --shrink: every seed in a child (supervise(), shrink.h), this process
// running no CUDA itself.
int supervise_seeds(const Options& o, int argc, char** argv) {
  Supervisor sup;
  sup.budget_s = o.shrink_budget_s;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seed" || a == "--seeds" || a == "--shrink-budget" || a == "--duration") {
      ++i;
      continue;
    }
    if (a == "--shrink" || a == "--random") continue;
    sup.args.push_back(a);
  }
  std::vector<uint64_t> seeds = o.seeds;
  uint64_t next = 0;
  if (o.random) {
    std::random_device rd;
    next = (static_cast<uint64_t>(rd()) << 20) ^ rd();
  }
  const auto t0 = std::chrono::steady_clock::now();
  size_t runs = 0;
  for (size_t k = 0;; ++k) {
    uint64_t seed;
    if (o.random) {
      if (k > 0 && seconds_since(t0) >= o.duration_s) break;
      seed = next++;
    } else {
      if (k >= seeds.size()) break;
      seed = seeds[k];
    }
    if (int rc = supervise(sup, generate(o.shape, seed))) return rc;
    ++runs;
  }
  std::printf("differential: mode %s: every seed equal (%zu seeds, %.1f s)\n", o.mode.c_str(), runs,
              seconds_since(t0));
  return 0;
}

}  // namespace
}  // namespace differential

int main(int argc, char** argv) {
  using namespace differential;
  Options o = parse(argc, argv);
  if (o.mode == "all") return run_all_modes(argc, argv);
  if (o.shrink) return supervise_seeds(o, argc, argv);
  const Mode* mode = find_mode(o.mode);
  if (!mode) usage("unknown mode");
  // Quiet: the summary is not looked at, and the allocator's out-of-memory
  // warnings for the impossible sizes the programs ask for would drown a report.
  std::string conf = "text_summary:off,json_summary:false,log_level:error";
  if (*mode->conf) conf += std::string(",") + mode->conf;
  if (!o.extra_conf.empty()) conf += "," + o.extra_conf;
  const bool vmm = conf.find("allocator:vmm") != std::string::npos;
  setvbuf(stdout, nullptr, _IOLBF, 0);

  Apis apis;
  apis.gpuslack = in_process::gpuslack(conf.c_str());
  if (!apis.runtime.load(dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD)) || !apis.hooks.load(apis.gpuslack) ||
      !apis.runtime.load_driver(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)) ||
      !apis.hooks.load_driver(apis.gpuslack)) {
    std::fprintf(stderr, "gpuslack_differential: cannot load the runtime or libgpuslack.so: %s\n", dlerror());
    return 2;
  }
  crash_report::install();

  const auto t0 = std::chrono::steady_clock::now();
  if (o.random) {
    std::random_device rd;
    uint64_t seed = (static_cast<uint64_t>(rd()) << 20) ^ rd();
    std::printf("differential: random seeds from %llu\n", static_cast<unsigned long long>(seed));
    do {
      if (!run_seed(o, apis, vmm, seed++)) _exit(1);
    } while (seconds_since(t0) < o.duration_s);
  } else {
    for (uint64_t seed : o.seeds)
      if (!run_seed(o, apis, vmm, seed)) {
        std::fflush(stdout);
        std::fflush(stderr);
        _exit(1);  // the hooked run stopped mid-way: no orderly teardown of its state
      }
  }
  if (g_any_failed) return 1;
  if (!o.quiet) std::printf("differential: mode %s: every seed equal (%.1f s)\n", o.mode.c_str(), seconds_since(t0));
  return 0;
}

#include "session/session.h"

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <new>

#include "absl/strings/str_format.h"
#include "alloc/block_ipc.h"
#include "alloc/process_allocators.h"
#include "config/options.h"
#include "cuda/driver_api.h"
#include "cuda/driver_context.h"
#include "cuda/loader_section.h"
#include "cuda/nccl_api.h"
#include "findings/findings.h"
#include "base/clock.h"
#include "base/time_buckets.h"
#include "health/sampler.h"
#include "topology/topology.h"
#include "nccl/collectives.h"
#include "nccl/communicators.h"
#include "nccl/profiler_enable.h"
#include "nccl/profiler_records.h"
#include "ledger/host_activity.h"
#include "ledger/ledger.h"
#include "log/log.h"
#include "nvtx/ranges.h"
#include "pin/process_heap.h"
#include "stage/staged_copy.h"
#include "report/json.h"
#include "report/output.h"
#include "report/prometheus.h"
#include "report/summary.h"
#include "session/signals.h"
#include "sync/event_pool.h"
#include "timeline/timeline.h"

namespace gpuslack {
namespace session {

namespace detail {
std::atomic<bool> g_active{false};
}

namespace detail {
// Note [Last samples before the runtime's teardown].
std::atomic<bool> g_last_reads_registered{false};
}  // namespace detail

namespace {

using detail::g_last_reads_registered;

std::mutex g_start_mu;       // start()
std::mutex g_write_mu;       // one summary at a time
double g_start_seconds = 0;  // monotonic, at start
char g_started_utc[32] = {};  // ISO 8601; written under g_start_mu
std::atomic<uint64_t> g_threshold_ticks{~0ull};
std::atomic<bool> g_threshold_refined{false};
bool g_atexit_registered = false;
// Set once the summary at exit is written: a periodic summary the reporter
// thread was about to write must not replace it.
bool g_exit_written = false;
report::PeriodicFailures g_periodic_failures;  // Note [Periodic failures]; under g_write_mu
// Set in a forked child: the device allocators, pinned heap and stager it
// inherited are its parent's (their figures, and their locks, which a
// thread of the parent may have held at the fork): its summary leaves them
// out (Note [Fork]).
bool g_forked_child = false;

void format_utc_now(char (&out)[32]) {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  tm t;
  gmtime_r(&ts.tv_sec, &t);
  absl::SNPrintF(out, sizeof(out), "%04d-%02d-%02dT%02d:%02d:%02dZ", t.tm_year + 1900, t.tm_mon + 1, t.tm_mday,
                 t.tm_hour, t.tm_min, t.tm_sec);
}

// Whether a session runs, with everything start() wrote before it said so
// (g_start_seconds, g_started_utc) visible: active() alone is a relaxed
// load, for the hooks' fast path.
bool started() { return detail::g_active.load(std::memory_order_acquire); }

void at_exit() {
  hold_exit_for_signals();  // Note [A signal on another thread holds the exit back]
  if (started()) write_summary("exit");
  timeline::stop();
}

// Note [Fork]: the child of a fork (a data-loader worker, a subprocess
// about to exec) inherits our figures and our atexit handler. It must not
// write its parent's summary: it forgets everything and has no session
// until it makes a CUDA call of its own.
//
// The child has one thread, the one that forked; every other thread of the
// parent is gone, and with it whatever it was doing: a lock it held stays
// locked in the child forever, and what that lock guarded may be half
// changed. So the child handler (and whatever the child does with gpuslack
// later: a session of its own, its summary) must never take a lock another
// thread may have held, nor read what another thread may have been
// changing. It reinitializes instead: each lock the child may take is made
// anew (ledger, collectives, event pool, communicators, session, reporter,
// log), and the state they guarded is left behind unread (the ledgers move
// to a new generation: ledger::after_fork_child). Taking every lock in a
// prepare handler instead would make fork() wait for whatever holds them
// (a summary being written) and would deadlock against an allocator whose
// own prepare handler ran first and holds the malloc locks a lock holder
// needs. The handler itself takes no lock and allocates nothing: it may run
// before the process allocator's own child handler (jemalloc's, when it
// registered after us). Tests: tests/lib/session/fork_test.cc (every lock
// held by another thread at the fork) and summary_test.py
// (test_forks_under_load_never_hang: 2,000 forks with 4 threads calling).
// The VMM allocators forget the parent's in a handler of their own (See
// Note [The allocators after a fork]); the staged copies and block IPC
// likewise (See Note [The stager after a fork] and
// Note [Block IPC after a fork]).
void on_fork_child() {
  new (&g_start_mu) std::mutex();
  new (&g_write_mu) std::mutex();
  detail::g_active.store(false, std::memory_order_relaxed);
  g_exit_written = false;
  g_forked_child = true;
  log::after_fork_child();
  ledger::after_fork_child();
  ledger::after_fork_child_host_activity();
  nccl::collectives_after_fork_child();
  nccl::profiler::reset();  // atomics only: the parent's records are not the child's
  sync::events_after_fork_child();
  reporter_after_fork_child();
  timeline::after_fork_child();
  g_last_reads_registered.store(false, std::memory_order_relaxed);  // the parent's handler finds no state
  health::after_fork_child();
  topology::after_fork_child();
}

}  // namespace

namespace {

// Note [Last samples before the runtime's teardown]: the exit summary runs
// in at_exit, registered when the session started, before the CUDA runtime
// initialized and registered its own teardown: handlers run in reverse
// order, so the summary runs after that teardown, where calling CUDA is
// undefined ("using any of these interfaces ... during program initiation
// or termination (after main) will result in undefined behavior": CUDA C++
// Programming Guide, "Initialization"). So the last device health readings
// and the topology's last read (NVML, and the driver's device queries)
// are taken by a handler registered once a device is in use, from the
// reporter's tick: after the runtime made that device's context, so the
// handler runs before the runtime's teardown; the exit summary then reads
// nothing (health::take_last_samples, topology::take_last_read). A run
// that ends before the reporter's first tick (a second in) would have no
// such handler, so the hooks register it too (after_runtime_call): after
// the first runtime call that returns with a context current on its thread
// that gpuslack did not bind there (cuda::bound_by_gpuslack_on_this_thread:
// finding a context current, the runtime uses it and makes none). The
// runtime makes a thread's context, and registers its teardown, inside such
// a call; the handler registered after it runs before that teardown. A
// context an application made with the driver API (cuCtxCreate) also
// passes; there the runtime may register its teardown later still, and the
// exit summary reads after it as before. As the timeline does for CUPTI
// (Note [Stopping before CUPTI's own exit], timeline/timeline.cc).

void last_reads_at_exit() {
  health::take_last_samples();
  topology::take_last_read();
}

void register_last_reads() {
  if (g_last_reads_registered.exchange(true, std::memory_order_relaxed)) return;
  if (std::atexit(last_reads_at_exit) != 0) log::debug("device health: atexit failed; the exit summary reads last");
}

// The reporter's once-a-second work (session/signals.h): the device health
// sampler and the topology, both NVML's, never on an application thread.
void reporter_tick() {
  health::sample();
  topology::tick();
  if (!g_last_reads_registered.load(std::memory_order_relaxed) && (health::device_read() || topology::device_read()))
    register_last_reads();
}

}  // namespace

// The hooks' half of Note [Last samples before the runtime's teardown].
void detail::register_last_reads_if_runtime_ready() {
  if (!active() || g_forked_child) return;
  int saved_errno = errno;  // the application may read errno after its call
  CUcontext c = nullptr;
  const cuda::DriverApi* drv = cuda::driver();
  if (drv && drv->ctx_get_current(&c) == CUDA_SUCCESS && c && !cuda::bound_by_gpuslack_on_this_thread())
    register_last_reads();
  errno = saved_errno;
}

namespace {

// Set while this thread runs start(): NVTX's first call may load a tool
// whose initialization calls CUDA, which comes back through a hook; that
// call must not wait for the lock its own thread holds.
thread_local bool t_starting = false;
}  // namespace

void start(const ApiCall* const* calls, int n_calls) {
  if (t_starting) return;
  t_starting = true;
  struct Reset {
    ~Reset() { t_starting = false; }
  } reset;
  std::lock_guard<std::mutex> lock(g_start_mu);
  if (active()) return;
  const Options& o = options();  // first use: parses GPUSLACK_CONF, logs problems
  clock::calibrate_start();
  g_start_seconds = clock::monotonic_seconds();
  set_series_origin_ticks(clock::ticks());
  // Device health samples on the reporter thread (health/sampler.h); the
  // knob is off in a secure process (secure_options).
  const bool health_on = o.device_health != "off";
  health::configure(health_on, g_start_seconds);
  // Nothing to read at exit with the knob off: the hooks need not look for
  // the runtime's context (Note [Last samples before the runtime's teardown]).
  if (!health_on) g_last_reads_registered.store(true, std::memory_order_relaxed);
  // The topology is read once on the same tick (topology/topology.h); the
  // same knob keeps NVML out of the process.
  topology::configure(health_on);
  format_utc_now(g_started_utc);
  nvtx::set_enabled(o.nvtx);
  nccl::set_collective_timing_every(o.collective_timing_every);
  nccl::profiler::configure(o.nccl_profiler);
  for (int i = 0; i < n_calls; ++i) {
    ledger::register_call(calls[i]);
    nvtx::register_call(calls[i]);
  }
  // Until the clock is calibrated (10 ms in), assume 1 tick per ns: no real
  // tick is slower, so no call that blocked past the threshold is missed.
  g_threshold_ticks.store(static_cast<uint64_t>(o.call_site_threshold_us * 1000.0), std::memory_order_relaxed);
  g_threshold_refined.store(false, std::memory_order_relaxed);
  if (!g_atexit_registered) {
    g_atexit_registered = true;
    std::atexit(at_exit);
    pthread_atfork(nullptr, nullptr, on_fork_child);
  }
  // Before any hooked call can take their locks (base/fork_handler.h).
  stage::register_fork_handlers();
  alloc::register_block_ipc_fork_handlers();
  // A forked child starts here too: its periodic failures are its own. No
  // reporter runs yet to write it concurrently.
  g_periodic_failures = report::PeriodicFailures();
  // Metrics are written every summary interval, or every
  // kMetricsIntervalS when there is none (report/prometheus.h).
  start_reporter(o.summary_interval_s > 0 || o.prometheus_dir.empty() ? o.summary_interval_s : report::kMetricsIntervalS,
                 o.signals, health_on ? &reporter_tick : nullptr);
  timeline::start();  // per gpu_timeline; once (a forked child's is off)
  detail::g_active.store(true, std::memory_order_release);
  log::debug("session started (pid {})", static_cast<int>(getpid()));
}

uint64_t call_site_threshold_ticks() { return g_threshold_ticks.load(std::memory_order_relaxed); }

void refine_threshold() {
  if (g_threshold_refined.load(std::memory_order_relaxed)) return;
  if (clock::monotonic_seconds() - g_start_seconds < 0.010) return;
  double ticks = options().call_site_threshold_us * 1e-6 / clock::tick_seconds();
  g_threshold_ticks.store(static_cast<uint64_t>(ticks), std::memory_order_relaxed);
  g_threshold_refined.store(true, std::memory_order_relaxed);
}

namespace {

report::RunInfo run_info(const char* reason) {
  const Options& o = options();
  report::RunInfo run;
  run.reason = reason;
  run.wall_s = clock::monotonic_seconds() - g_start_seconds;
  run.started_utc = g_started_utc;
  run.tick_seconds = clock::tick_seconds();
  run.top_call_sites = o.top_call_sites;
  run.call_site_threshold_s = o.call_site_threshold_us * 1e-6;
  run.collectives = nccl::collectives_snapshot();
  run.communicators = nccl::comms_seen();
  run.profiler = nccl::profiler::snapshot();
  run.profiler_status = nccl::profiler::status();
  if (!run.collectives.rows.empty() || !run.communicators.empty()) {
    int version = 0;
    if (cuda::nccl_get_version(&version) == ncclSuccess) run.nccl_version = version;
  }
  run.collective_timing_every = o.collective_timing_every < 1 ? 1 : o.collective_timing_every;
  run.expected_busbw_gbps = o.expected_busbw_gbps;
  run.fabric = o.fabric;
  run.series_origin_ticks = series_origin_ticks();
  if (g_forked_child) return run;
  health::sample_if_ready();
  run.device_health = health::snapshot();
  topology::read_if_ready();
  run.topology = topology::snapshot();
  for (int d = 0; d < alloc::kMaxDevices; ++d) {
    alloc::DeviceAllocator* a = alloc::existing_allocator(d);
    if (!a) continue;
    report::AllocatorRun row;
    row.device = d;
    row.stats = a->stats();
    row.timeline = a->timeline();
    run.allocator.push_back(row);
  }
  run.allocator_status.selected = o.allocator;
  for (const alloc::Refusal& r : alloc::refusals()) run.allocator_status.off.push_back({r.device, r.why});
  if (const stage::Stager* st = stage::existing_stager()) {
    run.staging = st->stats();
    run.staging_present = run.staging.h2d.seen + run.staging.d2h.seen > 0;
  }
  if (pin::PinnedHeap* heap = pin::existing_pinned_heap()) {
    run.pinned_present = true;
    run.pinned = heap->stats();
  }
  run.gpu_timeline = timeline::snapshot();
  return run;
}

// Whether the process loaded PyTorch's CUDA library (the findings phrase
// their fixes for it). Summary time only. dlopen with RTLD_NOLOAD answers a
// handle only for an object already loaded (matched by its soname too) and
// loads nothing. Walking the loaded objects with dl_iterate_phdr read each
// one's name while another thread's dlopen (the timeline's of CUPTI) could
// be publishing it, under the loader's own lock that ThreadSanitizer does
// not see: a reported race on every such overlap.
bool libtorch_loaded() {
  void* handle = nullptr;
  {
    cuda::LoaderSection section;  // Note [gpuslack's loader calls and fork]
    handle = dlopen("libtorch_cuda.so", RTLD_NOW | RTLD_NOLOAD);
  }
  if (handle == nullptr) {
    dlerror();  // the miss is ours: leave no message for the thread's next dlerror()
    return false;
  }
  dlclose(handle);
  return true;
}

// The summary with its findings (lib/findings/), from the knobs in force.
report::Summary summary_with_findings(const report::RunInfo& run) {
  report::Summary summary = report::build_summary(ledger::snapshot(), run);
  findings::Context context;
  context.fabric = options().fabric;
  context.expected_busbw_gbps = options().expected_busbw_gbps;
  context.pytorch = libtorch_loaded();
  summary.findings = findings::evaluate(summary, context);
  return summary;
}

}  // namespace

std::string summary_json() {
  if (!started()) return std::string();
  std::lock_guard<std::mutex> lock(g_write_mu);
  return report::format_json(summary_with_findings(run_info("api")));
}

namespace testing {

void while_holding_locks(void (*during)(void*), void* arg) {
  std::lock_guard<std::mutex> start(g_start_mu);
  std::lock_guard<std::mutex> write(g_write_mu);
  during(arg);
}

}  // namespace testing

void write_summary(const char* reason) {
  int saved_errno = errno;
  {
    std::lock_guard<std::mutex> lock(g_write_mu);
    bool periodic = std::strcmp(reason, "periodic") == 0;
    if (periodic && g_exit_written) {
      errno = saved_errno;
      return;
    }
    const Options& o = options();
    report::RunInfo run = run_info(reason);
    // A periodic summary refreshes the files; it does not print a table on
    // stderr every interval.
    Options out = o;
    if (periodic && out.text_summary == "stderr") out.text_summary = "off";
    // Periodic only for the metrics (summary_interval_s 0): the files are
    // written at exit.
    if (periodic && o.summary_interval_s <= 0) {
      out.text_summary = "off";
      out.json_summary = false;
    }
    try {
      report::Summary summary = summary_with_findings(run);
      std::vector<std::string> failures;
      report::write_summary(summary, out, periodic ? &failures : nullptr);
      if (periodic)
        for (const std::string& line : g_periodic_failures.to_log(failures)) log::error("{}", line);
      if (std::strcmp(reason, "exit") == 0) g_exit_written = true;
    } catch (const std::exception& e) {
      log::error("cannot write the summary: {}", e.what());
    }
  }
  errno = saved_errno;
}

}  // namespace session
}  // namespace gpuslack

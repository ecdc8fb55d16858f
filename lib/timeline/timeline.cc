// The process's one GPU timeline (timeline.h): its CuptiSession over the
// real CUPTI (cuda/cupti_api.h), the device analysis it feeds (sink.h) and
// what the snapshot says when it does not run.
#include "timeline/timeline.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <thread>

#include <pthread.h>

#include "base/clock.h"
#include "base/quiet_thread.h"
#include "config/environment.h"
#include "config/options.h"
#include "cuda/cupti_api.h"
#include "log/log.h"
#include "timeline/coexistence.h"
#include "timeline/cupti_session.h"
#include "timeline/device_limits.h"
#include "timeline/sink.h"

namespace gpuslack {
namespace timeline {
namespace {

struct State {
  Status status = Status::kNotStarted;
  std::string detail;
  std::string how_to_enable;
  std::unique_ptr<Sink> sink;
  std::unique_ptr<CuptiSession> session;
  bool starting = false;  // start_now() was handed to its thread
  bool stopped = false;   // stop() ran: a late start_now() does nothing
};

std::mutex g_mu;             // start/snapshot/stop/before_foreign_subscribe
State* g_state = nullptr;    // under g_mu; leaked at exit (the worker may outlive main)
bool g_forked_child = false; // Note [Fork] (session/session.cc): measures nothing

State& state() {
  if (!g_state) g_state = new State();
  return *g_state;
}

}  // namespace

namespace {

// Note [No fork while the timeline starts]: start_now() runs on a thread of
// its own while the application's threads go on, and loading libcupti (and
// CUPTI's start, which loads more) takes the dynamic loader's lock. A fork
// in the middle would give the child a loader lock that no thread of its
// will ever release: its first dlopen, dl_iterate_phdr or lazy symbol
// binding hangs (a DataLoader worker forked at the start of training). So
// the two keep out of each other's way with two atomics (no lock: an atfork
// handler must not take one, and a sanitizer cannot follow locks taken
// while fork runs): start_now() raises g_starting for all its work, and a
// fork's prepare handler (registered once, by start()) counts itself in
// g_forks then waits, up to 5 s, until g_starting is down; start_now()
// waits for no fork to be in progress before it raises g_starting, and
// steps back if one began meanwhile (both sides store then load, sequentially
// consistent, so one always sees the other). A fork from inside the start's
// own work (a library constructor that forks) waits out the 5 s and then
// forks as it would have without gpuslack.
std::atomic<bool> g_starting{false};
std::atomic<int> g_forks{0};
// See Note [The start's thread reads no environment]: from start() handing
// start_now() to its thread until that work is done (wait_for_start()).
std::atomic<bool> g_start_pending{false};

void before_fork() {
  g_forks.fetch_add(1);
  for (int i = 0; i < 5000 && g_starting.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}
void after_fork_in_parent() { g_forks.fetch_sub(1); }
void after_fork_in_child() {
  g_forks.store(0);
  g_starting.store(false);
  g_start_pending.store(false);
}

// Raises g_starting once no fork is in progress (Note above).
void enter_start_work() {
  for (;;) {
    g_starting.store(true);
    if (g_forks.load() == 0) return;
    g_starting.store(false);
    while (g_forks.load() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void stop_at_exit() { stop(); }

// The start's own work, on a thread of its own (Note [Starting off the
// caller's thread]): loading libcupti and calibrating the clock (up to 10 ms)
// happen outside the lock, so that a tool subscribing meanwhile
// (before_foreign_subscribe) never waits for the loader.
// Note [The start's thread reads no environment]: glibc's getenv is not
// safe beside a setenv on another thread (setenv may move the environment
// array while getenv walks it), and gpuslack itself calls setenv at the
// first communicator init (NCCL_PROFILER_PLUGIN, Note [Joining NCCL as its
// profiler] in nccl/profiler_enable.h), on the very thread whose hooked call
// may have started this one: ASan caught start_now()'s getenv faulting
// there (NcclHooks.AbortWhileAPeerIsBlockedNeitherHangsNorBreaksTheSummary).
// So the variables the start needs are read by start(), on the caller's
// thread, as the application's own getenv would be; and that setenv waits
// for the start's work to end (wait_for_start()), since libcupti's loading
// may read the environment too.
struct StartEnvironment {
  std::optional<std::string> cuda_home;
  std::string injection;  // CUDA_INJECTION64_PATH, "" when unset
};

void start_now(const StartEnvironment& env) {
  // Note [No fork while the timeline starts].
  enter_start_work();
  struct Leave {
    ~Leave() {
      g_starting.store(false);
      g_start_pending.store(false);
    }
  } leave;
  const Options& o = options();
  const cuda::CuptiApi* api = cuda::cupti(env.cuda_home ? env.cuda_home->c_str() : nullptr);
  const double tick_s = api ? clock::tick_seconds() : 0;
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_state || g_forked_child) return;
  State& st = *g_state;
  if (st.status != Status::kNotStarted || st.stopped) return;
  if (!api) {
    st.status = Status::kUnavailable;
    st.detail = cuda::why_no_cupti();
    if (o.gpu_timeline == "on") log::warn("gpu_timeline:on, but {}", st.detail);
    else log::debug("gpu_timeline: {}", st.detail);
    return;
  }
  SinkOptions sink_options;
  sink_options.tick_seconds = tick_s;
  sink_options.launch_bound_gap_ticks = static_cast<uint64_t>(o.launch_bound_gap_us * 1e-6 / tick_s);
  sink_options.device_limits = driver_device_limits;
  st.sink = make_device_analysis(sink_options);
  SessionConfig config;
  config.mode = o.gpu_timeline == "on" ? Mode::kOn : Mode::kAuto;
  if (!env.injection.empty()) config.injection = env.injection;
  config.buffer_limit_bytes = static_cast<uint64_t>(o.gpu_timeline_buffer_mb) << 20;
  // Blocked calls shorter than a launch-bound gap could not explain an idle
  // gap longer than one: they are not written; nor, whatever the gap, calls
  // under 1 us (launch_bound_gap_us:0 must not put every hooked call on the
  // slow path).
  config.interval_threshold_ticks =
      std::max(sink_options.launch_bound_gap_ticks, static_cast<uint64_t>(1e-6 / tick_s));
  config.nominal_ticks_per_ns = 1e-9 / tick_s;
  st.session = std::make_unique<CuptiSession>(api, st.sink.get(), ledger_host_feed(), config);
  StartOutcome out = st.session->start();
  st.status = out.status;
  st.detail = out.detail;
  st.how_to_enable = out.how_to_enable;
  if (out.status == Status::kMeasured) {
    log::debug("gpu_timeline: CUPTI from {}", cuda::cupti_path());
    // Note [Stopping before CUPTI's own exit]: libcupti, loaded just now,
    // registered its teardown (static destructors, its atexit) after the
    // session's at_exit, so it would run first, and the summary's flush and
    // the unsubscribe would reach a CUPTI already gone. A handler registered
    // now runs before that teardown: the timeline stops there (final flush,
    // final commit) and the exit summary reads the stopped figures.
    static const bool registered = std::atexit(stop_at_exit) == 0;
    if (!registered) log::debug("gpu_timeline: atexit failed; the timeline stops with the session's exit summary");
  }
}

}  // namespace

// Note [Starting off the caller's thread]: start() runs inside the
// process's first hooked CUDA call. Loading libcupti, subscribing and the
// clock's calibration (which waits until 10 ms after the session's start)
// would all land on that call; instead a short-lived thread does them and
// the call goes on at once. GPU work before the subscription is not seen:
// the window measured starts when the activities are enabled.
void start() {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    State& st = state();
    if (st.status != Status::kNotStarted || st.starting) return;
    if (g_forked_child) {
      st.status = Status::kUnavailable;
      st.detail = "a forked child (its parent measures the GPU)";
      return;
    }
    if (options().gpu_timeline == "off") {
      st.status = Status::kOff;
      return;
    }
    st.starting = true;
  }
  static const bool fork_handlers = pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child) == 0;
  if (!fork_handlers) log::debug("gpu_timeline: pthread_atfork failed; a fork while the timeline starts may hang the child");
  StartEnvironment env;  // See Note [The start's thread reads no environment]
  if (const char* home = environment_variable("CUDA_HOME")) env.cuda_home = home;
  if (const char* injected = environment_variable("CUDA_INJECTION64_PATH")) env.injection = injected;
  g_start_pending.store(true);
  try {
    start_quiet_thread(start_now, std::move(env)).detach();
  } catch (...) {
    g_start_pending.store(false);
    log::warn("gpu_timeline: cannot start a thread; the GPU timeline is off");
    std::lock_guard<std::mutex> lock(g_mu);
    g_state->status = Status::kUnavailable;
    g_state->detail = "no thread could be started";
  }
}

bool wait_for_start(double max_seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(max_seconds);
  while (g_start_pending.load()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

Snapshot snapshot() {
  std::lock_guard<std::mutex> lock(g_mu);
  Snapshot snap;
  if (!g_state) return snap;
  State& st = *g_state;
  snap.status = st.status;
  snap.detail = st.detail;
  snap.how_to_enable = st.how_to_enable;
  if (st.session && st.status == Status::kMeasured) st.session->snapshot(&snap);
  return snap;
}

void stop() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_state) return;
  g_state->stopped = true;
  if (g_state->session) g_state->session->stop();
}

void after_fork_child() {
  // No lock, no allocation, nothing freed (Note [Fork]): the parent's state,
  // its worker thread gone, is left behind unread.
  new (&g_mu) std::mutex();
  g_state = nullptr;
  g_forked_child = true;
  CuptiSession::forget_after_fork();
}

void before_foreign_subscribe(const char* tool, bool exclusive) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_state || !g_state->session) return;
  g_state->session->yield_if_needed(tool && *tool ? tool : "another tool", exclusive);
}

}  // namespace timeline
}  // namespace gpuslack

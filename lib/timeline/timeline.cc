// The process's one GPU timeline (timeline.h): its CuptiSession over the
// real CUPTI (cuda/cupti_api.h), the device analysis it feeds (sink.h) and
// what the snapshot says when it does not run.
#include "timeline/timeline.h"

#include <dlfcn.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <new>

#include "base/clock.h"
#include "config/environment.h"
#include "config/options.h"
#include "cuda/cupti_api.h"
#include "log/log.h"
#include "timeline/coexistence.h"
#include "timeline/cupti_session.h"
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
};

std::mutex g_mu;             // start/snapshot/stop/before_foreign_subscribe
State* g_state = nullptr;    // under g_mu; leaked at exit (the worker may outlive main)
bool g_forked_child = false; // Note [Fork] (session/session.cc): measures nothing

State& state() {
  if (!g_state) g_state = new State();
  return *g_state;
}

}  // namespace

const char* status_key(Status s) {
  switch (s) {
    case Status::kOff: return "off";
    case Status::kNotStarted: return "not_started";
    case Status::kMeasured: return "measured";
    case Status::kHeldByOther: return "held_by_other";
    case Status::kUnavailable: return "unavailable";
  }
  return "unavailable";
}

const char* busy_key(Busy b) {
  switch (b) {
    case Busy::kCompute: return "compute";
    case Busy::kCommunication: return "communication";
    case Busy::kCopies: return "copies";
    case Busy::kMemsets: return "memsets";
  }
  return "compute";
}

const char* idle_key(Idle i) {
  switch (i) {
    case Idle::kHostBound: return "host_bound";
    case Idle::kLaunchBound: return "launch_bound";
    case Idle::kAllocation: return "allocation";
    case Idle::kCopies: return "copies";
    case Idle::kCollectives: return "collectives";
    case Idle::kSync: return "sync";
    case Idle::kOther: return "other";
  }
  return "other";
}

void start() {
  std::lock_guard<std::mutex> lock(g_mu);
  State& st = state();
  if (st.status != Status::kNotStarted) return;
  if (g_forked_child) {
    st.status = Status::kUnavailable;
    st.detail = "a forked child (its parent measures the GPU)";
    return;
  }
  const Options& o = options();
  if (o.gpu_timeline == "off") {
    st.status = Status::kOff;
    return;
  }
  const cuda::CuptiApi* api = cuda::cupti(environment_variable("CUDA_HOME"));
  if (!api) {
    st.status = Status::kUnavailable;
    st.detail = cuda::why_no_cupti();
    if (o.gpu_timeline == "on") log::warn("gpu_timeline:on, but {}", st.detail);
    else log::debug("gpu_timeline: {}", st.detail);
    return;
  }
  double tick_s = clock::tick_seconds();
  SinkOptions sink_options;
  sink_options.tick_seconds = tick_s;
  sink_options.launch_bound_gap_ticks = static_cast<uint64_t>(o.launch_bound_gap_us * 1e-6 / tick_s);
  st.sink = make_device_analysis(sink_options);
  SessionConfig config;
  config.mode = o.gpu_timeline == "on" ? Mode::kOn : Mode::kAuto;
  config.buffer_limit_bytes = static_cast<uint64_t>(o.gpu_timeline_buffer_mb) << 20;
  // Blocked calls shorter than a launch-bound gap could not explain an idle
  // gap longer than one: they are not written.
  config.interval_threshold_ticks = sink_options.launch_bound_gap_ticks;
  config.nominal_ticks_per_ns = 1e-9 / tick_s;
  st.session = std::make_unique<CuptiSession>(api, st.sink.get(), ledger_host_feed(), config);
  StartOutcome out = st.session->start();
  st.status = out.status;
  st.detail = out.detail;
  st.how_to_enable = out.how_to_enable;
  if (out.status == Status::kMeasured) log::debug("gpu_timeline: CUPTI from {}", cuda::cupti_path());
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
  if (g_state && g_state->session) g_state->session->stop();
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

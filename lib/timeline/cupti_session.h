// gpuslack's subscription to CUPTI's Activity API: subscribes, lends CUPTI
// buffers from a bounded pool (timeline/activity_buffers.h), decodes the
// records on its own worker thread (timeline/record_decoder.h), aligns them
// to the host clock (timeline/clock_alignment.h) and feeds them, with the
// host's intervals and steps (ledger/host_activity.h), to a Sink
// (timeline/sink.h). timeline.cc owns the process's one session; tests make
// their own over a fake CUPTI table and a fake host feed.
//
// Subscribing (Note [One CUPTI, several tools] in timeline/coexistence.h):
//   - with cuptiSubscribe_v2 (in CUPTI's headers from 13.2), as "gpuslack",
//     asking to be one of several subscribers (allowMultipleSubscribers =
//     1): then the _v2 per-subscriber calls register the buffer callbacks
//     and enable kinds;
//   - CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED naming another
//     subscriber (oldSubscriberName): another tool holds CUPTI and allows no
//     second: gpuslack steps aside, one log line, Status::kHeldByOther with
//     the name;
//   - the same error naming nobody, or a CUPTI without _v2: only one
//     subscriber is possible here (CUPTI 13.2 and older). Mode::kOn, and
//     Mode::kAuto unless a tool was injected (SessionConfig::injection),
//     take the single subscription (cuptiSubscribe_v2 with
//     allowMultipleSubscribers = 0, or cuptiSubscribe) and the legacy
//     process-wide calls; Mode::kAuto with an injected tool stays off
//     (kUnavailable, with how_to_enable).
// Kinds: CONCURRENT_KERNEL (required), MEMCPY, MEMSET, MEMCPY2 (peer
// copies): one that cannot be enabled is logged and left out.
//
// Note [Never refusing a CUPTI that crashes on it]: the buffer-requested
// callback may decline ("If set to NULL then no buffer is returned":
// cupti_activity.h), but CUPTI before 12.9 (cuptiGetVersion below 27) was
// reported to crash on a declined request: Kineto's fix gates its refusals
// on version 27 (pytorch/kineto#1275, #1534, citing CUPTI 12.9's release
// notes). There, and where the version cannot be read, the pool never
// refuses (BufferPool::set_refusal_safe): it lends past its ceiling,
// counted (Snapshot::buffers_beyond_cap), and a request that reaches no
// session gets a small buffer, leaked.
//
// The callbacks: CUPTI calls buffer-requested and buffer-completed on its
// own or the application's threads. Requested takes a buffer from the pool
// or gives none (counted); completed queues the buffer for the worker. Both
// take one short lock, never wait and never process records. CUPTI's
// callbacks carry no user data, so they reach the one session that is
// current (the last started, until destroyed or forgotten after a fork).
//
// Thread safety: start/snapshot/stop/yield_to from any thread, serialized
// among themselves (an internal lock); the callbacks from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda/cupti_api.h"
#include "ledger/host_activity.h"
#include "timeline/activity_buffers.h"
#include "timeline/clock_alignment.h"
#include "timeline/sink.h"
#include "timeline/timeline.h"

namespace gpuslack {
namespace timeline {

// The host side the session drains (ledger/host_activity.h's consumer
// calls), as a table so that tests can feed their own.
struct HostFeed {
  uint64_t (*drain_intervals)(std::vector<ledger::HostInterval>* out);
  uint64_t (*drain_steps)(std::vector<uint64_t>* out);
  void (*set_interval_threshold)(uint64_t ticks);
  uint64_t (*launches)();
};
HostFeed ledger_host_feed();

enum class Mode : uint8_t {
  kAuto,  // gpu_timeline:auto: only as one of several subscribers
  kOn,    // gpu_timeline:on: may take CUPTI's single subscription
};

struct SessionConfig {
  Mode mode = Mode::kAuto;
  // CUDA_INJECTION64_PATH as the process started ("" unset): a tool the
  // driver loads at cuInit (Nsight Systems, Nsight Compute, a CUPTI tool).
  std::string injection;
  uint64_t buffer_limit_bytes = 64ull << 20;    // gpu_timeline_buffer_mb
  size_t buffer_bytes = 0;                      // 0: buffer_bytes_for(buffer_limit_bytes)
  uint64_t buffer_ceiling_bytes = 0;            // 0: 4x the limit (Note [Buffers per launching thread])
  uint64_t interval_threshold_ticks = ~0ull;    // host calls shorter are not written
  double nominal_ticks_per_ns = 1.0;            // 1e-9 / clock::tick_seconds()
  std::chrono::milliseconds flush_wait{200};    // a snapshot's wait for the worker
  std::chrono::milliseconds stop_wait{2000};    // stop's and yield's wait
  std::chrono::milliseconds worker_period{100}; // the worker drains the host at least this often
};

struct StartOutcome {
  Status status = Status::kUnavailable;
  std::string detail;         // kHeldByOther: the tool; kUnavailable: why
  std::string how_to_enable;  // kUnavailable under Mode::kAuto when Mode::kOn would measure
};

// The line how_to_enable holds when only a single subscription is possible.
extern const char kHowToEnableSingle[];

// See Note [Never refusing a CUPTI that crashes on it]: cuptiGetVersion's answer
// from which a declined buffer request is safe (CUDA 12.9).
inline constexpr uint32_t kFirstVersionRefusingSafely = 27;
bool cupti_refuses_safely(uint32_t version);

class CuptiSession {
 public:
  // `api` and `sink` must outlive the session.
  CuptiSession(const cuda::CuptiApi* api, Sink* sink, const HostFeed& host, const SessionConfig& config);
  ~CuptiSession();  // stop(), then frees the buffers
  CuptiSession(const CuptiSession&) = delete;
  CuptiSession& operator=(const CuptiSession&) = delete;

  // Subscribes and starts the worker (once). Logs one line when CUPTI is
  // held by another tool or refuses.
  StartOutcome start();
  // Flushes CUPTI (forced), waits up to flush_wait for the worker, and
  // fills `out`'s devices and counters (not status/detail/how_to_enable:
  // timeline.cc's) over the window from start to now (or to the stop).
  void snapshot(Snapshot* out);
  // Flushes, waits up to stop_wait, disables the kinds, unsubscribes, joins
  // the worker. Idempotent; the figures stay for snapshot().
  void stop();
  // See Note [One CUPTI, several tools]: stop(), and the snapshot says that
  // `tool` took CUPTI at this point.
  void yield_to(const std::string& tool);
  // Before another tool's subscription (timeline/coexistence.h): yields
  // when subscribed and the tool asks CUPTI to itself (`exclusive`) or
  // gpuslack holds the single subscription. True when it yielded.
  bool yield_if_needed(const std::string& tool, bool exclusive);

  // Subscribed now (started, not stopped).
  bool subscribed() const { return subscribed_.load(std::memory_order_acquire); }
  // Subscribed as one of several (allowMultipleSubscribers granted).
  bool shares_cupti() const { return shared_.load(std::memory_order_acquire); }

  // In a forked child: the callbacks stop reaching any session; no lock.
  static void forget_after_fork();

 private:
  static void CUPTIAPI on_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                   const void* data);
  static void CUPTIAPI on_requested(uint8_t** buffer, size_t* size, size_t* max_records);
  static void CUPTIAPI on_requested_v2(uint8_t** buffer, size_t* size, size_t* max_records,
                                       CUpti_BufferCallbackRequestInfo* info);
  static void CUPTIAPI on_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t size,
                                    size_t valid_bytes);
  static void CUPTIAPI on_completed_v2(uint8_t* buffer, size_t size, size_t valid_bytes,
                                       CUpti_BufferCallbackCompleteInfo* info);
  void lend(uint8_t** buffer, size_t* size, size_t* max_records);
  void take_back(uint8_t* buffer, size_t valid_bytes);

  StartOutcome subscribe();
  bool enable_kinds(std::string* why);
  void disable_kinds();
  void stop_locked();
  void worker_main();
  void process(const CompletedBuffer& b);
  void sample_clock();
  void drain_host_locked();  // sink_mu_ held
  // About once a second (Note [Committing as the run goes]).
  void flush_and_commit(uint64_t previous_flush_ticks);
  CUptiResult subscribe_v2(bool shared, char* holder);
  bool flush_and_wait(std::chrono::milliseconds wait);

  const cuda::CuptiApi* api_;
  Sink* sink_;
  HostFeed host_;
  SessionConfig config_;
  BufferPool pool_;
  CompletedQueue queue_;

  std::mutex op_mu_;  // start/snapshot/stop/yield_to
  CUpti_SubscriberHandle subscriber_ = nullptr;
  std::vector<CUpti_ActivityKind> enabled_;
  bool started_ = false;
  std::atomic<bool> subscribed_{false};
  std::atomic<bool> shared_{false};
  std::atomic<bool> accepting_{false};  // the callbacks lend and queue buffers
  std::atomic<bool> stopping_{false};
  std::atomic<bool> no_more_flushes_{false};
  bool refusal_safe_ = true;  // set by start(), before any callback
  std::atomic<uint64_t> foreign_buffers_{0};  // completed buffers gpuslack never lent, left alone  // stop began: the worker flushes no more
  std::thread worker_;
  uint64_t start_ticks_ = 0;
  uint64_t end_ticks_ = 0;  // 0 while running
  std::string stopped_by_;
  uint64_t stopped_at_ticks_ = 0;

  std::mutex align_mu_;
  ClockAlignment alignment_;
  uint64_t last_sample_ticks_ = 0;

  std::mutex sink_mu_;  // every Sink call and the host drains
  std::vector<ledger::HostInterval> host_scratch_;
  std::vector<uint64_t> step_scratch_;

  std::atomic<uint64_t> records_{0};
  std::atomic<uint64_t> incomplete_{0};
  std::atomic<uint64_t> dropped_by_cupti_{0};
  std::atomic<uint64_t> host_dropped_{0};
  std::atomic<uint64_t> late_buffers_{0};  // completed after the worker stopped: not processed
};

}  // namespace timeline
}  // namespace gpuslack

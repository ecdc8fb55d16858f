#include "timeline/cupti_session.h"

#include <cstdlib>
#include <cstring>

#include "base/clock.h"
#include "base/quiet_thread.h"
#include "log/escape.h"
#include "log/log.h"
#include "timeline/record_decoder.h"

namespace gpuslack {
namespace timeline {
namespace {

// The session CUPTI's callbacks reach (cupti_session.h).
std::atomic<CuptiSession*> g_current{nullptr};
// A session found this CUPTI unsafe to refuse a buffer to (Note [Never
// refusing a CUPTI that crashes on it]): a request that reaches no session
// (a forked child) still gets one, leaked.
std::atomic<bool> g_refusal_unsafe{false};
constexpr size_t kOrphanBufferBytes = 64 << 10;

constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,  // first: required
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_MEMCPY2,  // peer copies (cudaMemcpyPeer*, device to device across devices)
};

}  // namespace

const char kHowToEnableSingle[] =
    "gpu_timeline:on measures the GPU timeline as CUPTI's only subscriber; this CUPTI allows one "
    "(CUPTI 13.2 and older do), and under gpu_timeline:auto gpuslack leaves it to the tool injected "
    "by CUDA_INJECTION64_PATH";

bool cupti_refuses_safely(uint32_t version) { return version >= kFirstVersionRefusingSafely; }

HostFeed ledger_host_feed() {
  return HostFeed{ledger::drain_intervals, ledger::drain_steps, ledger::set_interval_threshold, ledger::launches};
}

CuptiSession::CuptiSession(const cuda::CuptiApi* api, Sink* sink, const HostFeed& host, const SessionConfig& config)
    : api_(api),
      sink_(sink),
      host_(host),
      config_(config),
      pool_(config.buffer_limit_bytes,
            config.buffer_bytes ? config.buffer_bytes : buffer_bytes_for(config.buffer_limit_bytes),
            config.buffer_ceiling_bytes),
      // Room for every buffer the pool may lend, and some it lends past its
      // ceiling where refusing is unsafe (more are counted late, unread).
      queue_(pool_.ceiling_buffers() + 64),
      alignment_(config.nominal_ticks_per_ns) {}

CuptiSession::~CuptiSession() {
  stop();
  CuptiSession* self = this;
  g_current.compare_exchange_strong(self, nullptr, std::memory_order_acq_rel);
}

void CuptiSession::forget_after_fork() { g_current.store(nullptr, std::memory_order_relaxed); }

// ---- CUPTI's callbacks: a short lock each, never a wait ------------------

void CUPTIAPI CuptiSession::on_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {
  // No callback domain is enabled: the subscription is for activities.
}

void CUPTIAPI CuptiSession::on_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  CuptiSession* s = g_current.load(std::memory_order_acquire);
  if (s) {
    s->lend(buffer, size, max_records);
    return;
  }
  uint8_t* orphan = g_refusal_unsafe.load(std::memory_order_relaxed)
                       ? static_cast<uint8_t*>(std::aligned_alloc(8, kOrphanBufferBytes))
                       : nullptr;
  *buffer = orphan;
  *size = orphan ? kOrphanBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI CuptiSession::on_requested_v2(uint8_t** buffer, size_t* size, size_t* max_records,
                                            CUpti_BufferCallbackRequestInfo*) {
  on_requested(buffer, size, max_records);
}

void CUPTIAPI CuptiSession::on_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_bytes) {
  // No session (a forked child): the buffer is leaked, never freed under
  // a lock another thread of the parent may have held.
  if (CuptiSession* s = g_current.load(std::memory_order_acquire)) s->take_back(buffer, valid_bytes);
}

void CUPTIAPI CuptiSession::on_completed_v2(uint8_t* buffer, size_t size, size_t valid_bytes,
                                            CUpti_BufferCallbackCompleteInfo*) {
  on_completed(nullptr, 0, buffer, size, valid_bytes);
}

void CuptiSession::lend(uint8_t** buffer, size_t* size, size_t* max_records) {
  // Not accepting (stopping): none, unless refusing is unsafe here.
  uint8_t* b = accepting_.load(std::memory_order_acquire) || !refusal_safe_ ? pool_.acquire() : nullptr;
  *buffer = b;
  *size = b ? pool_.buffer_bytes() : 0;
  *max_records = 0;  // as many as fit
}

void CuptiSession::take_back(uint8_t* buffer, size_t valid_bytes) {
  if (!buffer) return;
  // A buffer gpuslack never lent (another tool's, handed here by a
  // process-wide registration): not gpuslack's to read, keep or free.
  if (!pool_.returned_by_cupti(buffer)) {
    foreign_buffers_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (!accepting_.load(std::memory_order_acquire) || !queue_.push(CompletedBuffer{buffer, valid_bytes})) {
    late_buffers_.fetch_add(1, std::memory_order_relaxed);
    pool_.release(buffer);
  }
}

// ---- start ----------------------------------------------------------------

// cuptiSubscribe_v2 as "gpuslack", one of several subscribers (`shared`)
// or the only one; the holder's name, on refusal, into `holder`
// (CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN bytes and a terminator).
CUptiResult CuptiSession::subscribe_v2(bool shared, char* holder) {
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "gpuslack";
  params.oldSubscriberName = holder;
  params.oldSubscriberSize = CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN;
  params.allowMultipleSubscribers = shared ? 1 : 0;
  return api_->subscribe_v2(&subscriber_, on_callback, nullptr, &params);
}

StartOutcome CuptiSession::subscribe() {
  StartOutcome out;
  CUptiResult r;
  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {};
  bool single_only = api_->subscribe_v2 == nullptr;
  if (api_->subscribe_v2) {
    r = subscribe_v2(/*shared=*/true, holder);
    if (r == CUPTI_SUCCESS) {
      shared_.store(true, std::memory_order_release);
      out.status = Status::kMeasured;
      return out;
    }
    if (r != CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
      out.detail = "cuptiSubscribe_v2 failed: " + cuda::cupti_result_text(api_, r);
      return out;
    }
    holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = '\0';
    if (holder[0] != '\0') {
      out.status = Status::kHeldByOther;
      out.detail = log::escape_bytes(holder);
      return out;
    }
    single_only = true;  // nobody holds it: one subscriber is all this CUPTI allows
  }
  // Note [gpu_timeline:auto and CUPTI's single subscription]
  // (timeline/coexistence.h): auto takes it when it is free, unless a tool
  // was injected into the process (CUDA_INJECTION64_PATH).
  if (single_only && config_.mode == Mode::kAuto && !config_.injection.empty()) {
    out.detail = std::string(api_->subscribe_v2 ? "CUPTI here allows a single subscriber"
                                                : "this CUPTI predates several subscribers (cuptiSubscribe_v2)") +
                 ", left to the tool CUDA_INJECTION64_PATH injects (" + log::escape_bytes(config_.injection) + ")";
    out.how_to_enable = kHowToEnableSingle;
    return out;
  }
  // The single subscription (Mode::kOn, or kAuto with no injected tool).
  if (api_->subscribe_v2) {
    r = subscribe_v2(/*shared=*/false, holder);
  } else {
    r = api_->subscribe(&subscriber_, on_callback, nullptr);
  }
  if (r == CUPTI_SUCCESS) {
    out.status = Status::kMeasured;
    return out;
  }
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = '\0';
    out.status = Status::kHeldByOther;
    out.detail = holder[0] ? log::escape_bytes(holder) : std::string("another tool");
    return out;
  }
  out.detail = std::string(api_->subscribe_v2 ? "cuptiSubscribe_v2" : "cuptiSubscribe") +
               " failed: " + cuda::cupti_result_text(api_, r);
  return out;
}

bool CuptiSession::enable_kinds(std::string* why) {
  bool shared = shares_cupti();
  for (CUpti_ActivityKind kind : kKinds) {
    CUptiResult r = shared ? api_->activity_enable_v2(subscriber_, kind, nullptr) : api_->activity_enable(kind);
    if (r == CUPTI_SUCCESS) {
      enabled_.push_back(kind);
      continue;
    }
    if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      *why = "cannot enable kernel activity records: " + cuda::cupti_result_text(api_, r);
      return false;
    }
    log::warn("gpu_timeline: CUPTI activity kind {} cannot be enabled ({}); the timeline goes without it",
              static_cast<int>(kind), cuda::cupti_result_text(api_, r));
  }
  return true;
}

void CuptiSession::disable_kinds() {
  for (CUpti_ActivityKind kind : enabled_) {
    if (shares_cupti())
      api_->activity_disable_v2(subscriber_, kind, nullptr);
    else
      api_->activity_disable(kind);
  }
  enabled_.clear();
}

StartOutcome CuptiSession::start() {
  std::lock_guard<std::mutex> lock(op_mu_);
  StartOutcome out;
  if (started_) {
    out.status = subscribed() ? Status::kMeasured : Status::kUnavailable;
    out.detail = subscribed() ? "" : "started once already";
    return out;
  }
  started_ = true;
  sample_clock();  // the anchor, before any record can arrive
  // Note [Never refusing a CUPTI that crashes on it].
  uint32_t version = 0;
  refusal_safe_ = api_->get_version && api_->get_version(&version) == CUPTI_SUCCESS && cupti_refuses_safely(version);
  pool_.set_refusal_safe(refusal_safe_);
  out = subscribe();
  if (out.status == Status::kHeldByOther) {
    log::warn("gpu_timeline: CUPTI is held by \"{}\", which allows no second subscriber: the GPU timeline "
              "is not measured", out.detail);
    return out;
  }
  if (out.status != Status::kMeasured) {
    // gpu_timeline:auto measures where it can: its misses are the summary's
    // to say, not a line in every process.
    if (config_.mode == Mode::kOn) log::warn("gpu_timeline:on, but not measured: {}", out.detail);
    else log::debug("gpu_timeline: not measured: {}", out.detail);
    return out;
  }
  // Callbacks may come as soon as a kind is enabled.
  g_refusal_unsafe.store(!refusal_safe_, std::memory_order_relaxed);
  g_current.store(this, std::memory_order_release);
  accepting_.store(true, std::memory_order_release);
  CUptiResult r = shares_cupti()
                      ? api_->activity_register_callbacks_v2(subscriber_, on_requested_v2, on_completed_v2)
                      : api_->activity_register_callbacks(on_requested, on_completed);
  std::string why;
  if (r != CUPTI_SUCCESS) why = "cannot register the activity buffer callbacks: " + cuda::cupti_result_text(api_, r);
  if (r != CUPTI_SUCCESS || !enable_kinds(&why)) {
    disable_kinds();
    accepting_.store(false, std::memory_order_release);
    api_->unsubscribe(subscriber_);
    subscriber_ = nullptr;
    shared_.store(false, std::memory_order_release);
    if (config_.mode == Mode::kOn) log::warn("gpu_timeline:on, but not measured: {}", why);
    else log::debug("gpu_timeline: not measured: {}", why);
    out.status = Status::kUnavailable;
    out.detail = why;
    return out;
  }
  start_ticks_ = clock::ticks();
  host_.set_interval_threshold(config_.interval_threshold_ticks);
  subscribed_.store(true, std::memory_order_release);
  worker_ = start_quiet_thread([this] { worker_main(); });
  log::debug("gpu_timeline: measuring, {} CUPTI's subscribers", shares_cupti() ? "one of" : "the only one of");
  return out;
}

// ---- the worker -------------------------------------------------------------

void CuptiSession::sample_clock() {
  ClockSample s;
  auto get = [this](uint64_t* ns) { return api_->get_timestamp(ns) == CUPTI_SUCCESS; };
  if (!sample_clocks(get, 3, &s)) return;
  std::lock_guard<std::mutex> lock(align_mu_);
  alignment_.add(s);
  last_sample_ticks_ = s.ticks;
}

void CuptiSession::worker_main() {
  const double tick_s = 1.0 / (config_.nominal_ticks_per_ns * 1e9);
  const auto resample_ticks = static_cast<uint64_t>(1.0 / tick_s);  // about a second
  uint64_t last_drain = clock::ticks();
  uint64_t last_flush = last_drain;
  const auto commit_every_ticks = resample_ticks;  // about a second
  const auto drain_ticks =
      static_cast<uint64_t>(static_cast<double>(config_.worker_period.count()) * 1e-3 / tick_s);
  uint64_t refused_seen = pool_.refused();
  for (;;) {
    CompletedBuffer b;
    bool got = queue_.pop(&b, config_.worker_period);
    if (got) {
      process(b);
      pool_.release(b.buffer);
      queue_.mark_processed();
    } else if (stopping_.load(std::memory_order_acquire)) {
      break;
    }
    uint64_t now = clock::ticks();
    uint64_t last_sample;
    {
      std::lock_guard<std::mutex> lock(align_mu_);
      last_sample = last_sample_ticks_;
    }
    if (now - last_sample > resample_ticks) sample_clock();
    if (!got || now - last_drain > drain_ticks) {
      std::lock_guard<std::mutex> lock(sink_mu_);
      drain_host_locked();
      last_drain = now;
    }
    if (now - last_flush > commit_every_ticks && !no_more_flushes_.load(std::memory_order_acquire)) {
      flush_and_commit(last_flush);
      last_flush = now;
    } else if (uint64_t refused = pool_.refused();
               refused != refused_seen && !no_more_flushes_.load(std::memory_order_acquire)) {
      // The pool ran dry (Note [Buffers per launching thread]): CUPTI holds
      // buffers threads no longer fill (a thread that exited keeps its
      // buffer until a flush). A flush now, not in up to a second, hands
      // them back; what it delivers is processed on the next turns.
      api_->activity_flush_all(0);
      refused_seen = refused;
    }
  }
}

// Note [Committing as the run goes]: the analysis holds every record it has
// not committed, so a run that writes no summary until its exit would grow
// without bound. About once a second the worker asks CUPTI for its buffers
// (cuptiActivityFlushAll(0): buffers whose records are all complete; like
// Kineto's periodic flush, it hands other subscribers theirs early too),
// processes what that delivered, and commits up to the *previous* such
// flush: work that ended before it was delivered by now, in that flush's
// buffers or this one's, so committing there leaves nothing late but
// kernels that ran across a whole second.
void CuptiSession::flush_and_commit(uint64_t previous_flush_ticks) {
  api_->activity_flush_all(0);
  CompletedBuffer b;
  while (queue_.pop(&b, std::chrono::milliseconds(0))) {
    process(b);
    pool_.release(b.buffer);
    queue_.mark_processed();
  }
  std::lock_guard<std::mutex> lock(sink_mu_);
  drain_host_locked();
  sink_->commit(previous_flush_ticks);
}

void CuptiSession::process(const CompletedBuffer& b) {
  ClockAlignment align(1.0);
  {
    std::lock_guard<std::mutex> lock(align_mu_);
    align = alignment_;
  }
  // One lock per buffer, one Sink call per record.
  std::lock_guard<std::mutex> lock(sink_mu_);
  CUpti_Activity* record = nullptr;
  uint64_t records = 0, incomplete = 0;
  while (b.valid_bytes > 0 &&
         api_->activity_get_next_record(b.buffer, b.valid_bytes, &record) == CUPTI_SUCCESS) {
    GpuActivity a;
    switch (decode_record(record, &a)) {
      case Decoded::kActivity:
        a.start_ticks = align.to_ticks(a.start_ticks);
        a.end_ticks = align.to_ticks(a.end_ticks);
        if (a.end_ticks < a.start_ticks) a.end_ticks = a.start_ticks;
        sink_->add(a);
        ++records;
        break;
      case Decoded::kIncomplete: ++incomplete; break;
      case Decoded::kIgnored: break;
    }
  }
  records_.fetch_add(records, std::memory_order_relaxed);
  incomplete_.fetch_add(incomplete, std::memory_order_relaxed);
  // CUPTI's own count of what it dropped since the last read (records it
  // had no buffer for: the pool's refusals among them).
  size_t dropped = 0;
  if (api_->activity_get_num_dropped_records(nullptr, 0, &dropped) == CUPTI_SUCCESS && dropped > 0)
    dropped_by_cupti_.fetch_add(dropped, std::memory_order_relaxed);
}

void CuptiSession::drain_host_locked() {
  host_scratch_.clear();
  step_scratch_.clear();
  uint64_t lost = host_.drain_intervals(&host_scratch_);
  lost += host_.drain_steps(&step_scratch_);
  host_dropped_.fetch_add(lost, std::memory_order_relaxed);
  for (const ledger::HostInterval& h : host_scratch_) sink_->add(h);
  for (uint64_t t : step_scratch_) sink_->add_step(t);
}

// ---- snapshot, stop, yield -------------------------------------------------

bool CuptiSession::flush_and_wait(std::chrono::milliseconds wait) {
  // A forced flush hands over every buffer, the last partly filled one too;
  // CUPTI calls buffer-completed before it returns.
  api_->activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  return queue_.wait_processed(queue_.pushed(), wait);
}

void CuptiSession::snapshot(Snapshot* out) {
  std::lock_guard<std::mutex> lock(op_mu_);
  uint64_t end = end_ticks_;
  if (subscribed()) {
    sample_clock();
    end = clock::ticks();
    if (!flush_and_wait(config_.flush_wait))
      log::debug("gpu_timeline: the worker is still processing flushed buffers; the snapshot goes without them");
  }
  {
    std::lock_guard<std::mutex> sink_lock(sink_mu_);
    if (subscribed()) {
      drain_host_locked();
      sink_->commit(end);
    }
    out->devices.clear();
    if (started_ && start_ticks_ != 0) sink_->fill(start_ticks_, end, &out->devices);
  }
  uint64_t launches = host_.launches ? host_.launches() : 0;
  for (DeviceTimeline& d : out->devices) d.launches = launches;
  out->records = records_.load(std::memory_order_relaxed);
  out->dropped_by_pool = pool_.refused();
  out->buffers_beyond_cap = pool_.beyond_ceiling();
  out->dropped_by_cupti = dropped_by_cupti_.load(std::memory_order_relaxed);
  out->host_intervals_dropped = host_dropped_.load(std::memory_order_relaxed);
  out->buffer_bytes_limit = pool_.limit_bytes();
  out->buffer_bytes_peak = pool_.peak_bytes();
  out->stopped_by = stopped_by_;
  out->stopped_after_s =
      stopped_by_.empty() ? 0 : static_cast<double>(stopped_at_ticks_ - start_ticks_) / (config_.nominal_ticks_per_ns * 1e9);
}

void CuptiSession::stop() {
  std::lock_guard<std::mutex> lock(op_mu_);
  stop_locked();
}

void CuptiSession::yield_to(const std::string& tool) {
  std::lock_guard<std::mutex> lock(op_mu_);
  if (!subscribed()) return;
  stopped_at_ticks_ = clock::ticks();
  stopped_by_ = tool;
  stop_locked();
  log::info("gpu_timeline: {} took CUPTI; the GPU timeline stops here, measured until now", tool);
}

bool CuptiSession::yield_if_needed(const std::string& tool, bool exclusive) {
  if (!subscribed() || (shares_cupti() && !exclusive)) return false;  // not held, or both run
  yield_to(tool);
  return true;
}

void CuptiSession::stop_locked() {
  if (!subscribed()) return;
  // The order matters (review): the worker makes no more periodic flushes;
  // the kinds are disabled before the last flush, so that nothing CUPTI
  // records after it is lost unseen; the worker, which processes that
  // flush's buffers, is joined before the unsubscribe, so that it never
  // calls CUPTI after gpuslack has left it (to a tool it yields to).
  no_more_flushes_.store(true, std::memory_order_release);
  sample_clock();
  uint64_t end = clock::ticks();
  disable_kinds();
  if (!flush_and_wait(config_.stop_wait))
    log::debug("gpu_timeline: the worker did not finish the last buffers in time");
  // Buffers CUPTI still completes from here on go straight back to the pool.
  accepting_.store(false, std::memory_order_release);
  stopping_.store(true, std::memory_order_release);
  queue_.close();
  if (worker_.joinable()) worker_.join();
  api_->unsubscribe(subscriber_);
  subscriber_ = nullptr;
  // What the worker had not yet taken: back to the pool, unprocessed.
  CompletedBuffer b;
  while (queue_.pop(&b, std::chrono::milliseconds(0))) {
    late_buffers_.fetch_add(1, std::memory_order_relaxed);
    pool_.release(b.buffer);
    queue_.mark_processed();
  }
  {
    std::lock_guard<std::mutex> sink_lock(sink_mu_);
    drain_host_locked();
    sink_->commit_final(end);
  }
  host_.set_interval_threshold(~0ull);
  end_ticks_ = end;
  subscribed_.store(false, std::memory_order_release);
}

}  // namespace timeline
}  // namespace gpuslack

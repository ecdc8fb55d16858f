// The CUPTI session against a fake CUPTI (fake_cupti.h) and a fake host
// feed: subscribing (several, single, held by another tool; auto vs on),
// the bounded pool, decoding real record structs, dropped counts, clock
// alignment, yielding to a later tool, and a forked child.
#include "timeline/cupti_session.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <mutex>

#include "base/clock.h"
#include "fake_cupti.h"
#include "timeline/activity_buffers.h"
#include "timeline/clock_alignment.h"
#include "timeline/record_decoder.h"

namespace gpuslack {
namespace timeline {
namespace {

class RecordingSink : public Sink {
 public:
  void add(const GpuActivity& a) override {
    std::lock_guard<std::mutex> lock(mu_);
    activities.push_back(a);
  }
  void add(const ledger::HostInterval& h) override {
    std::lock_guard<std::mutex> lock(mu_);
    intervals.push_back(h);
  }
  void add_step(uint64_t t) override {
    std::lock_guard<std::mutex> lock(mu_);
    steps.push_back(t);
  }
  void commit(uint64_t w) override {
    std::lock_guard<std::mutex> lock(mu_);
    watermarks.push_back(w);
  }
  void fill(uint64_t start, uint64_t end, std::vector<DeviceTimeline>* out) override {
    std::lock_guard<std::mutex> lock(mu_);
    DeviceTimeline d;
    d.wall_s = static_cast<double>(end - start);
    d.busy_s = static_cast<double>(activities.size());
    out->push_back(d);
  }
  std::mutex mu_;
  std::vector<GpuActivity> activities;
  std::vector<ledger::HostInterval> intervals;
  std::vector<uint64_t> steps;
  std::vector<uint64_t> watermarks;
};

// The host side, fed by the test.
std::mutex g_host_mu;
std::vector<ledger::HostInterval> g_host_intervals;
std::vector<uint64_t> g_host_steps;
uint64_t g_host_dropped = 0;
uint64_t g_threshold = ~0ull;

HostFeed fake_host() {
  HostFeed f;
  f.drain_intervals = [](std::vector<ledger::HostInterval>* out) -> uint64_t {
    std::lock_guard<std::mutex> lock(g_host_mu);
    out->insert(out->end(), g_host_intervals.begin(), g_host_intervals.end());
    g_host_intervals.clear();
    uint64_t d = g_host_dropped;
    g_host_dropped = 0;
    return d;
  };
  f.drain_steps = [](std::vector<uint64_t>* out) -> uint64_t {
    std::lock_guard<std::mutex> lock(g_host_mu);
    out->insert(out->end(), g_host_steps.begin(), g_host_steps.end());
    g_host_steps.clear();
    return 0;
  };
  f.set_interval_threshold = [](uint64_t t) {
    std::lock_guard<std::mutex> lock(g_host_mu);
    g_threshold = t;
  };
  f.launches = []() -> uint64_t { return 42; };
  return f;
}

double nominal_ticks_per_ns() { return 1e-9 / clock::tick_seconds(); }

class CuptiSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_cupti::reset();
    std::lock_guard<std::mutex> lock(g_host_mu);
    g_host_intervals.clear();
    g_host_steps.clear();
    g_host_dropped = 0;
    g_threshold = ~0ull;
  }
  void TearDown() override { session.reset(); }

  CuptiSession& make(Mode mode, uint64_t limit = 4 << 20, size_t buffer = 1 << 20, uint64_t ceiling = 0) {
    SessionConfig c;
    c.mode = mode;
    c.injection = injection;
    c.buffer_limit_bytes = limit;
    c.buffer_bytes = buffer;
    c.buffer_ceiling_bytes = ceiling;
    c.interval_threshold_ticks = 1234;
    c.nominal_ticks_per_ns = nominal_ticks_per_ns();
    c.flush_wait = std::chrono::milliseconds(5000);  // wide: sanitizer builds on a loaded machine
    session = std::make_unique<CuptiSession>(fake_cupti::api(), &sink, fake_host(), c);
    return *session;
  }

  RecordingSink sink;
  std::string injection;  // SessionConfig::injection of the next make()
  std::unique_ptr<CuptiSession> session;
};

// ---- subscribing -------------------------------------------------------------

TEST_F(CuptiSessionTest, SubscribesAsOneOfSeveralWhereAllowed) {
  StartOutcome out = make(Mode::kAuto).start();
  EXPECT_EQ(out.status, Status::kMeasured);
  auto& f = fake_cupti::state();
  EXPECT_EQ(f.last_allow, 1);
  EXPECT_TRUE(session->shares_cupti());
  EXPECT_TRUE(f.used_v2_callbacks);
  EXPECT_FALSE(f.used_legacy_callbacks);
  EXPECT_EQ(f.enabled.size(), 4u);
  EXPECT_EQ(f.enabled[0], CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  { std::lock_guard<std::mutex> lock(g_host_mu); EXPECT_EQ(g_threshold, 1234u); }
  session->stop();
  EXPECT_FALSE(f.subscribed);
  EXPECT_TRUE(f.enabled.empty());
  { std::lock_guard<std::mutex> lock(g_host_mu); EXPECT_EQ(g_threshold, ~0ull); }
}

TEST_F(CuptiSessionTest, StepsAsideNamingTheToolThatHoldsCupti) {
  fake_cupti::state().holder = "Nsight Systems";
  for (Mode mode : {Mode::kAuto, Mode::kOn}) {
    StartOutcome out = make(mode).start();
    EXPECT_EQ(out.status, Status::kHeldByOther);
    EXPECT_EQ(out.detail, "CUPTI for Nsight Systems");
    EXPECT_FALSE(session->subscribed());
    EXPECT_TRUE(fake_cupti::state().enabled.empty());
  }
}

// See Note [gpu_timeline:auto and CUPTI's single subscription]: a free single
// subscription is taken under auto too (it yields to any later tool).
TEST_F(CuptiSessionTest, AutoTakesAFreeSingleSubscription) {
  fake_cupti::state().multi_supported = false;
  StartOutcome out = make(Mode::kAuto).start();
  EXPECT_EQ(out.status, Status::kMeasured);
  EXPECT_TRUE(out.how_to_enable.empty());
  auto& f = fake_cupti::state();
  EXPECT_EQ(f.subscribe_calls, 2);  // the allow=1 try, then the single one
  EXPECT_EQ(f.last_allow, 0);
  EXPECT_FALSE(session->shares_cupti());
  EXPECT_TRUE(f.used_legacy_callbacks);
  // And yields to any tool that subscribes later.
  EXPECT_TRUE(session->yield_if_needed("libkineto.so", /*exclusive=*/false));
  EXPECT_FALSE(f.subscribed);
}

TEST_F(CuptiSessionTest, AutoLeavesTheSingleSubscriptionToAnInjectedTool) {
  fake_cupti::state().multi_supported = false;
  injection = "/opt/nsight-systems/target-linux-x64/libToolsInjection64.so";
  StartOutcome out = make(Mode::kAuto).start();
  EXPECT_EQ(out.status, Status::kUnavailable);
  EXPECT_NE(out.detail.find("CUDA_INJECTION64_PATH"), std::string::npos) << out.detail;
  EXPECT_NE(out.detail.find("libToolsInjection64.so"), std::string::npos) << out.detail;
  EXPECT_EQ(out.how_to_enable, kHowToEnableSingle);
  EXPECT_NE(out.how_to_enable.find("gpu_timeline:on"), std::string::npos);
  EXPECT_FALSE(fake_cupti::state().subscribed);
  EXPECT_EQ(fake_cupti::state().subscribe_calls, 1);  // only the allow=1 try
  // Where several may subscribe, an injected tool is no reason to stay out.
  session.reset();
  fake_cupti::reset();
  EXPECT_EQ(make(Mode::kAuto).start().status, Status::kMeasured);
  EXPECT_TRUE(session->shares_cupti());
  // gpu_timeline:on takes the single subscription even so.
  session.reset();
  fake_cupti::reset();
  fake_cupti::state().multi_supported = false;
  EXPECT_EQ(make(Mode::kOn).start().status, Status::kMeasured);
}

TEST_F(CuptiSessionTest, OnTakesTheSingleSubscription) {
  fake_cupti::state().multi_supported = false;
  StartOutcome out = make(Mode::kOn).start();
  EXPECT_EQ(out.status, Status::kMeasured);
  auto& f = fake_cupti::state();
  EXPECT_EQ(f.last_allow, 0);
  EXPECT_FALSE(session->shares_cupti());
  EXPECT_TRUE(f.used_legacy_callbacks);
  EXPECT_EQ(f.enabled.size(), 4u);
}

TEST_F(CuptiSessionTest, OlderCuptiWithoutV2) {
  fake_cupti::state().has_v2 = false;
  StartOutcome out = make(Mode::kAuto).start();
  EXPECT_EQ(out.status, Status::kMeasured);
  EXPECT_EQ(fake_cupti::state().last_allow, -1);  // cuptiSubscribe
  session.reset();
  fake_cupti::reset();
  fake_cupti::state().has_v2 = false;
  injection = "/opt/tool/libinject.so";
  out = make(Mode::kAuto).start();
  EXPECT_EQ(out.status, Status::kUnavailable);
  EXPECT_EQ(out.how_to_enable, kHowToEnableSingle);
  EXPECT_EQ(fake_cupti::state().subscribe_calls, 0);
  session.reset();
  out = make(Mode::kOn).start();
  EXPECT_EQ(out.status, Status::kMeasured);
  EXPECT_EQ(fake_cupti::state().last_allow, -1);  // cuptiSubscribe
}

// ---- records ---------------------------------------------------------------

TEST_F(CuptiSessionTest, WorkerDecodesEveryCountedKind) {
  make(Mode::kAuto).start();
  uint64_t t = fake_cupti::now_ns();
  CUpti_ActivityAPI driver_call{};
  driver_call.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  ASSERT_TRUE(fake_cupti::fill_buffer({
      fake_cupti::kernel("_Z4gemmPfS_", t, t + 1000, 0),
      fake_cupti::kernel("_Z21ncclDevKernel_Generic24ncclDevKernelArgs4K", t + 100, t + 200, 1),
      fake_cupti::kernel("ncclKernel_AllReduce_RING_LL_Sum_float", t + 100, t + 200, 1),
      fake_cupti::memcpy_record(t + 2000, t + 3000, 0),
      fake_cupti::peer_copy(t + 4000, t + 4500, 1),
      fake_cupti::memset_record(t + 5000, t + 5100, 0),
      fake_cupti::kernel("_Z10incompletev", t + 6000, 0, 0),  // a forced flush took it early
      driver_call,
  }));
  Snapshot snap;
  session->snapshot(&snap);
  ASSERT_EQ(sink.activities.size(), 6u);
  EXPECT_EQ(snap.records, 6u);
  const auto& a = sink.activities;
  EXPECT_EQ(a[0].kind, Busy::kCompute);
  EXPECT_STREQ(a[0].name, "_Z4gemmPfS_");
  EXPECT_EQ(a[1].kind, Busy::kCommunication);
  EXPECT_EQ(a[1].device, 1);
  EXPECT_EQ(a[2].kind, Busy::kCommunication);
  EXPECT_EQ(a[3].kind, Busy::kCopies);
  EXPECT_EQ(a[3].name, nullptr);
  EXPECT_EQ(a[4].kind, Busy::kCopies);
  EXPECT_EQ(a[4].device, 1);
  EXPECT_EQ(a[5].kind, Busy::kMemsets);
  for (const GpuActivity& g : a) EXPECT_LE(g.start_ticks, g.end_ticks);
  // Durations survive the alignment (1000 ns of kernel, within 1%).
  double kernel_ns = static_cast<double>(a[0].end_ticks - a[0].start_ticks) / nominal_ticks_per_ns();
  EXPECT_NEAR(kernel_ns, 1000, 10);
  ASSERT_EQ(snap.devices.size(), 1u);
  EXPECT_EQ(snap.devices[0].launches, 42u);
  EXPECT_FALSE(sink.watermarks.empty());
}

TEST_F(CuptiSessionTest, HostIntervalsAndStepsReachTheSink) {
  make(Mode::kAuto).start();
  {
    std::lock_guard<std::mutex> lock(g_host_mu);
    g_host_intervals.push_back(ledger::HostInterval{10, 20, nullptr, 0, 7});
    g_host_steps.push_back(15);
    g_host_dropped = 3;
  }
  Snapshot snap;
  session->snapshot(&snap);
  ASSERT_EQ(sink.intervals.size(), 1u);
  EXPECT_EQ(sink.intervals[0].tid, 7);
  ASSERT_EQ(sink.steps.size(), 1u);
  EXPECT_EQ(snap.host_intervals_dropped, 3u);
}

TEST_F(CuptiSessionTest, PoolIsBoundedAndItsRefusalsAreCounted) {
  make(Mode::kAuto, /*limit=*/2 * 4096, /*buffer=*/4096, /*ceiling=*/2 * 4096).start();
  uint64_t t = fake_cupti::now_ns();
  EXPECT_TRUE(fake_cupti::fill_buffer({fake_cupti::kernel("_Z1av", t, t + 10, 0)}));
  EXPECT_TRUE(fake_cupti::fill_buffer({fake_cupti::kernel("_Z1bv", t, t + 10, 0)}));
  // Both buffers lent: the third request gets none; CUPTI drops the records.
  EXPECT_FALSE(fake_cupti::fill_buffer({fake_cupti::kernel("_Z1cv", t, t + 10, 0),
                                        fake_cupti::kernel("_Z1dv", t, t + 10, 0)}));
  Snapshot snap;
  session->snapshot(&snap);
  EXPECT_EQ(snap.dropped_by_pool, 1u);
  EXPECT_EQ(snap.dropped_by_cupti, 2u);  // CUPTI's own count, read per completed buffer
  EXPECT_EQ(snap.records, 2u);
  EXPECT_EQ(snap.buffer_bytes_limit, 2u * 4096);
  EXPECT_EQ(snap.buffer_bytes_peak, 2u * 4096);
  // Processed buffers are recycled: requests succeed again, no new memory.
  EXPECT_TRUE(fake_cupti::fill_buffer({fake_cupti::kernel("_Z1ev", t, t + 10, 0)}));
  EXPECT_TRUE(fake_cupti::fill_buffer({fake_cupti::kernel("_Z1fv", t, t + 10, 0)}));
  session->snapshot(&snap);
  EXPECT_EQ(snap.records, 4u);
  EXPECT_EQ(snap.dropped_by_pool, 1u);
  EXPECT_EQ(snap.buffer_bytes_peak, 2u * 4096);
}

// See Note [Buffers per launching thread]: CUPTI holds one buffer per launching
// thread; 20 threads' buffers held at once, with a cap of 4 buffers, are all
// lent, and nothing is dropped.
TEST_F(CuptiSessionTest, PoolGrowsWithTheBuffersCuptiHoldsPerThread) {
  make(Mode::kAuto, /*limit=*/4 * 4096, /*buffer=*/4096).start();  // ceiling 16 buffers
  uint64_t t = fake_cupti::now_ns();
  for (int thread = 0; thread < 16; ++thread)
    EXPECT_TRUE(fake_cupti::fill_buffer({fake_cupti::kernel("_Z1kv", t, t + 10, 0)})) << thread;
  EXPECT_FALSE(fake_cupti::fill_buffer({fake_cupti::kernel("_Z1kv", t, t + 10, 0)}));  // past the ceiling
  Snapshot snap;
  session->snapshot(&snap);
  EXPECT_EQ(snap.records, 16u);
  EXPECT_EQ(snap.dropped_by_pool, 1u);
  EXPECT_EQ(snap.buffers_beyond_cap, 0u);
  EXPECT_EQ(snap.buffer_bytes_limit, 4u * 4096);
  EXPECT_EQ(snap.buffer_bytes_peak, 16u * 4096);
}

// See Note [Never refusing a CUPTI that crashes on it]: before CUPTI 12.9
// (version 27) the pool lends past its ceiling rather than refuse.
TEST_F(CuptiSessionTest, NeverRefusesACuptiThatCrashesOnARefusal) {
  EXPECT_FALSE(cupti_refuses_safely(26));  // CUDA 12.8
  EXPECT_TRUE(cupti_refuses_safely(27));   // CUDA 12.9
  EXPECT_TRUE(cupti_refuses_safely(130000));
  for (uint32_t version : {26u, 0u}) {  // 0: no cuptiGetVersion to ask
    session.reset();
    fake_cupti::reset();
    fake_cupti::state().version = version;
    fake_cupti::state().has_v2 = false;
    make(Mode::kOn, /*limit=*/2 * 4096, /*buffer=*/4096, /*ceiling=*/2 * 4096).start();
    uint64_t t = fake_cupti::now_ns();
    for (int i = 0; i < 5; ++i) EXPECT_TRUE(fake_cupti::fill_buffer({fake_cupti::kernel("_Z1kv", t, t + 10, 0)}));
    Snapshot snap;
    session->snapshot(&snap);
    EXPECT_EQ(snap.dropped_by_pool, 0u) << version;
    EXPECT_EQ(snap.buffers_beyond_cap, 3u) << version;
    EXPECT_EQ(snap.records, 5u) << version;
  }
}

TEST(BufferPool, GrowsOnlyForBuffersCuptiHolds) {
  BufferPool pool(/*limit=*/4 * 64, /*buffer=*/64, /*ceiling=*/8 * 64);
  std::vector<uint8_t*> lent;
  for (int i = 0; i < 8; ++i) lent.push_back(pool.acquire());  // held by CUPTI: grows to the ceiling
  for (uint8_t* b : lent) EXPECT_NE(b, nullptr);
  EXPECT_EQ(pool.held_by_cupti(), 8u);
  EXPECT_EQ(pool.acquire(), nullptr);
  // Handed back but not yet processed (gpuslack's own backlog): no growth.
  for (uint8_t* b : lent) EXPECT_TRUE(pool.returned_by_cupti(b));
  EXPECT_EQ(pool.held_by_cupti(), 0u);
  EXPECT_EQ(pool.acquire(), nullptr);
  EXPECT_EQ(pool.refused(), 2u);
  EXPECT_TRUE(pool.release(lent[0]));
  EXPECT_EQ(pool.acquire(), lent[0]);
  uint8_t foreign[64];
  EXPECT_FALSE(pool.returned_by_cupti(foreign));
  for (size_t i = 1; i < lent.size(); ++i) pool.release(lent[i]);
  EXPECT_TRUE(pool.returned_by_cupti(lent[0]));
  pool.release(lent[0]);
  // Refusing unsafe: past the ceiling, counted.
  pool.set_refusal_safe(false);
  std::vector<uint8_t*> more;
  for (int i = 0; i < 10; ++i) more.push_back(pool.acquire());
  for (uint8_t* b : more) EXPECT_NE(b, nullptr);
  EXPECT_EQ(pool.beyond_ceiling(), 2u);
  EXPECT_EQ(pool.refused(), 2u);
  for (uint8_t* b : more) {
    pool.returned_by_cupti(b);
    pool.release(b);
  }
}

TEST(BufferPool, AllocatesLazilyUpToTheCap) {
  BufferPool pool(3 * 4096, 4096, /*ceiling=*/3 * 4096);
  EXPECT_EQ(pool.peak_bytes(), 0u);
  uint8_t* a = pool.acquire();
  uint8_t* b = pool.acquire();
  uint8_t* c = pool.acquire();
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 8, 0u);
  EXPECT_EQ(pool.acquire(), nullptr);
  EXPECT_EQ(pool.refused(), 1u);
  pool.release(b);
  EXPECT_EQ(pool.acquire(), b);
  EXPECT_EQ(pool.peak_bytes(), 3u * 4096);
  pool.release(a);
  pool.release(b);
  pool.release(c);
}

// A buffer another tool lent CUPTI, handed to gpuslack's callback by a
// process-wide registration, is never taken in nor lent on.
TEST(BufferPool, AForeignBufferIsNotTakenIn) {
  BufferPool pool(2 * 4096, 4096);
  alignas(8) static uint8_t foreign[64];
  EXPECT_FALSE(pool.owns(foreign));
  EXPECT_FALSE(pool.release(foreign));
  uint8_t* a = pool.acquire();
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(pool.owns(a));
  EXPECT_NE(pool.acquire(), foreign);  // a new buffer of the pool's, not the foreign one
  EXPECT_TRUE(pool.release(a));
}

TEST(BufferPool, BufferSizeFollowsTheCap) {
  EXPECT_EQ(buffer_bytes_for(64ull << 20), 4u << 20);
  EXPECT_EQ(buffer_bytes_for(1ull << 20), 1u << 20);
  EXPECT_EQ(buffer_bytes_for(4096ull << 20), 8u << 20);
}

TEST(RecordDecoder, NamesNcclKernelsMangledOrNot) {
  EXPECT_TRUE(is_nccl_kernel("ncclDevKernel_Generic"));
  EXPECT_TRUE(is_nccl_kernel("_Z21ncclDevKernel_Generic24ncclDevKernelArgs4K"));
  EXPECT_FALSE(is_nccl_kernel("_Z4gemmPfS_"));
  EXPECT_FALSE(is_nccl_kernel("_ZN4ncclE"));
  EXPECT_FALSE(is_nccl_kernel(nullptr));
  EXPECT_FALSE(is_nccl_kernel("nccx"));
}

// ---- clock alignment -------------------------------------------------------

TEST(ClockAlignment, MapsThroughTheAnchorThenFitsTheSlope) {
  ClockAlignment a(3.0);  // nominal: 3 ticks per ns
  a.add(ClockSample{1'000'000'000, 500, 2});
  EXPECT_EQ(a.to_ticks(1'000'000'010), 530u);
  EXPECT_EQ(a.to_ticks(0), 0u);  // CUPTI's "no timestamp" stays so
  EXPECT_EQ(a.to_ns(530), 1'000'000'010u);
  // Too close to refine the slope.
  a.add(ClockSample{1'000'000'000 + ClockAlignment::kMinSpanNs / 2, 999, 2});
  EXPECT_DOUBLE_EQ(a.ticks_per_ns(), 3.0);
  // Far enough: 2.5 ticks per ns, measured.
  a.add(ClockSample{1'000'000'000 + 200'000'000, 500 + 500'000'000, 2});
  EXPECT_DOUBLE_EQ(a.ticks_per_ns(), 2.5);
  EXPECT_EQ(a.to_ticks(1'000'000'000 + 100'000'000), 500u + 250'000'000u);
  EXPECT_EQ(a.anchor_error_ticks(), 2u);
  // Large absolute times keep nanosecond resolution (no double rounding).
  ClockAlignment big(1.0);
  big.add(ClockSample{(1ull << 61) + 7, 1000, 0});
  EXPECT_EQ(big.to_ticks((1ull << 61) + 8), 1001u);
}

TEST_F(CuptiSessionTest, RecordsLandOnTheHostClock) {
  fake_cupti::state().ns_offset = 123'456'789'000;  // CUPTI's clock: another origin
  make(Mode::kAuto).start();
  uint64_t ns = fake_cupti::now_ns();
  uint64_t ticks = clock::ticks();
  ASSERT_TRUE(fake_cupti::fill_buffer({fake_cupti::kernel("_Z1kv", ns - 1'000'000, ns, 0)}));
  Snapshot snap;
  session->snapshot(&snap);
  ASSERT_EQ(sink.activities.size(), 1u);
  // The kernel ended "now": within 100 us of the tick read beside it (wide:
  // the bracket, the calibration and a loaded machine).
  double error_us = std::fabs(static_cast<double>(sink.activities[0].end_ticks) - static_cast<double>(ticks)) *
                    clock::tick_seconds() * 1e6;
  EXPECT_LT(error_us, 100.0);
}

// ---- a later tool ----------------------------------------------------------

TEST_F(CuptiSessionTest, YieldsToALaterToolThatWantsCuptiAlone) {
  make(Mode::kAuto).start();
  uint64_t t = fake_cupti::now_ns();
  ASSERT_TRUE(fake_cupti::fill_buffer({fake_cupti::kernel("_Z1av", t, t + 10, 0)}));
  // One of several, and the tool asks for the same: both run.
  EXPECT_FALSE(session->yield_if_needed("nsys", /*exclusive=*/false));
  EXPECT_TRUE(session->subscribed());
  // The tool asks CUPTI to itself (cuptiSubscribe): gpuslack flushes,
  // processes, disables and unsubscribes first.
  EXPECT_TRUE(session->yield_if_needed("libkineto.so", /*exclusive=*/true));
  auto& f = fake_cupti::state();
  EXPECT_FALSE(f.subscribed);
  EXPECT_TRUE(f.enabled.empty());
  EXPECT_GE(f.flushes, 1);
  Snapshot snap;
  session->snapshot(&snap);
  EXPECT_EQ(snap.records, 1u);  // what was measured until then
  EXPECT_EQ(snap.stopped_by, "libkineto.so");
  EXPECT_GE(snap.stopped_after_s, 0.0);
  // The tool's subscription now goes through as if gpuslack were not there.
  CUpti_SubscriberHandle h;
  EXPECT_EQ(fake_cupti::api()->subscribe(&h, nullptr, nullptr), CUPTI_SUCCESS);
  // Late buffers are refused, never queued.
  EXPECT_FALSE(fake_cupti::fill_buffer({fake_cupti::kernel("_Z1bv", t, t + 10, 0)}));
}

TEST_F(CuptiSessionTest, YieldsToAnyLaterToolWhileHoldingTheSingleSubscription) {
  fake_cupti::state().multi_supported = false;
  make(Mode::kOn).start();
  EXPECT_TRUE(session->yield_if_needed("CUPTI for nsys", /*exclusive=*/false));
  EXPECT_FALSE(session->subscribed());
  EXPECT_FALSE(session->yield_if_needed("again", true));  // once
}

// ---- fork ------------------------------------------------------------------

TEST_F(CuptiSessionTest, AForkedChildLendsNoBuffer) {
  make(Mode::kAuto).start();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    CuptiSession::forget_after_fork();
    uint8_t* buffer = reinterpret_cast<uint8_t*>(1);
    size_t size = 1, max_records = 1;
    CUpti_BufferCallbackRequestInfo info{sizeof(info)};
    fake_cupti::state().request_v2(&buffer, &size, &max_records, &info);
    _exit(buffer == nullptr && size == 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace timeline
}  // namespace gpuslack

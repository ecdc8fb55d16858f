// The ledger: per-thread shards merged at report time, exited threads kept,
// no count lost with eight threads recording while a ninth reads.
#include "ledger/ledger.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "base/clock.h"

namespace gpuslack {
namespace ledger {
namespace {

// Ids far from the ones other tests in this binary might use.
const ApiCall kAlloc{100, "testAlloc", Category::kAllocation};
const ApiCall kCopy{101, "testCopy", Category::kCopy};
const ApiCall kStagedCopy{102, "testStagedCopy", Category::kCopy, false, /*samples_pageable_sites=*/true};

struct Totals {
  uint64_t count = 0, ticks = 0, bytes = 0, max = 0, copies = 0, copy_bytes = 0, sites = 0;
  uint64_t category[kCategoryCount] = {};
};

Totals totals(const std::vector<ThreadFigures>& threads, const ApiCall& call) {
  Totals t;
  for (const ThreadFigures& th : threads) {
    for (const CallFigures& c : th.calls)
      if (c.call == &call) {
        t.count += c.count;
        t.ticks += c.ticks;
        t.bytes += c.bytes;
        t.max = std::max(t.max, c.max_ticks);
      }
    for (const CopyFigures& c : th.copies)
      if (c.copy == CopyKind::kHostToDevice && c.host == HostMemory::kPinned) {
        t.copies += c.count;
        t.copy_bytes += c.bytes;
      }
    for (const CallSiteFigures& s : th.call_sites)
      if (s.call == &call) t.sites += s.count;
    for (int i = 0; i < kCategoryCount; ++i) t.category[i] += th.ticks[i];
  }
  return t;
}

TEST(Ledger, EightThreadsRecordWhileANinthReadsAndNothingIsLost) {
  register_call(&kAlloc);
  register_call(&kCopy);
  reset();
  constexpr int kThreads = 8, kCalls = 20000;
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) {
      std::vector<ThreadFigures> snap = snapshot();
      Totals t = totals(snap, kAlloc);
      EXPECT_LE(t.count, uint64_t{kThreads} * (kCalls + 1));
    }
  });
  std::vector<std::thread> writers;
  for (int w = 0; w < kThreads; ++w)
    writers.emplace_back([w] {
      CallInfo copy;
      copy.bytes = 10;
      copy.copy = CopyKind::kHostToDevice;
      copy.host = HostMemory::kPinned;
      void* frames[2] = {reinterpret_cast<void*>(0x1000 + w), reinterpret_cast<void*>(0x2000)};
      for (int i = 0; i < kCalls; ++i) {
        record(kAlloc, 3, CallInfo{7, CopyKind::kNone, HostMemory::kNone, true});
        record(kCopy, 5, copy);
        if (i % 1000 == 0) record_call_site(kAlloc, 3, frames, 2);
      }
      record(kAlloc, 1000 + w, CallInfo{});
    });
  for (auto& t : writers) t.join();
  done = true;
  reader.join();

  // The writers have exited: their figures stay.
  std::vector<ThreadFigures> snap = snapshot();
  Totals a = totals(snap, kAlloc), c = totals(snap, kCopy);
  EXPECT_EQ(uint64_t{kThreads} * (kCalls + 1), a.count);
  EXPECT_EQ(uint64_t{kThreads} * kCalls * 7, a.bytes);
  EXPECT_EQ(uint64_t{kThreads} * kCalls * 3 + (8 * 1000 + 28), a.ticks);
  EXPECT_EQ(1007u, a.max);
  EXPECT_EQ(uint64_t{kThreads} * kCalls, c.count);
  EXPECT_EQ(uint64_t{kThreads} * kCalls, a.copies);  // copies are per cell, not per call
  EXPECT_EQ(uint64_t{kThreads} * kCalls * 10, a.copy_bytes);
  EXPECT_EQ(uint64_t{kThreads} * (kCalls / 1000), a.sites);
  EXPECT_EQ(a.ticks, a.category[static_cast<int>(Category::kAllocation)]);
  EXPECT_EQ(c.ticks, a.category[static_cast<int>(Category::kCopy)]);
}

TEST(Ledger, CallSitesAreKeyedByFramesAndKeepTheirLongestCall) {
  register_call(&kAlloc);
  reset();
  void* here[3] = {reinterpret_cast<void*>(1), reinterpret_cast<void*>(2), reinterpret_cast<void*>(3)};
  void* there[1] = {reinterpret_cast<void*>(9)};
  record(kAlloc, 10, CallInfo{});
  record_call_site(kAlloc, 10, here, 3);
  record_call_site(kAlloc, 30, here, 3);
  record_call_site(kAlloc, 5, there, 1);
  record_call_site(kAlloc, 5, here, 0);  // no frames: ignored
  std::vector<ThreadFigures> snap = snapshot();
  ASSERT_EQ(1u, snap.size());
  ASSERT_EQ(2u, snap[0].call_sites.size());
  for (const CallSiteFigures& s : snap[0].call_sites) {
    if (s.frames.size() == 3) {
      EXPECT_EQ(2u, s.count);
      EXPECT_EQ(40u, s.ticks);
      EXPECT_EQ(30u, s.max_ticks);
    } else {
      EXPECT_EQ(1u, s.count);
      EXPECT_EQ(5u, s.ticks);
    }
  }
}

// See Note [Pageable call sites]: the "pin these buffers" samples come from
// the call's one record, so they count the copies the copy table's
// pageable host<->device cells count for the calls that sample them: not
// pinned ones, not host-to-host ones, not a call that failed (recorded
// with no CallInfo), and none of a call that does not sample them.
TEST(Ledger, PageableCallSitesCountWhatTheCopyTableCounts) {
  register_call(&kCopy);
  register_call(&kStagedCopy);
  reset();
  std::thread([] {
    auto copy = [](CopyKind kind, HostMemory host, uint64_t bytes) {
      CallInfo i;
      i.bytes = bytes;
      i.copy = kind;
      i.host = host;
      return i;
    };
    for (int i = 0; i < 3; ++i) record(kStagedCopy, 10, copy(CopyKind::kHostToDevice, HostMemory::kPageable, 1000));
    for (int i = 0; i < 2; ++i) record(kStagedCopy, 10, copy(CopyKind::kDeviceToHost, HostMemory::kPageable, 300));
    record(kStagedCopy, 10, copy(CopyKind::kHostToDevice, HostMemory::kPinned, 5000));
    record(kStagedCopy, 10, copy(CopyKind::kHostToHost, HostMemory::kPageable, 7000));
    record(kStagedCopy, 10, CallInfo{});  // a failed pageable copy: nothing moved
    record(kCopy, 10, copy(CopyKind::kHostToDevice, HostMemory::kPageable, 4000));  // not sampled
  }).join();
  uint64_t table_copies = 0, table_bytes = 0, site_copies = 0, site_bytes = 0, samples = 0;
  for (const ThreadFigures& t : snapshot()) {
    for (const CopyFigures& c : t.copies)
      if (c.host == HostMemory::kPageable &&
          (c.copy == CopyKind::kHostToDevice || c.copy == CopyKind::kDeviceToHost)) {
        table_copies += c.count;
        table_bytes += c.bytes;
      }
    for (const PageableSiteFigures& p : t.pageable_sites) {
      EXPECT_EQ(&kStagedCopy, p.call);
      site_copies += p.copies;
      site_bytes += p.bytes;
      samples += p.samples;
    }
  }
  EXPECT_EQ(6u, table_copies);  // kCopy's too
  EXPECT_EQ(7600u, table_bytes);
  EXPECT_EQ(5u, site_copies);
  EXPECT_EQ(3600u, site_bytes);
  EXPECT_EQ(5u, samples);  // a thread's first 64 pageable copies: each one
}

TEST(Ledger, ResetForgetsEverything) {
  register_call(&kAlloc);
  record(kAlloc, 10, CallInfo{});
  reset();
  EXPECT_TRUE(snapshot().empty());
}

TEST(Histogram, PercentilesAreTheBucketsGeometricMiddle) {
  Histogram h;
  EXPECT_EQ(0, h.percentile(0.5));
  for (int i = 0; i < 99; ++i) h.add(1000);  // bucket 9: [512, 1024)
  h.add(1 << 20);                            // bucket 20
  EXPECT_NEAR(512 * std::sqrt(2.0), h.percentile(0.5), 1e-9);
  EXPECT_NEAR(512 * std::sqrt(2.0), h.percentile(0.99), 1e-9);
  EXPECT_NEAR((1 << 20) * std::sqrt(2.0), h.percentile(1.0), 1e-6);
  Histogram zero;
  zero.add(0);
  EXPECT_EQ(1, zero.percentile(0.5));
}

TEST(Clock, TickSecondsMatchesTheMonotonicClock) {
  clock::calibrate_start();
  double t0 = clock::monotonic_seconds();
  uint64_t k0 = clock::ticks();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  double per_tick = clock::tick_seconds();
  double measured = static_cast<double>(clock::ticks() - k0) * per_tick;
  double truth = clock::monotonic_seconds() - t0;
  EXPECT_NEAR(truth, measured, truth * 0.05);
}

}  // namespace
}  // namespace ledger
}  // namespace gpuslack

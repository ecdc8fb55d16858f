// Python frames at call sites (ledger/python_frames.h) where no Python
// runs: this test process has none, so a capture is the native backtrace
// alone; tagged frames made by hand travel through the call-site keys and
// come back as their texts. The capture under a real interpreter is
// tests/python/test_python_frames.py.
#include "ledger/python_frames.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "ledger/backtrace.h"
#include "ledger/host_activity.h"
#include "ledger/ledger.h"

namespace gpuslack {
namespace ledger {
namespace {

const ApiCall kSync{102, "testSync", Category::kSync};

void* native(uintptr_t a) { return reinterpret_cast<void*>(a); }

TEST(PythonFrames, AProcessWithoutPythonCapturesNone) {
  void* frames[kMaxPythonFrames] = {};
  EXPECT_EQ(0, capture_python_frames(frames, kMaxPythonFrames));
  EXPECT_EQ(0, capture_python_frames(nullptr, kMaxPythonFrames));
  // Nor on a thread of its own.
  int n = -1;
  std::thread([&] { n = capture_python_frames(frames, kMaxPythonFrames); }).join();
  EXPECT_EQ(0, n);
}

TEST(PythonFrames, ACallSiteIsThenTheNativeBacktrace) {
  void* site[16] = {};
  int n = capture_call_site(site, 16);
  ASSERT_GT(n, 2);
  EXPECT_EQ(0, leading_python_frames(site, n));
  for (int i = 0; i < n; ++i) EXPECT_FALSE(is_python_frame(site[i])) << i;
  EXPECT_EQ(0, capture_call_site(site, 0));
}

TEST(PythonFrames, TagsAreNoAddressAndReadBackTheirText) {
  void* tag = testing::intern_python_text("train.py:42 in step");
  ASSERT_NE(nullptr, tag);
  EXPECT_TRUE(is_python_frame(tag));
  std::string text;
  ASSERT_TRUE(python_frame_text(tag, &text));
  EXPECT_EQ("train.py:42 in step", text);
  // A second text is another tag.
  void* other = testing::intern_python_text("train.py:43 in step");
  ASSERT_NE(nullptr, other);
  EXPECT_NE(tag, other);
  // Native addresses, and user space's highest, are not Python frames.
  int local = 0;
  for (void* a : {native(0), native(1), static_cast<void*>(&local), native(0x7fffffffffffull),
                  reinterpret_cast<void*>(&capture_call_site)}) {
    EXPECT_FALSE(is_python_frame(a));
    EXPECT_FALSE(python_frame_text(a, &text));
  }
  // A tag of a slot never filled reads nothing.
  EXPECT_FALSE(python_frame_text(reinterpret_cast<void*>((uintptr_t{0x7079} << 48) | kMaxPythonTexts), &text));
  EXPECT_FALSE(python_frame_text(reinterpret_cast<void*>(uintptr_t{0x7079} << 48), &text));
}

TEST(PythonFrames, KeysKeepThePythonFramesBeforeKMaxFramesNativeOnes) {
  register_call(&kSync);
  reset();
  void* step = testing::intern_python_text("train.py:7 in step");
  void* main_frame = testing::intern_python_text("train.py:20 in <module>");
  void* other = testing::intern_python_text("train.py:9 in step");
  ASSERT_TRUE(step && main_frame && other);
  std::vector<void*> site = {step, main_frame};
  for (int i = 0; i < kMaxFrames + 3; ++i) site.push_back(native(0x1000 + i));
  record(kSync, 5, CallInfo{});  // a snapshot lists the threads that made calls
  uint64_t key = record_call_site(kSync, 5, site.data(), static_cast<int>(site.size()));
  ASSERT_NE(0u, key);
  std::vector<void*> back;
  ASSERT_TRUE(call_site_frames(key, &back));
  ASSERT_EQ(static_cast<size_t>(2 + kMaxFrames), back.size());
  EXPECT_EQ(step, back[0]);
  EXPECT_EQ(main_frame, back[1]);
  EXPECT_EQ(native(0x1000 + kMaxFrames - 1), back.back());
  // The same native stack from another Python line is another site.
  site[0] = other;
  uint64_t other_key = record_call_site(kSync, 5, site.data(), static_cast<int>(site.size()));
  ASSERT_NE(0u, other_key);
  EXPECT_NE(key, other_key);
  std::vector<ThreadFigures> snap = snapshot();
  size_t sites = 0;
  for (const ThreadFigures& t : snap)
    for (const CallSiteFigures& s : t.call_sites)
      if (s.call == &kSync) ++sites;
  EXPECT_EQ(2u, sites);
  reset();
}

}  // namespace
}  // namespace ledger
}  // namespace gpuslack

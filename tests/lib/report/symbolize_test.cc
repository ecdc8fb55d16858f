#include "report/symbolize.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cerrno>  // program_invocation_short_name
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ledger/backtrace.h"
#include "ledger/python_frames.h"

// Exported (the test is linked with -rdynamic) so dladdr can name it.
namespace gpuslack_test_symbolize {
namespace inner {
__attribute__((noinline, visibility("default"))) int demangle_me(int x) {
  asm volatile("" ::: "memory");
  return x + 1;
}
}  // namespace inner
}  // namespace gpuslack_test_symbolize

namespace gpuslack {
namespace report {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Hidden: in the executable, but not in its dynamic symbol table.
__attribute__((noinline)) int hidden_function(int x) {
  asm volatile("" ::: "memory");
  return x * 3;
}

// A return address just inside `fn`, as a call from its first byte would leave.
void* after(const void* fn) { return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(fn) + 1); }

const void* demangle_me_address() {
  return reinterpret_cast<const void*>(&gpuslack_test_symbolize::inner::demangle_me);
}

// qsort of the C library itself (not a sanitizer's interceptor, which
// dlsym(RTLD_DEFAULT, ...) would find under ASan).
const void* libc_qsort() {
  void* libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  if (libc == nullptr) return nullptr;
  void* fn = dlsym(libc, "qsort");
  dlclose(libc);
  return fn;
}

const void* test_executable_base() {
  Dl_info info{};
  if (dladdr(demangle_me_address(), &info) == 0) return nullptr;
  return info.dli_fbase;
}

// This executable's name as frames show it (gpuslack_lib_test under ctest).
std::string self() { return program_invocation_short_name; }

std::string demangled() {
  return absl::StrCat("gpuslack_test_symbolize::inner::demangle_me(int)+0x1 (", self(), ")");
}

TEST(Symbolize, DemanglesCxxNames) {
  EXPECT_THAT(symbolize({after(demangle_me_address())}, nullptr), ElementsAre(demangled()));
}

TEST(Symbolize, NamesCFunctionsInSharedLibraries) {
  const void* qsort_fn = libc_qsort();
  ASSERT_NE(nullptr, qsort_fn);
  EXPECT_THAT(symbolize({after(qsort_fn)}, nullptr), ElementsAre("qsort+0x1 (libc.so.6)"));
}

TEST(Symbolize, ModuleAndOffsetWhenNoSymbol) {
  const void* fn = reinterpret_cast<const void*>(&hidden_function);
  Dl_info info{};
  ASSERT_NE(0, dladdr(fn, &info));
  ASSERT_EQ(nullptr, info.dli_sname) << "hidden_function should not be exported";
  uintptr_t offset = reinterpret_cast<uintptr_t>(after(fn)) - reinterpret_cast<uintptr_t>(info.dli_fbase);
  EXPECT_THAT(symbolize({after(fn)}, nullptr),
              ElementsAre(absl::StrCat(self(), "+0x", absl::Hex(offset))));
}

TEST(Symbolize, UnknownAddressesAreQuestionMarks) {
  void* anon = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(MAP_FAILED, anon);
  EXPECT_THAT(symbolize({nullptr, reinterpret_cast<void*>(1), reinterpret_cast<void*>(0x1000),
                         static_cast<char*>(anon) + 64},
                        nullptr),
              ElementsAre("??", "??", "??", "??"));
  munmap(anon, 4096);
  EXPECT_TRUE(symbolize({}, nullptr).empty());
  EXPECT_TRUE(symbolize({}).empty());
}

TEST(Symbolize, DropsOnlyTheLeadingRunOfOwnFrames) {
  // The core is linked into this executable, so "own" is the executable.
  const void* qsort_fn = libc_qsort();
  ASSERT_NE(nullptr, qsort_fn);
  void* own = after(demangle_me_address());
  std::vector<void*> frames = {own, own, after(qsort_fn), own};
  EXPECT_THAT(symbolize(frames), ElementsAre("qsort+0x1 (libc.so.6)", demangled()));
  EXPECT_THAT(symbolize(frames, test_executable_base()), ElementsAre("qsort+0x1 (libc.so.6)", demangled()));
  EXPECT_EQ(4u, symbolize(frames, nullptr).size());
  // Only own frames: nothing left.
  EXPECT_TRUE(symbolize({own, own}).empty());
  // A leading unknown frame is not own: nothing dropped.
  EXPECT_EQ(4u, symbolize({nullptr, own, own, own}).size());
}

TEST(Symbolize, PythonFramesComeFirstMarkedThenTheNativeOnesLessOurOwn) {
  const void* qsort_fn = libc_qsort();
  ASSERT_NE(nullptr, qsort_fn);
  void* step = ledger::testing::intern_python_text("train.py:42 in step");
  void* loop = ledger::testing::intern_python_text("train.py:50 in <module>");
  ASSERT_TRUE(step && loop);
  void* own = after(demangle_me_address());
  // As capture_call_site keeps them: Python frames, then the native ones
  // with gpuslack's own leading.
  EXPECT_THAT(symbolize({step, loop, own, own, after(qsort_fn)}),
              ElementsAre("train.py:42 in step (python)", "train.py:50 in <module> (python)",
                          "qsort+0x1 (libc.so.6)"));
  // Only Python frames: they stay; a tag whose text is unknown is dropped.
  void* unknown = reinterpret_cast<void*>((uintptr_t{0x7079} << 48) | ledger::kMaxPythonTexts);
  EXPECT_THAT(symbolize({step, unknown, own}), ElementsAre("train.py:42 in step (python)"));
}

TEST(Symbolize, DropsOwnFramesOfARealStack) {
  std::vector<void*> frames(64);
  frames.resize(ledger::capture_backtrace(frames.data(), static_cast<int>(frames.size())));
  std::vector<std::string> all = symbolize(frames, nullptr);
  std::vector<std::string> theirs = symbolize(frames);
  ASSERT_FALSE(all.empty());
  // This test body is in the executable: frame 0 is own, and dropped.
  EXPECT_THAT(all[0], StartsWith(self() + "+0x"));
  ASSERT_LT(theirs.size(), all.size());
  EXPECT_TRUE(std::equal(theirs.begin(), theirs.end(), all.end() - theirs.size()));
  // The stack leaves the executable (for libgtest or the C library's
  // __libc_start_call_main), and what remains starts outside it.
  ASSERT_FALSE(theirs.empty()) << all.back();
  EXPECT_THAT(theirs[0], ::testing::Not(HasSubstr(self())));
}

}  // namespace
}  // namespace report
}  // namespace gpuslack

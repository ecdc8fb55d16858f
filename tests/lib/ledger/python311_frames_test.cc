// CPython 3.11's frames read from its structures (ledger/python311_frames.h),
// here laid out by hand at the offsets the reader uses, with a line table
// that CPython 3.11.7 compiled: every code unit's line is the one Python's
// own co_lines() gives. (The same offsets against a live interpreter:
// tests/python/test_python_frames.py.)
#include "ledger/python311_frames.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace gpuslack {
namespace ledger {
namespace {

// def f(a):            (line 1, in model.py)
//     b = a + 1
//
//     if b > 2:
//         c = [i * 2
//              for i in range(b)]
//         return c
//     return (a,
//             b)
const char kLineTableHex[] =
    "8000d80809884189058041e00708883182758075f002010d20f000010d20dd161b984191689468f003010d20f100010d20f40001"
    "0d208801e00f108808d80c0dd80c0df003010c0ff00001050f";
// (first code unit, end, line) from co_lines().
const int kLines[][3] = {{0, 1, 1},   {1, 2, 2},   {2, 3, 2},   {3, 5, 2},   {5, 6, 2},   {6, 7, 4},
                         {7, 8, 4},   {8, 11, 4},  {11, 12, 4}, {12, 13, 5}, {13, 14, 5}, {14, 20, 6},
                         {20, 21, 6}, {21, 23, 6}, {23, 28, 6}, {28, 29, 5}, {29, 31, 5}, {31, 36, 5},
                         {36, 37, 5}, {37, 38, 7}, {38, 39, 7}, {39, 40, 8}, {40, 41, 9}, {41, 42, 8},
                         {42, 43, 8}};

char code_type = 0, unicode_type = 0;  // stand-ins: only their addresses matter

template <typename T>
void put(std::vector<char>& block, size_t offset, T value) {
  std::memcpy(block.data() + offset, &value, sizeof(value));
}

struct FakePython {
  std::vector<char> filename = std::vector<char>(64), qualname = std::vector<char>(64);
  std::vector<char> table = std::vector<char>(256), code = std::vector<char>(184 + 2 * 43);
  std::vector<char> inner = std::vector<char>(80), outer = std::vector<char>(80);
  std::vector<char> cframe = std::vector<char>(16), thread = std::vector<char>(64);

  static void ascii(std::vector<char>& s, const char* text) {
    put<const void*>(s, 8, &unicode_type);
    put<unsigned>(s, 32, 0xE0 | (1 << 2));  // compact, ascii, ready; kind 1
    std::strcpy(s.data() + 48, text);
  }

  FakePython() {
    ascii(filename, "model.py");
    ascii(qualname, "Net.f");
    size_t n = std::strlen(kLineTableHex) / 2;
    for (size_t i = 0; i < n; ++i) table[32 + i] = static_cast<char>(std::stoi(std::string(kLineTableHex + 2 * i, 2), nullptr, 16));
    put<long>(table, 16, static_cast<long>(n));
    put<const void*>(code, 8, &code_type);
    put<int>(code, 72, 1);
    put<const void*>(code, 112, filename.data());
    put<const void*>(code, 128, qualname.data());
    put<const void*>(code, 136, table.data());
    put<int>(code, 168, 0);
    for (auto* f : {&inner, &outer}) put<const void*>(*f, 32, code.data());
    put<const void*>(inner, 48, outer.data());
    put<const void*>(outer, 48, nullptr);
    put<const void*>(cframe, 8, inner.data());
    put<const void*>(thread, 56, cframe.data());
    at(inner, 0);
    at(outer, 0);
  }
  template <typename T>
  static void put(std::vector<char>& block, size_t offset, T value) { ledger::put(block, offset, value); }
  void at(std::vector<char>& frame, int unit) { put<const void*>(frame, 56, code.data() + 184 + 2 * unit); }
  int read(Python311Frame* out, int max) {
    return read_python311_frames(thread.data(), &code_type, &unicode_type, out, max);
  }
};

TEST(Python311Frames, EveryCodeUnitHasTheLinePythonGivesIt) {
  FakePython py;
  for (const auto& range : kLines) {
    for (int unit = range[0]; unit < range[1]; ++unit) {
      py.at(py.inner, unit);
      Python311Frame frames[2];
      ASSERT_EQ(2, py.read(frames, 2));
      EXPECT_EQ(range[2], frames[0].line) << "code unit " << unit;
      EXPECT_STREQ("model.py", frames[0].file);
      EXPECT_STREQ("Net.f", frames[0].function);
    }
  }
}

TEST(Python311Frames, InnermostFirstAndAtMostAsAsked) {
  FakePython py;
  py.at(py.inner, 40);
  py.at(py.outer, 12);
  Python311Frame frames[4];
  ASSERT_EQ(2, py.read(frames, 4));
  EXPECT_EQ(9, frames[0].line);
  EXPECT_EQ(5, frames[1].line);
  ASSERT_EQ(1, py.read(frames, 1));
  EXPECT_EQ(0, py.read(frames, 0));
  EXPECT_EQ(0, read_python311_frames(nullptr, &code_type, &unicode_type, frames, 4));
}

TEST(Python311Frames, AFrameStillSettingUpIsSkipped) {
  FakePython py;
  py.put<int>(py.code, 168, 5);  // _co_firsttraceable: units before it set the frame up
  py.at(py.inner, 2);
  py.at(py.outer, 12);
  Python311Frame frames[4];
  ASSERT_EQ(1, py.read(frames, 4));
  EXPECT_EQ(5, frames[0].line);
}

TEST(Python311Frames, WhatIsNotACodeObjectOrAnAsciiStringEndsTheWalk) {
  FakePython py;
  Python311Frame frames[4];
  char other_type = 0;
  py.put<const void*>(py.qualname, 8, &other_type);
  EXPECT_EQ(0, py.read(frames, 4));
  FakePython::ascii(py.qualname, "Net.f");
  py.put<unsigned>(py.filename, 32, 0xA0);  // compact, ready, not ASCII
  EXPECT_EQ(0, py.read(frames, 4));
  FakePython::ascii(py.filename, "model.py");
  ASSERT_EQ(2, py.read(frames, 4));
  py.put<const void*>(py.code, 8, &other_type);
  EXPECT_EQ(0, py.read(frames, 4));
  // No frame at all: a thread outside Python code.
  py.put<const void*>(py.cframe, 8, nullptr);
  EXPECT_EQ(0, py.read(frames, 4));
}

}  // namespace
}  // namespace ledger
}  // namespace gpuslack

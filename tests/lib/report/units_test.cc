// lib/report/units.h against the one spec both languages read
// (units_cases.txt; tests/python/test_labels.py reads it too).
#include "report/units.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace gpuslack {
namespace report {
namespace {

TEST(Units, EveryCaseOfTheSpecReadsAsWritten) {
  std::ifstream in(GPUSLACK_UNITS_CASES);
  ASSERT_TRUE(in) << "cannot read " << GPUSLACK_UNITS_CASES;
  int cases = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string unit, value, want;
    ASSERT_TRUE(std::getline(fields, unit, '\t') && std::getline(fields, value, '\t') && std::getline(fields, want))
        << line;
    std::string got;
    ASSERT_TRUE(format_figure(unit.c_str(), std::strtod(value.c_str(), nullptr), &got)) << line;
    EXPECT_EQ(want, got) << unit << " " << value;
    ++cases;
  }
  EXPECT_GE(cases, 30);
}

TEST(Units, AnUnknownUnitIsRefused) {
  std::string got = "unchanged";
  EXPECT_FALSE(format_figure("furlongs", 1, &got));
  EXPECT_FALSE(format_figure(nullptr, 1, &got));
  EXPECT_EQ("unchanged", got);
}

}  // namespace
}  // namespace report
}  // namespace gpuslack

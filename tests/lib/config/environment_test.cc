// See Note [Secure execution]: the environment as gpuslack reads it. The secure
// side needs a setuid process: hostile_input_test.py runs one.
#include "config/environment.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace gpuslack {
namespace {

TEST(Environment, APlainProcessReadsItsVariables) {
  ASSERT_FALSE(secure_execution());  // the test runs as whoever started it
  setenv("GPUSLACK_ENVIRONMENT_TEST", "x=1", 1);
  ASSERT_NE(nullptr, environment_variable("GPUSLACK_ENVIRONMENT_TEST"));
  EXPECT_STREQ("x=1", environment_variable("GPUSLACK_ENVIRONMENT_TEST"));
  bool found = false;
  for (const char* const* e = environment_block(); e && *e; ++e)
    found = found || std::strcmp(*e, "GPUSLACK_ENVIRONMENT_TEST=x=1") == 0;
  EXPECT_TRUE(found);
  unsetenv("GPUSLACK_ENVIRONMENT_TEST");
  EXPECT_EQ(nullptr, environment_variable("GPUSLACK_ENVIRONMENT_TEST"));
}

}  // namespace
}  // namespace gpuslack

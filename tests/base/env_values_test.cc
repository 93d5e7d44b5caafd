// Values of hora's environment variables that parse to nonsense must be
// refused, naming the variable, or bounded: sizes that are not numbers or
// beyond any memory, integers out of range, and timeouts too small or too
// large for a deadline.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <functional>
#include <string>

#include "base/deadline.h"
#include "base/env.h"
#include "base/error.h"

namespace hora {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

std::string errorOf(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(EnvValues, SizesThatAreNotNumbersOrTooLargeAreRefused) {
  EXPECT_EQ(env::parseBytes("4M", "X"), 4u << 20);
  EXPECT_EQ(env::parseBytes("0.5K", "X"), 512u);
  for (const char* bad : {"nan", "inf", "-inf", "1e30", "1e19", "4294967296G"})
    EXPECT_THAT(errorOf([&] { (void)env::parseBytes(bad, "HORA_CHUNK_SIZE"); }), HasSubstr("HORA_CHUNK_SIZE"))
        << bad;
}

TEST(EnvValues, IntegersOutOfRangeAreRefused) {
  ::setenv("HORA_TEST_INTEGER", "99999999999999999999", 1);
  EXPECT_THAT(errorOf([] { (void)env::getInt({"HORA_TEST_INTEGER"}, 0); }),
              HasSubstr("HORA_TEST_INTEGER='99999999999999999999' is out of range"));
  ::setenv("HORA_TEST_INTEGER", "-12", 1);
  EXPECT_EQ(env::getInt({"HORA_TEST_INTEGER"}, 0), -12);
  ::unsetenv("HORA_TEST_INTEGER");
}

TEST(EnvValues, SecondsAreAtLeastAMillisecondAndAtMostTenYears) {
  ::setenv("HORA_TEST_SECONDS", "0.0001", 1);
  EXPECT_EQ(env::getSeconds({"HORA_TEST_SECONDS"}, 5s), 1ms);
  ::setenv("HORA_TEST_SECONDS", "1e300", 1);
  const auto huge = env::getSeconds({"HORA_TEST_SECONDS"}, 5s);
  EXPECT_EQ(huge, std::chrono::milliseconds(static_cast<long long>(env::kLongestSeconds * 1000)));
  // A deadline that far is in the future, not wrapped into the past.
  EXPECT_FALSE(Deadline::after(huge).expired());
  ::setenv("HORA_TEST_SECONDS", "2.5", 1);
  EXPECT_EQ(env::getSeconds({"HORA_TEST_SECONDS"}, 5s), 2500ms);
  ::unsetenv("HORA_TEST_SECONDS");
}

TEST(EnvValues, DeadlinesNeverWrapIntoThePast) {
  EXPECT_FALSE(Deadline::after(std::chrono::milliseconds::max()).expired());
  EXPECT_EQ(Deadline::after(std::chrono::milliseconds::max()).at(), Deadline::never().at());
  EXPECT_FALSE(Deadline::after(1h).extendedBy(std::chrono::milliseconds::max()).expired());
  EXPECT_TRUE(Deadline::after(-1ms).expired());
}

}  // namespace
}  // namespace hora

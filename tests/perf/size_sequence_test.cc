#include "size_sequence.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "hora/communicator.h"

namespace hora::perf {
namespace {

using ::testing::ElementsAre;

TEST(SizeSequence, GeometricIncludesBothEnds) {
  EXPECT_THAT(sizeSequence({8, 1 << 20, 4, 0}),
              ElementsAre(8, 32, 128, 512, 2048, 8192, 32768, 131072, 524288));
  EXPECT_THAT(sizeSequence({8, 128, 2, 0}), ElementsAre(8, 16, 32, 64, 128));
}

TEST(SizeSequence, GeometricStopsBeforePassingTheMaximum) {
  EXPECT_THAT(sizeSequence({3, 100, 3, 0}), ElementsAre(3, 9, 27, 81));
}

TEST(SizeSequence, AdditiveStepsWhenFactorIsOne) {
  EXPECT_THAT(sizeSequence({0, 10, 1, 4}), ElementsAre(0, 4, 8));
  EXPECT_THAT(sizeSequence({1024, 4096, 1, 1024}), ElementsAre(1024, 2048, 3072, 4096));
}

TEST(SizeSequence, SingleSize) {
  EXPECT_THAT(sizeSequence({32 << 20, 32 << 20, 1, 1 << 20}), ElementsAre(32 << 20));
  EXPECT_THAT(sizeSequence({5, 5, 2, 0}), ElementsAre(5));
}

TEST(SizeSequence, NoOverflowAtTheTopOfTheRange) {
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  EXPECT_THAT(sizeSequence({kMax / 2 + 1, kMax, 2, 0}), ElementsAre(kMax / 2 + 1));
  EXPECT_THAT(sizeSequence({kMax - 1, kMax, 1, 5}), ElementsAre(kMax - 1));
}

TEST(SizeSequence, RefusesRangesThatCannotRun) {
  EXPECT_THROW(sizeSequence({16, 8, 2, 0}), Error);
  EXPECT_THROW(sizeSequence({0, 8, 2, 0}), Error);
  EXPECT_THROW(sizeSequence({0, 8, 1, 0}), Error);
  EXPECT_THROW(sizeSequence({0, kMaxSizeCount, 1, 1}), Error);
  EXPECT_EQ(sizeSequence({1, kMaxSizeCount, 1, 1}).size(), kMaxSizeCount);
}

}  // namespace
}  // namespace hora::perf

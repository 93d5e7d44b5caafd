// LLRing: where line i of an LL stream lives and the flag it carries,
// computed with a mask and a shift for rings of a power of two lines and
// with a division otherwise, must be exactly ll.h's definition (index
// i mod L, flag i / L + 1) for every line, across many wraps and near the
// top of the 64-bit line count.
#include <gtest/gtest.h>

#include <cstdint>

#include "protocols/ll.h"

namespace hora::protocols::testing {
namespace {

void expectDefinition(std::uint64_t lines, std::uint64_t first, std::uint64_t count) {
  const LLRing ring(lines);
  EXPECT_EQ(ring.lines(), lines);
  for (std::uint64_t line = first; line != first + count; ++line) {
    ASSERT_EQ(ring.index(line), line % lines) << lines << " lines, line " << line;
    ASSERT_EQ(ring.flag(line), llFlag(line, lines)) << lines << " lines, line " << line;
  }
}

TEST(LLRing, PowersOfTwoAndOthersFollowTheDefinition) {
  for (std::uint64_t lines : {1ull, 2ull, 8ull, 40ull, 1000ull, 8192ull, 8193ull, 1ull << 20})
    expectDefinition(lines, 0, 5 * lines + 17);
}

TEST(LLRing, FarIntoTheStream) {
  for (std::uint64_t lines : {8ull, 40ull, 8192ull}) expectDefinition(lines, ~std::uint64_t{0} - 3 * lines, 3 * lines);
}

}  // namespace
}  // namespace hora::protocols::testing

// The message sizes one run measures, nccl-tests style: from minBytes up to
// and including maxBytes, multiplying by stepFactor when it is above 1, and
// otherwise adding stepBytes.
#pragma once

#include <cstddef>
#include <vector>

namespace hora::perf {

struct SizeRange {
  std::size_t minBytes = 0;
  std::size_t maxBytes = 0;
  int stepFactor = 1;         // > 1: geometric steps
  std::size_t stepBytes = 0;  // used when stepFactor <= 1; must then be > 0
};

// A range that would never end or would list more than this many sizes is
// refused rather than run.
inline constexpr std::size_t kMaxSizeCount = 100000;

// Throws hora::Error (InvalidArgument) for a range that would never end,
// steps backwards, or lists more than kMaxSizeCount sizes.
std::vector<std::size_t> sizeSequence(const SizeRange& range);

}  // namespace hora::perf

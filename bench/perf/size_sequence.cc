#include "size_sequence.h"

#include <limits>
#include <string>

#include "hora/communicator.h"

namespace hora::perf {
namespace {

[[noreturn]] void refuse(const std::string& why) { throw Error(ErrorKind::InvalidArgument, why); }

}  // namespace

std::vector<std::size_t> sizeSequence(const SizeRange& range) {
  if (range.minBytes > range.maxBytes) {
    refuse("minimum size " + std::to_string(range.minBytes) + " is larger than maximum size " +
           std::to_string(range.maxBytes));
  }
  const bool geometric = range.stepFactor > 1;
  if (geometric && range.minBytes == 0) {
    refuse("a step factor cannot grow from a minimum size of 0; give -b of at least 1");
  }
  if (!geometric && range.stepBytes == 0) refuse("the step size (-i) must be at least 1 byte");

  std::vector<std::size_t> sizes;
  constexpr std::size_t kLargest = std::numeric_limits<std::size_t>::max();
  for (std::size_t size = range.minBytes;;) {
    if (sizes.size() == kMaxSizeCount) {
      refuse("the size range lists more than " + std::to_string(kMaxSizeCount) +
             " sizes; use a larger step (-i) or a step factor (-f)");
    }
    sizes.push_back(size);
    // Stop before the next step would pass the maximum (or overflow).
    if (geometric) {
      const auto factor = static_cast<std::size_t>(range.stepFactor);
      if (size > range.maxBytes / factor) break;
      size *= factor;
    } else {
      if (size > kLargest - range.stepBytes || size + range.stepBytes > range.maxBytes) break;
      size += range.stepBytes;
    }
  }
  return sizes;
}

}  // namespace hora::perf

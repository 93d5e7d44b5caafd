// Message sizes on the command line (-b, -e, -i), spelt as nccl-tests
// reads them: a number, then an optional unit K, M or G (powers of 1024).
#pragma once

#include <cstddef>
#include <string_view>

namespace hora::perf {

// "8", "1K", "1.5K" (1536), "32M", "1MB", "64KiB", "2G", "1e3": nccl-tests
// reads a decimal number and looks only at the unit's first letter, so
// fractions and a trailing "B" are common in scripts. The value is rounded
// down to whole bytes, as there. Anything else after the unit (which
// nccl-tests would ignore), a negative or non-finite number, or one beyond
// size_t is refused: throws UsageError naming `flag` and the text.
std::size_t parseByteSize(std::string_view text, std::string_view flag);

}  // namespace hora::perf

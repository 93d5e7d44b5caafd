// Builds lists of collective cases: every (collective, type, reduction,
// count) combination asked for, each with a placement (in place or not,
// aligned or not, which root) taken in turn from a cycle, so that all
// placements are covered without multiplying the run time by their number.
#pragma once

#include <cstdint>
#include <vector>

#include "collective_case.h"

namespace hora_coll_test {

struct CaseMatrix {
  std::vector<Collective> collectives;
  std::vector<ncclDataType_t> types;     // empty: all twelve
  std::vector<Reduction> reductions;     // empty: all; used by reducing collectives
  std::vector<std::size_t> counts;
  bool varyPlacement = true;             // false: out of place, aligned, root 0
  std::uint64_t seed = 1;
};

// Floating avg is exact only for power-of-two rank counts (hora scales each
// input by 1/nranks in the element type); it is left out for other counts.
std::vector<CollectiveCase> buildCases(const CaseMatrix& matrix, int nranks);

bool isPowerOfTwo(int value);

}  // namespace hora_coll_test

// A RankProgram made of lambdas, for scenario tests: the factory builds,
// per rank, a list of steps that share whatever state they capture.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "rank_program.h"

namespace hora_coll_test {

struct SimpleStep {
  std::string name;
  std::function<ncclResult_t(RankContext&)> launch;
  std::function<void(RankContext&)> verify;  // may be empty
};

using StepsFactory = std::function<std::vector<SimpleStep>(int rank, int nranks)>;

ProgramFactory programOf(StepsFactory steps);

}  // namespace hora_coll_test

// Parameters shared by the matrix tests: which collective, how many ranks,
// run how, over which transport; and the environment that shrinks the
// pipeline.
#pragma once

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "collective_case.h"
#include "run_ranks.h"

namespace hora_coll_test {

struct MatrixParams {
  Collective collective;
  int nranks;
  RankMode mode;
  // HORA_TRANSPORT for the run ("tcp", "shm"); empty: hora's own choice
  // (shared memory between ranks of one host).
  std::string transport;
};

inline void PrintTo(const MatrixParams& params, std::ostream* os) {
  *os << collectiveName(params.collective) << " on " << params.nranks << " ranks as "
      << rankModeName(params.mode)
      << (params.transport.empty() ? "" : " over " + params.transport);
}

inline std::string matrixParamName(const ::testing::TestParamInfo<MatrixParams>& info) {
  std::string mode = info.param.mode == RankMode::Threads     ? "threads"
                     : info.param.mode == RankMode::OneThread ? "onethread"
                                                              : "processes";
  std::string name = std::string(collectiveName(info.param.collective)) + "_" +
                     std::to_string(info.param.nranks) + "ranks_" + mode;
  if (!info.param.transport.empty()) name += "_" + info.param.transport;
  return name;
}

// Small chunks and slices, so that a few thousand elements cross many chunk
// and slice boundaries (the defaults are 1 MiB and 128 KiB).
inline std::vector<std::pair<std::string, std::string>> smallPipeline() {
  return {{"HORA_CHUNK_SIZE", "4K"}, {"HORA_SLICE_SIZE", "1K"}};
}

// The run options for `params`, with the small pipeline.
inline RunOptions matrixRunOptions(const MatrixParams& params) {
  RunOptions options;
  options.mode = params.mode;
  options.nranks = params.nranks;
  options.environment = smallPipeline();
  if (!params.transport.empty()) options.environment.push_back({"HORA_TRANSPORT", params.transport});
  return options;
}

// Every combination of the given collectives, rank counts and modes.
inline std::vector<MatrixParams> matrixParams(const std::vector<Collective>& collectives,
                                              const std::vector<int>& rankCounts,
                                              const std::vector<RankMode>& modes,
                                              const std::string& transport = "") {
  std::vector<MatrixParams> all;
  for (RankMode mode : modes)
    for (Collective collective : collectives)
      for (int nranks : rankCounts) all.push_back({collective, nranks, mode, transport});
  return all;
}

}  // namespace hora_coll_test

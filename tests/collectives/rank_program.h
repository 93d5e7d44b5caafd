// What a test runs on each rank, written once and run three ways (see
// run_ranks.h): a thread per rank, one thread driving every rank inside
// ncclGroupStart/End, or a process per rank.
//
// So that one thread can drive every rank, a program is split into steps,
// and each step into phases: prepare() (buffers), launch() (the nccl calls
// only -- inside a group when one thread drives all ranks, so nothing may
// wait for completion there) and verify() (after the results are in).
#pragma once

#include <memory>
#include <functional>
#include <string>

#include "nccl.h"

namespace hora_coll_test {

struct RankContext {
  int rank = 0;
  int nranks = 1;
  ncclComm_t comm = nullptr;
  // Set by a program that wants the harness to check that every rank ended
  // with the same text (e.g. a digest of an output that must be bitwise
  // identical everywhere); empty means nothing to compare.
  std::string agreement;
};

class RankProgram {
 public:
  virtual ~RankProgram() = default;
  virtual int steps() const = 0;
  // A name for step `step`, used in failure messages.
  virtual std::string describeStep(int step) const = 0;
  virtual void prepare(int /*step*/, RankContext& /*context*/) {}
  // Issues the step's calls; returns the first result that is not
  // ncclSuccess (the harness then reports it and stops this rank).
  virtual ncclResult_t launch(int step, RankContext& context) = 0;
  // Checks the step's results with gtest EXPECTs / ADD_FAILURE.
  virtual void verify(int /*step*/, RankContext& /*context*/) {}
  // After the last step (or after a stop): summaries, cleanup.
  virtual void finish(RankContext& /*context*/) {}
};

using ProgramFactory = std::function<std::unique_ptr<RankProgram>(int rank, int nranks)>;

}  // namespace hora_coll_test

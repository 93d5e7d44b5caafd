// The collectives the multi-host checker runs, each compared element by
// element with a reference computed from the same input formula.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include <nccl.h>

namespace hora::multihost {

// A result that differs from its reference, or a call that failed. The
// message names the collective, its arguments and the first wrong element.
class CheckFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Runs the collectives of one communicator. Every rank of the communicator
// must call the same methods in the same order with the same counts, as with
// any NCCL program.
class CollectiveCases {
 public:
  CollectiveCases(ncclComm_t comm, int rank, int nranks);

  // Runs every collective with `count` elements per rank (per peer for
  // all-to-all, per block for scatter and gather) and throws CheckFailure at
  // the first difference.
  void runAll(std::size_t count);

  // How many results were compared and found right so far.
  int passed() const { return passed_; }

 private:
  template <typename T> void allReduce(std::size_t count, ncclRedOp_t op, bool inPlace);
  template <typename T> void reduceScatter(std::size_t count, ncclRedOp_t op);
  template <typename T> void allGather(std::size_t count, bool inPlace);
  template <typename T> void broadcast(std::size_t count, int root);
  template <typename T> void reduce(std::size_t count, ncclRedOp_t op, int root);
  template <typename T> void sendRecvRing(std::size_t count);
  template <typename T> void allToAll(std::size_t count);
  template <typename T> void gather(std::size_t count, int root);
  template <typename T> void scatter(std::size_t count, int root);

  // Throws CheckFailure naming `call` when `result` is not ncclSuccess.
  void require(ncclResult_t result, const std::string& call) const;

  ncclComm_t comm_;
  int rank_;
  int nranks_;
  int salt_ = 0;  // changes for every case, so a stale buffer never matches
  int passed_ = 0;
};

}  // namespace hora::multihost

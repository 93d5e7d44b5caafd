// Ranks as threads of this process, through the nccl.h API: the
// communicators come from ncclCommInitAll, and onEachRank runs a function on
// one thread per rank (a blocking call needs its peers to run concurrently).
#pragma once

#include <functional>
#include <vector>

#include "nccl.h"

namespace hora_api_test {

class LocalComms {
 public:
  explicit LocalComms(int nranks);
  ~LocalComms();  // destroys the communicators not released yet
  LocalComms(const LocalComms&) = delete;
  LocalComms& operator=(const LocalComms&) = delete;

  int size() const { return static_cast<int>(comms_.size()); }
  ncclComm_t operator[](int rank) const { return comms_.at(rank); }
  // Forget a communicator the test destroyed or aborted itself.
  void release(int rank) { comms_.at(rank) = nullptr; }
  // Runs body(rank) on one thread per rank and joins them.
  void onEachRank(const std::function<void(int)>& body) const;

 private:
  std::vector<ncclComm_t> comms_;
};

}  // namespace hora_api_test

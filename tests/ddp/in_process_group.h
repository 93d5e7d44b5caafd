// An in-memory ProcessGroup for unit tests of the Reducer: ranks are threads
// of one process, and a collective runs once every rank issued it (the k-th
// call of each rank forms the k-th collective). It records what each rank
// issued, in order, and can make collectives fail from a chosen index on, to
// test error paths without sockets.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hora/ddp/process_group.h"
#include "support/rank_threads.h"

namespace hora::ddp::testing {

struct IssuedCollective {
  std::string kind;  // "allreduce", "broadcast", "allgather"
  std::size_t count;
  DataType type;
  const void* buffer;
};

class InProcessWorld : public std::enable_shared_from_this<InProcessWorld> {
 public:
  static std::shared_ptr<InProcessWorld> create(int size);

  std::shared_ptr<ProcessGroup> group(int rank);
  int size() const { return size_; }

  // Collectives with index >= `index` (counting from 0 per rank) fail with
  // hora::Error(Remote), as when a peer vanished.
  void failFrom(std::size_t index);
  std::vector<IssuedCollective> issued(int rank) const;

  // Internal to the fake (called by its groups).
  WorkPtr issue(int rank, IssuedCollective collective, void* output, RedOp op, int root);

  explicit InProcessWorld(int size);

 private:
  struct Pending;
  void run(Pending& pending);

  int size_;
  mutable std::mutex mutex_;
  std::vector<std::vector<IssuedCollective>> issued_;
  std::vector<std::shared_ptr<Pending>> collectives_;
  std::size_t failFrom_ = static_cast<std::size_t>(-1);
};

// Runs body(rank) on `size` threads and rethrows the first exception.
using test_support::onEachRank;

}  // namespace hora::ddp::testing

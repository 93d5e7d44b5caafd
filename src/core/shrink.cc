// ncclCommShrink and ncclCommRevoke: going on without ranks that failed.
//
// A shrink cannot use this communicator's ring or connections: they include
// the ranks left out, which may be dead. The remaining ranks meet through
// the bootstrap listeners instead (bootstrap/control.h), which every rank
// keeps open for the communicator's life: the first remaining rank starts a
// rendezvous root in its own process, and each other remaining rank asks it
// for the id; it answers once all have asked, and only if all of them left
// out the same ranks. Then they join the new communicator like any other
// init.
#include <algorithm>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "bootstrap/unique_id.h"
#include "core/communicator.h"

namespace hora::core {

namespace {
// The excluded set, for remaining ranks to compare: a hash of the sorted
// list (FNV-1a), its length, how many ranks remain, and the list's start.
bootstrap::ShrinkRequest describeExclusion(const std::vector<int>& sortedExcluded, int survivors) {
  std::uint64_t hash = 1469598103934665603ull;
  for (int rank : sortedExcluded) {
    hash ^= static_cast<std::uint32_t>(rank);
    hash *= 1099511628211ull;
  }
  bootstrap::ShrinkRequest request;
  for (std::size_t k = 0; k < sortedExcluded.size() && k < bootstrap::ShrinkRequest::kShownRanks; ++k)
    request.firstExcluded[k] = sortedExcluded[k];
  request.excludedHash = hash;
  request.excludedCount = static_cast<std::int32_t>(sortedExcluded.size());
  request.survivors = survivors;
  return request;
}
}  // namespace

void Communicator::revoke() {
  {
    std::lock_guard<std::mutex> lock(stateMutex_);
    HORA_CHECK_ARG(revocation_ == Revocation::None, "rank ", rank_, ": the communicator was revoked already");
    revocation_ = Revocation::Stopping;
  }
  stopEverything();
  // Only now is it quiet: every operation has stopped.
  std::lock_guard<std::mutex> lock(stateMutex_);
  revocation_ = Revocation::Done;
}

Communicator::Revocation Communicator::revocation() const {
  std::lock_guard<std::mutex> lock(stateMutex_);
  return revocation_;
}

std::vector<int> Communicator::checkExclusion(const std::vector<int>& excluded) const {
  std::vector<int> sorted = excluded;
  std::sort(sorted.begin(), sorted.end());
  for (int rank : sorted)
    HORA_CHECK_ARG(rank >= 0 && rank < nranks_, "rank ", rank_, ": excluded rank ", rank, " is outside [0, ",
                   nranks_, ")");
  HORA_CHECK_ARG(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(),
                 "rank ", rank_, ": excludeRanksList names a rank twice");
  HORA_CHECK_ARG(!std::binary_search(sorted.begin(), sorted.end(), rank_), "rank ", rank_,
                 " is in excludeRanksList; excluded ranks do not take part in the shrink");
  return sorted;
}

ChildPlan Communicator::planShrink(const std::vector<int>& excluded, bool abortFirst) {
  const std::vector<int> sorted = checkExclusion(excluded);

  // Default: operations already issued finish first (on a communicator
  // that failed, they fail at once). NCCL_SHRINK_ABORT stops them.
  if (abortFirst) {
    if (revocation() == Revocation::None) revoke();
  } else if (!abort_.load() && !broken_.load(std::memory_order_acquire)) {
    finalize();
  }
  // Waits for a call still running on another thread (it ends: the
  // communicator is broken or revoked, or it completes).
  const ExecutionClaim running = awaitExecution();

  std::vector<int> members;
  for (int r = 0; r < nranks_; ++r)
    if (!std::binary_search(sorted.begin(), sorted.end(), r)) members.push_back(r);
  const int newRank = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
  const auto request = describeExclusion(sorted, static_cast<int>(members.size()));
  const Deadline deadline = Deadline::after(timeout_);
  bootstrap::UniqueId id;
  try {
    if (members.front() == rank_) {
      SocketAddress here = bootstrap_->localAddress();
      here.setPort(0);
      id = bootstrap::createUniqueIdAt(here);
      if (members.size() > 1) bootstrap_->serveShrinkMembers(members, request, id, deadline, &abandoned_);
      bootstrap_->tellLeftOut(sorted);
    } else {
      id = bootstrap_->askShrinkLeader(members, request, deadline, &abandoned_);
    }
  } catch (const Error&) {
    // A wait the program's abort ended says so, not what the wait saw.
    if (abandoned_.load())
      fail(ErrorKind::InvalidUsage, "rank ", rank_, ": communicator aborted (ncclCommAbort) during the shrink");
    throw;
  }
  HORA_LOG(Info, "rank ", rank_, ": shrinking to ", members.size(), " of ", nranks_, " ranks, as rank ", newRank);
  return ChildPlan{id, static_cast<int>(members.size()), newRank, timeout_, device_};
}

std::shared_ptr<Communicator> Communicator::shrink(const std::vector<int>& excluded, bool abortFirst) {
  return makeChild(planShrink(excluded, abortFirst));
}

}  // namespace hora::core

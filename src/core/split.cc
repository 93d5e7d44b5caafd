// ncclCommSplit: a new communicator for each colour, made from this one.
//
// First a one-element all-reduce stamped as a split (meetForCall), so that a
// rank that called a collective instead is caught at once. Then two
// all-gathers over this communicator's bootstrap ring: first every
// rank's colour and key, from which every rank computes the same groups;
// then, from the first rank of each group (by key, then rank), the unique
// id of a rendezvous root it has just started. Each rank then joins its
// group's communicator like any other init.
#include <algorithm>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "bootstrap/unique_id.h"
#include "core/communicator.h"

namespace hora::core {

namespace {
struct SplitRecord {
  std::int32_t color;
  std::int32_t key;
};
}  // namespace

std::optional<ChildPlan> Communicator::planSplit(int color, int key) {
  checkUsable();
  finalize();  // after everything submitted before
  meetForCall(OpPurpose::CommSplit);
  auto lock = claimExecution("a communicator split came");
  const Deadline deadline = Deadline::after(timeout_);
  // A failure to exchange breaks this communicator, as a collective's would;
  // a bad colour or a failed init of the new one leaves it as it was (every
  // rank sees the same colours and fails alike).
  auto exchange = [&](void* data, std::size_t bytesPerRank) {
    try {
      bootstrap_->allGather(data, bytesPerRank, deadline);
    } catch (const Error& error) {
      failBroken(error);
    }
  };
  std::vector<SplitRecord> records(nranks_);
  records[rank_] = {color, key};
  exchange(records.data(), sizeof(SplitRecord));
  for (int r = 0; r < nranks_; ++r)
    HORA_CHECK_ARG(records[r].color >= 0 || records[r].color == -1, "rank ", rank_, ": rank ", r, " gave colour ",
                   records[r].color, "; a colour must be >= 0 or NCCL_SPLIT_NOCOLOR (-1)");

  std::vector<int> group;
  if (color >= 0)
    for (int r = 0; r < nranks_; ++r)
      if (records[r].color == color) group.push_back(r);
  std::stable_sort(group.begin(), group.end(), [&](int a, int b) { return records[a].key < records[b].key; });

  using IdBytes = char[bootstrap::kUniqueIdBytes];
  std::vector<char> ids(static_cast<std::size_t>(nranks_) * bootstrap::kUniqueIdBytes, 0);
  auto idOf = [&](int r) -> IdBytes& { return *reinterpret_cast<IdBytes*>(&ids[r * bootstrap::kUniqueIdBytes]); };
  if (!group.empty() && group.front() == rank_) {
    SocketAddress here = bootstrap_->localAddress();
    here.setPort(0);
    bootstrap::encode(bootstrap::createUniqueIdAt(here), idOf(rank_));
  }
  exchange(ids.data(), bootstrap::kUniqueIdBytes);
  if (group.empty()) return std::nullopt;

  const int newRank = static_cast<int>(std::find(group.begin(), group.end(), rank_) - group.begin());
  return ChildPlan{bootstrap::decode(idOf(group.front())), static_cast<int>(group.size()), newRank, timeout_, device_};
}

std::shared_ptr<Communicator> Communicator::split(int color, int key) {
  const std::optional<ChildPlan> plan = planSplit(color, key);
  return plan ? makeChild(*plan) : nullptr;
}

std::shared_ptr<Communicator> Communicator::makeChild(const ChildPlan& plan,
                                                      std::shared_ptr<std::atomic<bool>> abortFlag) {
  CommunicatorConfig config;
  config.timeout = plan.timeout;
  config.device = plan.device;
  config.abortFlag = std::move(abortFlag);
  return std::make_shared<Communicator>(plan.id, plan.nranks, plan.rank, config);
}

}  // namespace hora::core

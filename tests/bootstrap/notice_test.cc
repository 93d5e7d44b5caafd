// Notices between ranks' bootstrap listeners: a rank told why the
// communicator stopped passes the notice on to its ring neighbours only,
// not back to the rank that told it nor to the rank blamed. (A rank the
// teller told may close before the teller's visit reaches that rank's
// neighbours, which would then see it close first and blame it.)
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/unique_id.h"

namespace hora::bootstrap {
namespace {

using namespace std::chrono_literals;

TEST(Notices, AToldRankPassesTheNoticeOnToItsRingNeighboursOnly) {
  constexpr int kRanks = 4;
  constexpr int kTeller = 0, kBlamed = 1, kTold = 2;
  const UniqueId id = createLocalUniqueId();
  std::atomic<bool> abort{false};
  std::barrier ready(kRanks), passedOn(kRanks), checked(kRanks);
  std::vector<std::optional<PeerNotice>> heard(kRanks);
  std::vector<std::string> failures(kRanks);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < kRanks; ++rank)
    ranks.emplace_back([&, rank] {
      std::unique_ptr<Bootstrap> bootstrap;
      try {
        const Deadline deadline = Deadline::after(10s);
        bootstrap = std::make_unique<Bootstrap>(id, rank, kRanks, false, deadline, &abort);
        bootstrap->connectRing(deadline);
      } catch (const Error& error) {
        failures[rank] = error.what();
      }
      ready.arrive_and_wait();
      if (bootstrap && rank == kTold)
        bootstrap->passOn(PeerNotice(ErrorKind::Remote,
                                     "rank 2: the communicator was stopped by rank 0, which found: rank 1 failed first",
                                     kBlamed, kTeller));
      passedOn.arrive_and_wait();
      // The visits are in the listeners' queues by now (passOn sent them):
      // the neighbour finds one at once; the others must not within a while.
      if (bootstrap && rank != kTold) heard[rank] = bootstrap->noticeWithin(rank == 3 ? 2000ms : 300ms);
      checked.arrive_and_wait();  // no listener closes before every rank looked
    });
  for (auto& thread : ranks) thread.join();
  for (int rank = 0; rank < kRanks; ++rank) ASSERT_EQ(failures[rank], "") << "rank " << rank;

  ASSERT_TRUE(heard[3].has_value()) << "rank 3, the told rank's next, was not told";
  EXPECT_EQ(heard[3]->kind(), ErrorKind::Remote);
  EXPECT_EQ(heard[3]->failedRank(), kBlamed) << heard[3]->what();
  EXPECT_EQ(heard[3]->teller(), kTold);
  const std::string text = heard[3]->what();
  EXPECT_NE(text.find("rank 3: the communicator was stopped by rank 2"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 1 failed first"), std::string::npos) << text;
  EXPECT_FALSE(heard[kTeller].has_value()) << "the teller was told back: " << heard[kTeller]->what();
  EXPECT_FALSE(heard[kBlamed].has_value()) << "the rank blamed was told: " << heard[kBlamed]->what();
}

}  // namespace
}  // namespace hora::bootstrap

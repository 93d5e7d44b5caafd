// How the progress engine words a connection's failure: a peer's failure
// names the peer as the rank that failed; a failure of this rank's own end
// (a device refusing a posted write, say, which knows a queue pair but not
// the peer) names the peer in its text; anything that already names the
// peer, or has a type of its own, is passed on unchanged.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <string>

#include "core/progress.h"
#include "transport/op_stamp.h"

namespace hora::core {
namespace {

// A receiving connection whose progress() throws what the test gives it.
class FailingConnection final : public transport::RecvConnection {
 public:
  explicit FailingConnection(std::function<void()> fail) : fail_(std::move(fail)) { setPeerRank(3); }
  void post(void*, std::size_t) override {}
  std::uint64_t postedBytes() const override { return 0; }
  std::uint64_t completedBytes() const override { return 0; }
  bool progress() override {
    fail_();
    return false;
  }
  pollfd pollEntry() const override { return {-1, POLLIN, 0}; }
  const std::string& peerName() const override { return peer_; }
  void beginMessage(protocols::Protocol, const transport::OpStamp*) override {}
  bool stampChecked() override { return true; }

 private:
  std::function<void()> fail_;
  std::string peer_ = "rank 3 (host h, pid 42)";
};

// What progressAll() throws when the connection throws `error`.
Error caught(const Error& thrown) {
  std::atomic<bool> abort{false};
  ProgressEngine engine({std::chrono::milliseconds(1000), std::chrono::microseconds(0), &abort, 0});
  FailingConnection connection([&] { throw thrown; });
  engine.add(&connection);
  try {
    engine.progressAll();
  } catch (const Error& error) {
    return error;
  }
  ADD_FAILURE() << "nothing was thrown";
  return Error(ErrorKind::Internal, "");
}

TEST(ProgressEngineBlame, AFailureOfThisRanksEndNamesThePeerInItsText) {
  const Error error = caught(Error(ErrorKind::System, "verbs: ibv_post_send failed for mlx5_0:1 qp 7: ENOMEM"));
  EXPECT_EQ(error.kind(), ErrorKind::System);
  EXPECT_EQ(error.failedRank(), -1) << "this rank failed, not the peer";
  EXPECT_EQ(std::string(error.what()),
            "on the connection with rank 3 (host h, pid 42): verbs: ibv_post_send failed for mlx5_0:1 qp 7: ENOMEM");
  const Error internal = caught(Error(ErrorKind::Internal, "fake RDMA: send queue overflow"));
  EXPECT_NE(std::string(internal.what()).find("rank 3 (host h, pid 42)"), std::string::npos) << internal.what();
}

TEST(ProgressEngineBlame, AnErrorThatNamesThePeerAlreadyIsUnchanged) {
  const std::string text = "RDMA to rank 3 (host h, pid 42): a write failed";
  const Error error = caught(Error(ErrorKind::System, text));
  EXPECT_EQ(std::string(error.what()), text);
}

TEST(ProgressEngineBlame, APeersFailureNamesThePeerAsTheRankThatFailed) {
  const Error error = caught(Error(ErrorKind::Remote, "rank 3 (host h, pid 42) closed the connection"));
  EXPECT_EQ(error.kind(), ErrorKind::Remote);
  EXPECT_EQ(error.failedRank(), 3);
}

TEST(ProgressEngineBlame, AMismatchKeepsItsTypeAndText) {
  std::atomic<bool> abort{false};
  ProgressEngine engine({std::chrono::milliseconds(1000), std::chrono::microseconds(0), &abort, 0});
  FailingConnection connection([] { throw transport::StampMismatch("rank 3", std::nullopt, std::nullopt); });
  engine.add(&connection);
  EXPECT_THROW(engine.progressAll(), transport::StampMismatch);
}

}  // namespace
}  // namespace hora::core

// ncclSend / ncclRecv: ring shifts by every distance (so every ordered pair,
// and every rank to itself), each pair alone without a group, an
// all-to-all with uneven blocks built from grouped sends and receives, and
// several messages per pair matched in issue order; every element type,
// empty to multi-chunk sizes, aligned and not.
#include <gtest/gtest.h>

#include "matrix_params.h"
#include "message_plan.h"

namespace hora_coll_test {
namespace {

struct P2pParams {
  int nranks;
  RankMode mode;
  std::string transport;
};

class PointToPoint : public ::testing::TestWithParam<P2pParams> {
 protected:
  RunOptions options() const {
    RunOptions o;
    o.mode = GetParam().mode;
    o.nranks = GetParam().nranks;
    o.environment = smallPipeline();
    if (!GetParam().transport.empty()) o.environment.push_back({"HORA_TRANSPORT", GetParam().transport});
    return o;
  }
};

TEST_P(PointToPoint, RingShiftByEveryDistance) {
  expectRanksSucceed(options(), messagesProgram(ringShiftSteps(GetParam().nranks, {0, 1, 1009, 5003}, 100)));
}

TEST_P(PointToPoint, EveryPairAloneWithoutGroup) {
  expectRanksSucceed(options(), messagesProgram(allPairsSteps(GetParam().nranks, 777, 200)));
}

TEST_P(PointToPoint, UnevenAllToAllFromGroupedSendRecv) {
  expectRanksSucceed(options(), messagesProgram({unevenAllToAllStep(GetParam().nranks, 300),
                                                 unevenAllToAllStep(GetParam().nranks, 301)}));
}

TEST_P(PointToPoint, MessagesBetweenOnePairMatchInIssueOrder) {
  expectRanksSucceed(options(), messagesProgram({orderedMessagesStep(GetParam().nranks, 400)}));
}

void PrintTo(const P2pParams& params, std::ostream* os) {
  *os << params.nranks << " ranks as " << rankModeName(params.mode)
      << (params.transport.empty() ? "" : " over " + params.transport);
}

std::string p2pName(const ::testing::TestParamInfo<P2pParams>& info) {
  std::string mode = info.param.mode == RankMode::Threads     ? "threads"
                     : info.param.mode == RankMode::OneThread ? "onethread"
                                                              : "processes";
  return std::to_string(info.param.nranks) + "ranks_" + mode +
         (info.param.transport.empty() ? "" : "_" + info.param.transport);
}

INSTANTIATE_TEST_SUITE_P(Threads, PointToPoint,
                         ::testing::Values(P2pParams{1, RankMode::Threads, ""},
                                           P2pParams{2, RankMode::Threads, ""},
                                           P2pParams{3, RankMode::Threads, ""},
                                           P2pParams{4, RankMode::Threads, ""},
                                           P2pParams{5, RankMode::Threads, ""},
                                           P2pParams{4, RankMode::Threads, "tcp"}),
                         p2pName);
INSTANTIATE_TEST_SUITE_P(OneThread, PointToPoint,
                         ::testing::Values(P2pParams{4, RankMode::OneThread, ""}), p2pName);

}  // namespace
}  // namespace hora_coll_test

// A rank whose part of an operation is done may leave -- destroy its
// communicator, or exit its process -- while peers are still receiving what
// it sent. Its data must still arrive, and peers must not mistake a
// departure after finishing for a failure. These scenarios make that timing
// certain with a delay on the slow rank.
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "case_matrix.h"
#include "element_types.h"
#include "guarded_arena.h"
#include "matrix_params.h"
#include "reference.h"
#include "simple_program.h"

namespace hora_coll_test {
namespace {

constexpr auto kSlowRankDelay = std::chrono::milliseconds(300);
constexpr std::size_t kCount = 1000;
constexpr std::size_t kLarge = 4 << 20;  // 16 MiB of floats: more than any transport buffers

struct EarlyParams {
  RankMode mode;
  std::string transport;
};

class EarlyFinish : public ::testing::TestWithParam<EarlyParams> {
 protected:
  RunOptions options(int nranks) const {
    RunOptions o;
    o.mode = GetParam().mode;
    o.nranks = nranks;
    o.deadline = std::chrono::seconds(60);
    if (!GetParam().transport.empty()) o.environment.push_back({"HORA_TRANSPORT", GetParam().transport});
    return o;
  }
};

// Rank `from`'s message buffer, and a check of a received one.
std::shared_ptr<GuardedArena> messageFrom(int from) {
  const ElementType& type = elementType(ncclFloat32);
  auto arena = std::make_shared<GuardedArena>(type, kCount, false);
  for (std::size_t i = 0; i < kCount; ++i) arena->setInitial(i, movedInputBits(type, 9, from, i));
  return arena;
}

void expectMessageFrom(GuardedArena& received, int from) {
  const ElementType& type = elementType(ncclFloat32);
  for (std::size_t i = 0; i < kCount; ++i) received.expect(i, movedInputBits(type, 9, from, i));
  if (auto problem = received.firstMismatch("receive buffer"))
    ADD_FAILURE() << "message from rank " << from << ": " << *problem;
}

// Rank 0 sends to rank 2 (not its ring neighbour: the connection is made
// for this message) and leaves at once; rank 2 asks for the message only
// later.
TEST_P(EarlyFinish, SenderLeavesBeforeTheReceiverAsks) {
  expectRanksSucceed(options(3), programOf([](int rank, int) {
    auto buffer = rank == 0 ? messageFrom(0)
                            : std::make_shared<GuardedArena>(elementType(ncclFloat32), kCount, false);
    SimpleStep step;
    step.name = "rank 0 sends to rank 2 and leaves; rank 2 receives late";
    step.launch = [buffer](RankContext& c) {
      if (c.rank == 0) return ncclSend(buffer->data(), kCount, ncclFloat32, 2, c.comm, nullptr);
      if (c.rank == 2) {
        std::this_thread::sleep_for(kSlowRankDelay);
        return ncclRecv(buffer->data(), kCount, ncclFloat32, 0, c.comm, nullptr);
      }
      return ncclSuccess;
    };
    step.verify = [buffer](RankContext& c) {
      if (c.rank == 2) expectMessageFrom(*buffer, 0);
    };
    return std::vector<SimpleStep>{step};
  }));
}

// Rank 0 sends to rank 1 and receives from rank 2 in one group. Rank 1
// receives and leaves; rank 2 sends late. Rank 0's finished send to the
// departed rank 1 must not fail its wait for rank 2.
TEST_P(EarlyFinish, FinishedPeerLeavingDoesNotFailAWaitOnAnother) {
  expectRanksSucceed(options(3), programOf([](int rank, int) {
    auto out = messageFrom(rank);
    auto in = std::make_shared<GuardedArena>(elementType(ncclFloat32), kCount, false);
    SimpleStep step;
    step.name = "0 -> 1 and 2 -> 0 (late); rank 1 leaves first";
    step.launch = [out, in](RankContext& c) {
      if (c.rank == 0) {
        ncclGroupStart();
        ncclSend(out->data(), kCount, ncclFloat32, 1, c.comm, nullptr);
        ncclRecv(in->data(), kCount, ncclFloat32, 2, c.comm, nullptr);
        return ncclGroupEnd();
      }
      if (c.rank == 1) return ncclRecv(in->data(), kCount, ncclFloat32, 0, c.comm, nullptr);
      std::this_thread::sleep_for(kSlowRankDelay);
      return ncclSend(out->data(), kCount, ncclFloat32, 0, c.comm, nullptr);
    };
    step.verify = [in](RankContext& c) {
      if (c.rank == 0) expectMessageFrom(*in, 2);
      if (c.rank == 1) expectMessageFrom(*in, 0);
    };
    return std::vector<SimpleStep>{step};
  }));
}

// The root of a gather waits for the contributions one by one; the other
// ranks' sends complete and they leave while the root still waits.
TEST_P(EarlyFinish, GatherRootCollectsFromRanksThatLeft) {
  CollectiveCase c;
  c.collective = Collective::Gather;
  c.type = ncclFloat32;
  c.count = kCount;
  c.root = 3;
  expectRanksSucceed(options(4), collectiveCasesProgram({c}));
}

// The root of a broadcast hands a message larger than any transport buffer
// down the chain and leaves as soon as its part is sent, while rank 1 still
// forwards to the late rank 2.
TEST_P(EarlyFinish, BroadcastRootLeavesWhileTheChainForwards) {
  expectRanksSucceed(options(3), programOf([](int rank, int) {
    const ElementType& type = elementType(ncclFloat32);
    auto buffer = std::make_shared<GuardedArena>(type, kLarge, false);
    if (rank == 0)
      for (std::size_t i = 0; i < kLarge; ++i) buffer->setInitial(i, movedInputBits(type, 7, 0, i));
    SimpleStep step;
    step.name = "broadcast from rank 0 to a late rank 2";
    step.launch = [buffer](RankContext& c) {
      if (c.rank == 2) std::this_thread::sleep_for(kSlowRankDelay);
      return ncclBroadcast(buffer->data(), buffer->data(), kLarge, ncclFloat32, 0, c.comm, nullptr);
    };
    step.verify = [buffer](RankContext&) {
      const ElementType& type = elementType(ncclFloat32);
      for (std::size_t i = 0; i < kLarge; ++i) buffer->expect(i, movedInputBits(type, 7, 0, i));
      if (auto problem = buffer->firstMismatch("broadcast buffer")) ADD_FAILURE() << *problem;
    };
    return std::vector<SimpleStep>{step};
  }));
}

// Collectives followed at once by ncclCommDestroy, as programs end: repeated
// because which rank finishes last varies from run to run.
TEST_P(EarlyFinish, CollectiveThenImmediateDestroy) {
  CaseMatrix matrix;
  matrix.collectives = {Collective::AllReduce, Collective::AllGather};
  matrix.types = {ncclFloat32};
  matrix.reductions = {Reduction::Sum};
  matrix.counts = {16384};
  matrix.varyPlacement = false;
  for (int round = 0; round < 5 && !::testing::Test::HasFailure(); ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    matrix.seed = 50 + round;
    expectRanksSucceed(options(4), collectiveCasesProgram(buildCases(matrix, 4)));
  }
}

void PrintTo(const EarlyParams& params, std::ostream* os) {
  *os << rankModeName(params.mode) << (params.transport.empty() ? "" : " over " + params.transport);
}

std::string earlyName(const ::testing::TestParamInfo<EarlyParams>& info) {
  return std::string(info.param.mode == RankMode::Threads ? "threads" : "processes") +
         (info.param.transport.empty() ? "" : "_" + info.param.transport);
}

INSTANTIATE_TEST_SUITE_P(Ranks, EarlyFinish,
                         ::testing::Values(EarlyParams{RankMode::Threads, ""},
                                           EarlyParams{RankMode::Processes, ""},
                                           EarlyParams{RankMode::Threads, "tcp"},
                                           EarlyParams{RankMode::Processes, "tcp"}),
                         earlyName);

}  // namespace
}  // namespace hora_coll_test

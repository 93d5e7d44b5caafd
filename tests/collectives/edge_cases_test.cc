// Calls at the edges of what NCCL allows: NULL buffers where a count of 0
// or a rank's role means they are never touched, a premulsum op reused by
// several calls, outputs fed back as inputs, and ncclBcast.
#include <numeric>

#include <gtest/gtest.h>

#include "collective_case.h"
#include "matrix_params.h"
#include "simple_program.h"

namespace hora_coll_test {
namespace {

class EdgeCases : public ::testing::TestWithParam<RankMode> {
 protected:
  RunOptions options(int nranks = 3) const {
    RunOptions o;
    o.mode = GetParam();
    o.nranks = nranks;
    return o;
  }
};

TEST_P(EdgeCases, NullBuffersWithCountZero) {
  expectRanksSucceed(options(), programOf([](int, int) {
    std::vector<SimpleStep> steps;
    for (Collective collective : allCollectives()) {
      SimpleStep step;
      step.name = std::string(collectiveName(collective)) + " of 0 elements, NULL buffers";
      step.launch = [collective](RankContext& c) {
        CollectiveCase zero;
        zero.collective = collective;
        zero.count = 0;
        zero.root = c.nranks - 1;
        return issueCollective(zero, nullptr, nullptr, ncclSum, c.comm);
      };
      steps.push_back(step);
    }
    SimpleStep p2p;
    p2p.name = "send and receive of 0 elements, NULL buffers";
    p2p.launch = [](RankContext& c) {
      ncclGroupStart();
      ncclSend(nullptr, 0, ncclInt8, (c.rank + 1) % c.nranks, c.comm, nullptr);
      ncclRecv(nullptr, 0, ncclInt8, (c.rank + c.nranks - 1) % c.nranks, c.comm, nullptr);
      return ncclGroupEnd();
    };
    steps.push_back(p2p);
    return steps;
  }));
}

// Reduce and gather write only the root's receive buffer: the others may
// pass NULL.
TEST_P(EdgeCases, NonRootsMayPassNullReceiveBuffers) {
  static constexpr std::size_t kCount = 999;
  static constexpr int kRoot = 1;
  expectRanksSucceed(options(), programOf([](int rank, int nranks) {
    auto send = std::make_shared<std::vector<std::int32_t>>(kCount, rank + 1);
    auto recv = std::make_shared<std::vector<std::int32_t>>(kCount * nranks, -1);
    void* recvOrNull = rank == kRoot ? recv->data() : nullptr;
    SimpleStep reduce;
    reduce.name = "reduce to rank 1, NULL recvbuff elsewhere";
    reduce.launch = [=](RankContext& c) {
      return ncclReduce(send->data(), recvOrNull, kCount, ncclInt32, ncclSum, kRoot, c.comm, nullptr);
    };
    reduce.verify = [=](RankContext& c) {
      if (c.rank != kRoot) return;
      const std::int32_t total = c.nranks * (c.nranks + 1) / 2;
      for (std::size_t i = 0; i < kCount; ++i)
        ASSERT_EQ((*recv)[i], total) << "element " << i;
    };
    SimpleStep gather;
    gather.name = "gather to rank 1, NULL recvbuff elsewhere";
    gather.launch = [=](RankContext& c) {
      return ncclGather(send->data(), recvOrNull, kCount, ncclInt32, kRoot, c.comm, nullptr);
    };
    gather.verify = [=](RankContext& c) {
      if (c.rank != kRoot) return;
      for (std::size_t i = 0; i < kCount * c.nranks; ++i)
        ASSERT_EQ((*recv)[i], static_cast<std::int32_t>(i / kCount) + 1) << "element " << i;
    };
    return std::vector<SimpleStep>{reduce, gather};
  }));
}

// One premulsum op, created once, serves several calls of different kinds.
TEST_P(EdgeCases, PreMulSumOpServesSeveralCalls) {
  static constexpr std::size_t kCount = 1031;
  expectRanksSucceed(options(), programOf([](int rank, int nranks) {
    struct State {
      ncclRedOp_t op{};
      double scalar = 0.25;
      std::vector<double> send, allReduced, scattered;
    };
    auto s = std::make_shared<State>();
    s->send.resize(kCount * nranks);
    for (std::size_t i = 0; i < s->send.size(); ++i) s->send[i] = static_cast<double>((i + rank) % 17);
    s->allReduced.assign(kCount * nranks, -1);
    s->scattered.assign(kCount, -1);
    SimpleStep create;
    create.name = "create a premulsum op (x0.25)";
    create.launch = [s](RankContext& c) {
      return ncclRedOpCreatePreMulSum(&s->op, &s->scalar, ncclFloat64, ncclScalarHostImmediate, c.comm);
    };
    SimpleStep use;
    use.name = "all_reduce then reduce_scatter with the op";
    use.launch = [s](RankContext& c) {
      ncclGroupStart();
      ncclAllReduce(s->send.data(), s->allReduced.data(), kCount * c.nranks, ncclFloat64, s->op, c.comm, nullptr);
      ncclReduceScatter(s->send.data(), s->scattered.data(), kCount, ncclFloat64, s->op, c.comm, nullptr);
      return ncclGroupEnd();
    };
    use.verify = [s](RankContext& c) {
      auto expected = [&](std::size_t i) {
        double sum = 0;
        for (int q = 0; q < c.nranks; ++q) sum += 0.25 * static_cast<double>((i + q) % 17);
        return sum;
      };
      for (std::size_t i = 0; i < kCount * c.nranks; ++i)
        ASSERT_EQ(s->allReduced[i], expected(i)) << "all_reduce element " << i;
      for (std::size_t i = 0; i < kCount; ++i)
        ASSERT_EQ(s->scattered[i], expected(c.rank * kCount + i)) << "reduce_scatter element " << i;
    };
    SimpleStep destroy;
    destroy.name = "destroy the op";
    destroy.launch = [s](RankContext& c) { return ncclRedOpDestroy(s->op, c.comm); };
    return std::vector<SimpleStep>{create, use, destroy};
  }));
}

// In-place all-reduces back to back, each reading the previous result.
TEST_P(EdgeCases, OutputsFedBackAsInputs) {
  static constexpr std::size_t kCount = 4097;
  expectRanksSucceed(options(4), programOf([](int rank, int) {
    auto data = std::make_shared<std::vector<std::int64_t>>(kCount);
    for (std::size_t i = 0; i < kCount; ++i) (*data)[i] = static_cast<std::int64_t>(i) + rank;
    std::vector<SimpleStep> steps;
    for (int round = 1; round <= 3; ++round) {
      SimpleStep step;
      step.name = "in-place sum, round " + std::to_string(round);
      step.launch = [data](RankContext& c) {
        return ncclAllReduce(data->data(), data->data(), kCount, ncclInt64, ncclSum, c.comm, nullptr);
      };
      step.verify = [data, round](RankContext& c) {
        const std::int64_t n = c.nranks;
        for (std::size_t i = 0; i < kCount; ++i) {
          // Round 1: n*i + n(n-1)/2; each later round multiplies by n.
          std::int64_t expected = n * static_cast<std::int64_t>(i) + n * (n - 1) / 2;
          for (int k = 1; k < round; ++k) expected *= n;
          ASSERT_EQ((*data)[i], expected) << "element " << i;
        }
      };
      steps.push_back(step);
    }
    return steps;
  }));
}

TEST_P(EdgeCases, BcastIsAnInPlaceBroadcast) {
  static constexpr std::size_t kCount = 3001;
  expectRanksSucceed(options(), programOf([](int rank, int) {
    auto data = std::make_shared<std::vector<std::uint16_t>>(kCount, 0xdead);
    if (rank == 2)
      for (std::size_t i = 0; i < kCount; ++i) (*data)[i] = static_cast<std::uint16_t>(i * 7);
    SimpleStep step;
    step.name = "ncclBcast from rank 2";
    step.launch = [data](RankContext& c) {
      return ncclBcast(data->data(), kCount, ncclFloat16, 2, c.comm, nullptr);
    };
    step.verify = [data](RankContext&) {
      for (std::size_t i = 0; i < kCount; ++i)
        ASSERT_EQ((*data)[i], static_cast<std::uint16_t>(i * 7)) << "element " << i;
    };
    return std::vector<SimpleStep>{step};
  }));
}

INSTANTIATE_TEST_SUITE_P(Modes, EdgeCases, ::testing::Values(RankMode::Threads, RankMode::OneThread),
                         [](const ::testing::TestParamInfo<RankMode>& info) {
                           return std::string(info.param == RankMode::Threads ? "threads" : "onethread");
                         });

}  // namespace
}  // namespace hora_coll_test

#include "data_check.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "data_types.h"
#include "host_collectives.h"

namespace hora::perf {
namespace {

using testing::runOnHost;

// The buffers of all ranks of one simulated job.
class Job {
 public:
  Job(int nranks, std::size_t bytes) {
    for (int r = 0; r < nranks; ++r) {
      send_.push_back(std::make_unique<unsigned char[]>(bytes));
      recv_.push_back(std::make_unique<unsigned char[]>(bytes));
      buffers_.push_back({send_.back().get(), recv_.back().get()});
    }
  }
  const std::vector<RankBuffers>& buffers() const { return buffers_; }

 private:
  std::vector<std::unique_ptr<unsigned char[]>> send_;
  std::vector<std::unique_ptr<unsigned char[]>> recv_;
  std::vector<RankBuffers> buffers_;
};

StepPlan makePlan(Collective collective, ncclDataType_t type, std::optional<ncclRedOp_t> op, int nranks,
                  std::size_t bytes, int root = 0) {
  const CollectiveInfo& info = collectiveInfo(collective);
  return {collective,
          type,
          info.reduces ? op : std::nullopt,
          info.rooted ? root : -1,
          nranks,
          sizeCollective(collective, bytes, dataTypeInfo(type).size, nranks)};
}

void prepareAll(const StepPlan& plan, const ValueModel& values, bool inPlace, const Job& job, int rep) {
  for (int r = 0; r < plan.nranks; ++r) {
    prepareInputs(plan, values, r, inPlace, job.buffers()[static_cast<std::size_t>(r)], rep);
  }
}

long long wrongOverRanks(const StepPlan& plan, const ValueModel& values, bool inPlace, const Job& job,
                         int rep) {
  long long wrong = 0;
  for (int r = 0; r < plan.nranks; ++r) {
    wrong += countWrongElements(plan, values, r, inPlace, job.buffers()[static_cast<std::size_t>(r)], rep);
  }
  return wrong;
}

TEST(DataCheck, CorrectResultsHaveNoWrongElements) {
  constexpr std::size_t kBytes = 4096;
  for (const CollectiveInfo& info : allCollectives()) {
    for (const DataTypeInfo& type : allDataTypes()) {
      for (ncclRedOp_t op : {ncclSum, ncclProd, ncclMin, ncclAvg}) {
        for (int n : {1, 3, 4}) {
          const StepPlan plan = makePlan(info.collective, type.type, op, n, kBytes, n - 1);
          const ValueModel values(plan.type, plan.op, n);
          Job job(n, kBytes);
          for (bool inPlace : {false, true}) {
            if (!resultChecked(plan, inPlace)) continue;
            for (int rep = 0; rep < 2; ++rep) {
              prepareAll(plan, values, inPlace, job, rep);
              runOnHost(plan, inPlace, job.buffers());
              ASSERT_EQ(wrongOverRanks(plan, values, inPlace, job, rep), 0)
                  << info.name << " " << type.name << " op " << op << " n " << n << " inPlace " << inPlace;
            }
          }
        }
      }
    }
  }
}

TEST(DataCheck, NothingWrittenIsAllWrong) {
  // A collective that does nothing leaves the poison in every result element.
  const StepPlan plan = makePlan(Collective::AllGather, ncclFloat32, std::nullopt, 3, 1200);
  const ValueModel values(plan.type, plan.op, 3);
  Job job(3, 1200);
  prepareAll(plan, values, false, job, 0);
  EXPECT_EQ(wrongOverRanks(plan, values, false, job, 0), static_cast<long long>(3 * plan.sizing.recvCount));
}

TEST(DataCheck, OneCorruptElementIsOneWrong) {
  for (const CollectiveInfo& info : allCollectives()) {
    const StepPlan plan = makePlan(info.collective, ncclInt32, ncclSum, 4, 1024, 2);
    const ValueModel values(plan.type, plan.op, 4);
    Job job(4, 1024);
    prepareAll(plan, values, false, job, 0);
    runOnHost(plan, false, job.buffers());
    // Corrupt the last result element of the root (the rank every
    // collective defines a result for).
    const RankBuffers& root = job.buffers()[2];
    const std::size_t last = plan.sizing.recvCount - 1;
    storeElement(plan.type, root.recv, last, loadElement(plan.type, root.recv, last) + 1);
    EXPECT_EQ(wrongOverRanks(plan, values, false, job, 0), 1) << info.name;
  }
}

TEST(DataCheck, ResultsOfAnotherRepetitionAreWrong) {
  // Stale data from an earlier check iteration must not pass.
  const StepPlan plan = makePlan(Collective::AllReduce, ncclFloat32, ncclSum, 2, 4096);
  const ValueModel values(plan.type, plan.op, 2);
  Job job(2, 4096);
  prepareAll(plan, values, false, job, 0);
  runOnHost(plan, false, job.buffers());
  EXPECT_GT(wrongOverRanks(plan, values, false, job, 1), static_cast<long long>(plan.sizing.recvCount));
}

TEST(DataCheck, InPlacePointersFollowNcclTests) {
  unsigned char send[64];
  unsigned char recv[64];
  const RankBuffers buffers{send, recv};
  const StepPlan gather =
      makePlan(Collective::AllGather, ncclFloat32, std::nullopt, 4, 64);  // 4 floats per rank
  EXPECT_EQ(callPointers(gather, 2, true, buffers).send, recv + 2 * 4 * 4);
  EXPECT_EQ(callPointers(gather, 2, true, buffers).recv, recv);
  const StepPlan scatter = makePlan(Collective::ReduceScatter, ncclFloat32, ncclSum, 4, 64);
  EXPECT_EQ(callPointers(scatter, 3, true, buffers).send, recv);
  EXPECT_EQ(callPointers(scatter, 3, true, buffers).recv, recv + 3 * 4 * 4);
  const StepPlan allReduce = makePlan(Collective::AllReduce, ncclFloat32, ncclSum, 4, 64);
  EXPECT_EQ(callPointers(allReduce, 1, true, buffers).send, recv);
  EXPECT_EQ(callPointers(allReduce, 1, false, buffers).send, send);
  EXPECT_EQ(callPointers(allReduce, 1, false, buffers).recv, recv);
}

// -u: every pointer moves by that many elements of the step's type, in
// place offsets added to it.
TEST(DataCheck, UnalignMovesEveryPointerByWholeElements) {
  unsigned char send[128];
  unsigned char recv[128];
  const RankBuffers buffers{send, recv};
  StepPlan gather = makePlan(Collective::AllGather, ncclFloat64, std::nullopt, 2, 64);  // 4 doubles per rank
  gather.unalignElements = 3;
  EXPECT_EQ(callPointers(gather, 1, false, buffers).send, send + 3 * 8);
  EXPECT_EQ(callPointers(gather, 1, false, buffers).recv, recv + 3 * 8);
  EXPECT_EQ(callPointers(gather, 1, true, buffers).send, recv + 3 * 8 + 4 * 8);
  StepPlan allReduce = makePlan(Collective::AllReduce, ncclInt8, ncclSum, 2, 16);
  allReduce.unalignElements = 5;
  EXPECT_EQ(callPointers(allReduce, 0, true, buffers).send, recv + 5);
}

TEST(DataCheck, InPlaceAlltoallAndSendrecvAreNotChecked) {
  const StepPlan alltoall = makePlan(Collective::AlltoAll, ncclFloat32, std::nullopt, 2, 64);
  EXPECT_FALSE(resultChecked(alltoall, true));
  EXPECT_TRUE(resultChecked(alltoall, false));
  const StepPlan sendrecv = makePlan(Collective::SendRecv, ncclFloat32, std::nullopt, 2, 64);
  EXPECT_FALSE(resultChecked(sendrecv, true));
  const ValueModel values(ncclFloat32, std::nullopt, 2);
  Job job(2, 64);
  EXPECT_EQ(countWrongElements(alltoall, values, 0, true, job.buffers()[0], 0), 0);
}

// Off the root, a gather's receive buffer must be as the call found it
// (as nccl-tests checks): in place, this rank's input in its piece and
// the poison elsewhere.
TEST(DataCheck, GatherChecksTheRootsResultAndThatOthersKeepTheirBuffer) {
  const StepPlan gather = makePlan(Collective::Gather, ncclInt32, std::nullopt, 3, 96, 2);
  const ValueModel values(gather.type, gather.op, 3);
  Job job(3, 96);
  prepareAll(gather, values, true, job, 0);
  runOnHost(gather, true, job.buffers());
  EXPECT_EQ(wrongOverRanks(gather, values, true, job, 0), 0);
  // Rank 0 (not the root) holds its input in elements 0-7, poison after.
  storeElement(gather.type, unalignedBuffers(gather, job.buffers()[0]).recv, 20, 7.0);
  EXPECT_EQ(countWrongElements(gather, values, 0, true, job.buffers()[0], 0), 1);
  poisonBuffer(job.buffers()[0].recv, 96);  // its input is gone too
  EXPECT_EQ(countWrongElements(gather, values, 0, true, job.buffers()[0], 0), 8);
  poisonBuffer(job.buffers()[2].recv, 96);  // the root's whole result
  EXPECT_EQ(countWrongElements(gather, values, 2, true, job.buffers()[2], 0), 24);

  const StepPlan scatter = makePlan(Collective::Scatter, ncclInt32, std::nullopt, 3, 96, 1);
  prepareAll(scatter, values, false, job, 0);
  runOnHost(scatter, false, job.buffers());
  EXPECT_EQ(wrongOverRanks(scatter, values, false, job, 0), 0);
  poisonBuffer(job.buffers()[0].recv, 32);  // rank 0's piece of 8 elements
  EXPECT_EQ(countWrongElements(scatter, values, 0, false, job.buffers()[0], 0), 8);
}

TEST(DataCheck, ReduceChecksTheRootsResultAndThatOthersKeepTheirBuffer) {
  const StepPlan plan = makePlan(Collective::Reduce, ncclFloat32, ncclMax, 3, 120, 1);
  const ValueModel values(plan.type, plan.op, 3);
  Job job(3, 120);
  prepareAll(plan, values, false, job, 0);
  runOnHost(plan, false, job.buffers());
  EXPECT_EQ(countWrongElements(plan, values, 0, false, job.buffers()[0], 0), 0);  // still poisoned
  EXPECT_EQ(countWrongElements(plan, values, 1, false, job.buffers()[1], 0), 0);
  poisonBuffer(job.buffers()[1].recv, 120);
  EXPECT_EQ(countWrongElements(plan, values, 1, false, job.buffers()[1], 0), 30);
  // A non-root whose receive buffer the call wrote.
  storeElement(plan.type, unalignedBuffers(plan, job.buffers()[0]).recv, 3, values.reduced(3, 0));
  EXPECT_EQ(countWrongElements(plan, values, 0, false, job.buffers()[0], 0), 1);
  // In place, a non-root's buffer is its input, and must stay so.
  prepareAll(plan, values, true, job, 0);
  runOnHost(plan, true, job.buffers());
  EXPECT_EQ(wrongOverRanks(plan, values, true, job, 0), 0);
  storeElement(plan.type, unalignedBuffers(plan, job.buffers()[2]).recv, 0, values.reduced(0, 0) + 1);
  EXPECT_EQ(countWrongElements(plan, values, 2, true, job.buffers()[2], 0), 1);
}

}  // namespace
}  // namespace hora::perf

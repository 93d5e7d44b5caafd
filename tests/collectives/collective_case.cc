#include "collective_case.h"

#include <memory>
#include <optional>
#include <stdexcept>

#include <gtest/gtest.h>

#include "guarded_arena.h"

namespace hora_coll_test {

const std::vector<Collective>& allCollectives() {
  static const std::vector<Collective> all = {
      Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather, Collective::Broadcast,
      Collective::Reduce,    Collective::AlltoAll,      Collective::Gather,    Collective::Scatter};
  return all;
}

const char* collectiveName(Collective collective) {
  switch (collective) {
    case Collective::AllReduce: return "all_reduce";
    case Collective::ReduceScatter: return "reduce_scatter";
    case Collective::AllGather: return "all_gather";
    case Collective::Broadcast: return "broadcast";
    case Collective::Reduce: return "reduce";
    case Collective::AlltoAll: return "alltoall";
    case Collective::Gather: return "gather";
    case Collective::Scatter: return "scatter";
  }
  return "?";
}

bool isReducing(Collective c) {
  return c == Collective::AllReduce || c == Collective::ReduceScatter || c == Collective::Reduce;
}

bool hasRoot(Collective c) {
  return c == Collective::Broadcast || c == Collective::Reduce || c == Collective::Gather ||
         c == Collective::Scatter;
}

bool supportsInPlace(Collective c) { return c != Collective::AlltoAll; }

std::string CollectiveCase::describe() const {
  std::string text = collectiveName(collective);
  text += std::string(" ") + elementType(type).name;
  if (isReducing(collective)) text += std::string(" ") + reductionName(reduction);
  text += " count " + std::to_string(count);
  if (hasRoot(collective)) text += " root " + std::to_string(root);
  text += inPlace ? " in-place" : " out-of-place";
  if (unaligned) text += " unaligned";
  if (inWindows) text += " in windows";
  text += " seed " + std::to_string(seed);
  return text;
}

ncclResult_t issueCollective(const CollectiveCase& c, const void* send, void* recv, ncclRedOp_t op,
                             ncclComm_t comm) {
  switch (c.collective) {
    case Collective::AllReduce: return ncclAllReduce(send, recv, c.count, c.type, op, comm, nullptr);
    case Collective::ReduceScatter:
      return ncclReduceScatter(send, recv, c.count, c.type, op, comm, nullptr);
    case Collective::AllGather: return ncclAllGather(send, recv, c.count, c.type, comm, nullptr);
    case Collective::Broadcast:
      return ncclBroadcast(send, recv, c.count, c.type, c.root, comm, nullptr);
    case Collective::Reduce: return ncclReduce(send, recv, c.count, c.type, op, c.root, comm, nullptr);
    case Collective::AlltoAll: return ncclAlltoAll(send, recv, c.count, c.type, comm, nullptr);
    case Collective::Gather: return ncclGather(send, recv, c.count, c.type, c.root, comm, nullptr);
    case Collective::Scatter: return ncclScatter(send, recv, c.count, c.type, c.root, comm, nullptr);
  }
  return ncclInvalidArgument;
}

namespace {

// Where one rank's send and receive buffers lie for a case.
struct Layout {
  // Arena sizes in elements (in place, the larger one holds both).
  std::size_t sendArena = 0, recvArena = 0;
  bool sendNull = false;         // pass sendbuff = NULL
  std::size_t sendOffset = 0;    // element offsets inside their arena
  std::size_t recvOffset = 0;
  std::size_t inputs = 0;        // elements of input at sendbuff
  std::size_t outputs = 0;       // elements the call must write at recvbuff
};

Layout layoutFor(const CollectiveCase& c, int rank, int n) {
  const std::size_t count = c.count, all = count * static_cast<std::size_t>(n);
  const bool root = rank == c.root;
  Layout l;
  switch (c.collective) {
    case Collective::AllReduce:
      l = {count, count, false, 0, 0, count, count};
      break;
    case Collective::ReduceScatter:
      l = {all, count, false, 0, 0, all, count};
      if (c.inPlace) l.recvOffset = rank * count;
      break;
    case Collective::AllGather:
      l = {count, all, false, 0, 0, count, all};
      if (c.inPlace) {
        l.sendArena = all;
        l.sendOffset = rank * count;
      }
      break;
    case Collective::Broadcast:
      l = {count, count, !root, 0, 0, root ? count : 0, count};
      if (c.inPlace) l.sendNull = false;
      break;
    case Collective::Reduce:
      l = {count, count, false, 0, 0, count, root ? count : 0};
      break;
    case Collective::AlltoAll:
      l = {all, all, false, 0, 0, all, all};
      break;
    case Collective::Gather:
      l = {count, root ? all : count, false, 0, 0, count, root ? all : 0};
      if (c.inPlace && root) {
        l.sendArena = all;
        l.sendOffset = rank * count;
      }
      break;
    case Collective::Scatter:
      l = {root ? all : count, count, !root, 0, 0, root ? all : 0, count};
      if (c.inPlace && root) l.recvOffset = rank * count;
      break;
  }
  return l;
}

// In place, one arena holds both buffers; a rank that is not the root of
// gather or scatter has nothing in place.
bool singleArena(const CollectiveCase& c, int rank) {
  const bool rootOnlyInPlace = c.collective == Collective::Gather || c.collective == Collective::Scatter;
  return c.inPlace && (!rootOnlyInPlace || rank == c.root);
}

// One case on one rank: its buffers, its reduction op, its checks.
class CaseOnRank {
 public:
  CaseOnRank(const CollectiveCase& c, int rank, int nranks)
      : case_(c), type_(elementType(c.type)), rank_(rank), nranks_(nranks),
        layout_(layoutFor(c, rank, nranks)), single_(singleArena(c, rank)) {
    if (single_) {
      send_ = std::make_unique<GuardedArena>(type_, std::max(layout_.sendArena, layout_.recvArena),
                                             c.unaligned, c.inWindows);
    } else {
      send_ = std::make_unique<GuardedArena>(type_, layout_.sendArena, c.unaligned, c.inWindows);
      recv_ = std::make_unique<GuardedArena>(type_, layout_.recvArena, c.unaligned, c.inWindows);
    }
    for (std::size_t i = 0; i < layout_.inputs; ++i)
      send_->setInitial(layout_.sendOffset + i, inputBits(rank_, i));
  }

  ncclResult_t launch(ncclComm_t comm) {
    ncclRedOp_t op = ncclSum;
    if (isReducing(case_.collective)) {
      if (isPreMulSum(case_.reduction)) {
        scalar_ = preMulScalarBits(type_, case_.reduction);
        const auto residence = case_.reduction == Reduction::PreMulSumHost ? ncclScalarHostImmediate
                                                                           : ncclScalarDevice;
        ncclResult_t created = ncclRedOpCreatePreMulSum(&op, &scalar_, case_.type, residence, comm);
        if (created != ncclSuccess) return created;
        createdOp_ = op;
        // A host-immediate scalar is read by the create call: changing it now
        // must not change the result.
        if (residence == ncclScalarHostImmediate) scalar_ = ~scalar_;
      } else {
        op = builtInOp(case_.reduction);
      }
    }
    auto* sendBase = static_cast<char*>(send_->data());
    char* recvBase = single_ ? sendBase : static_cast<char*>(recv_->data());
    const void* send = layout_.sendNull ? nullptr : sendBase + layout_.sendOffset * type_.size;
    void* recv = recvBase + layout_.recvOffset * type_.size;
    return issueCollective(case_, send, recv, op, comm);
  }

  // What is wrong after the call, or nullopt.
  std::optional<std::string> check() {
    GuardedArena& out = single_ ? *send_ : *recv_;
    for (std::size_t j = 0; j < layout_.outputs; ++j) {
      std::optional<std::uint64_t> expected = expectedOutput(j);
      if (!expected)
        return "the test's inputs have no exact result (a bug in the test's choice of inputs)";
      out.expect(layout_.recvOffset + j, *expected);
    }
    if (auto mismatch = send_->firstMismatch(single_ ? "in-place buffer" : "send buffer"))
      return mismatch;
    if (!single_) return recv_->firstMismatch("receive buffer");
    return std::nullopt;
  }

  // Collective over the ranks when the case asks for windows.
  void registerWindows(ncclComm_t comm) {
    if (!case_.inWindows) return;
    for (GuardedArena* arena : {send_.get(), recv_.get()}) {
      if (arena == nullptr) continue;
      ncclWindow_t window = nullptr;
      ncclResult_t result = ncclCommWindowRegister(comm, arena->allocation(),
                                                   arena->allocationBytes(), &window,
                                                   NCCL_WIN_COLL_SYMMETRIC);
      EXPECT_EQ(result, ncclSuccess) << "ncclCommWindowRegister: " << ncclGetLastError(comm);
      if (result == ncclSuccess) windows_.push_back(window);
    }
  }

  void deregisterWindows(ncclComm_t comm) {
    for (ncclWindow_t window : windows_) {
      ncclResult_t result = ncclCommWindowDeregister(comm, window);
      EXPECT_EQ(result, ncclSuccess) << "ncclCommWindowDeregister: " << ncclGetLastError(comm);
    }
    windows_.clear();
  }

  void releaseOp(ncclComm_t comm) {
    if (!createdOp_) return;
    ncclResult_t destroyed = ncclRedOpDestroy(*createdOp_, comm);
    EXPECT_EQ(destroyed, ncclSuccess) << "ncclRedOpDestroy: " << ncclGetLastError(comm);
    createdOp_.reset();
  }

 private:
  std::uint64_t inputBits(int rank, std::size_t index) const {
    if (isReducing(case_.collective))
      return reductionInputBits(type_, case_.reduction, nranks_, case_.seed, rank, index);
    return movedInputBits(type_, case_.seed, rank, index);
  }

  std::optional<std::uint64_t> reducedAt(std::size_t index) {
    inputs_.resize(nranks_);
    for (int q = 0; q < nranks_; ++q) inputs_[q] = inputBits(q, index);
    return reduceReference(type_, case_.reduction, inputs_);
  }

  std::optional<std::uint64_t> expectedOutput(std::size_t j) {
    const std::size_t count = case_.count;
    const auto block = [&](std::size_t k) { return static_cast<int>(k / count); };
    switch (case_.collective) {
      case Collective::AllReduce:
      case Collective::Reduce: return reducedAt(j);
      case Collective::ReduceScatter: return reducedAt(rank_ * count + j);
      case Collective::AllGather:
      case Collective::Gather: return inputBits(block(j), j % count);
      case Collective::Broadcast: return inputBits(case_.root, j);
      case Collective::AlltoAll: return inputBits(block(j), rank_ * count + j % count);
      case Collective::Scatter: return inputBits(case_.root, rank_ * count + j);
    }
    return std::nullopt;
  }

  const CollectiveCase case_;
  const ElementType& type_;
  const int rank_, nranks_;
  const Layout layout_;
  const bool single_;
  std::unique_ptr<GuardedArena> send_, recv_;
  std::uint64_t scalar_ = 0;
  std::optional<ncclRedOp_t> createdOp_;
  std::vector<std::uint64_t> inputs_;
  std::vector<ncclWindow_t> windows_;
};

// Runs one group of cases per step on one rank.
class CollectiveStepsProgram : public RankProgram {
 public:
  CollectiveStepsProgram(std::vector<std::vector<CollectiveCase>> steps, int rank, int nranks)
      : steps_(std::move(steps)), rank_(rank), nranks_(nranks) {}

  int steps() const override { return static_cast<int>(steps_.size()); }
  std::string describeStep(int step) const override {
    std::string text;
    for (const auto& c : steps_[step]) text += (text.empty() ? "" : " + ") + c.describe();
    return text;
  }

  void prepare(int step, RankContext& context) override {
    running_.clear();
    for (const auto& c : steps_[step]) {
      running_.push_back(std::make_unique<CaseOnRank>(c, rank_, nranks_));
      running_.back()->registerWindows(context.comm);
    }
  }

  ncclResult_t launch(int, RankContext& context) override {
    // Several cases in one step form one group (nested in the harness's
    // group when one thread drives every rank).
    const bool grouped = running_.size() > 1;
    if (grouped) ncclGroupStart();
    ncclResult_t first = ncclSuccess;
    for (auto& run : running_) {
      ncclResult_t result = run->launch(context.comm);
      if (first == ncclSuccess) first = result;
    }
    if (grouped) {
      ncclResult_t ended = ncclGroupEnd();
      if (first == ncclSuccess) first = ended;
    }
    return first;
  }

  void verify(int step, RankContext& context) override {
    for (std::size_t i = 0; i < running_.size(); ++i) {
      if (auto problem = running_[i]->check()) report(steps_[step][i], *problem);
      running_[i]->releaseOp(context.comm);
      running_[i]->deregisterWindows(context.comm);
    }
    running_.clear();
  }

  void finish(RankContext& context) override {
    for (auto& run : running_) {
      run->releaseOp(context.comm);
      run->deregisterWindows(context.comm);
    }
    running_.clear();
    if (unreported_ > 0)
      ADD_FAILURE() << "rank " << rank_ << ": " << unreported_ << " more failed case(s) not shown";
  }

 private:
  static constexpr int kMaxReports = 8;

  void report(const CollectiveCase& c, const std::string& what) {
    if (reports_++ < kMaxReports)
      ADD_FAILURE() << "rank " << rank_ << " of " << nranks_ << ", " << c.describe() << ": " << what;
    else
      ++unreported_;
  }

  std::vector<std::vector<CollectiveCase>> steps_;
  int rank_, nranks_;
  std::vector<std::unique_ptr<CaseOnRank>> running_;
  int reports_ = 0, unreported_ = 0;
};

}  // namespace

ProgramFactory collectiveStepsProgram(std::vector<std::vector<CollectiveCase>> steps) {
  return [steps = std::move(steps)](int rank, int nranks) -> std::unique_ptr<RankProgram> {
    return std::make_unique<CollectiveStepsProgram>(steps, rank, nranks);
  };
}

ProgramFactory collectiveCasesProgram(std::vector<CollectiveCase> cases) {
  std::vector<std::vector<CollectiveCase>> steps;
  for (auto& c : cases) steps.push_back({std::move(c)});
  return collectiveStepsProgram(std::move(steps));
}

}  // namespace hora_coll_test

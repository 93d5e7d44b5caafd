#include "message_plan.h"

#include <memory>

#include <gtest/gtest.h>

#include "element_types.h"
#include "guarded_arena.h"
#include "reference.h"

namespace hora_coll_test {

std::string Message::describe() const {
  return "message " + std::to_string(from) + " -> " + std::to_string(to) + " " +
         elementType(type).name + " count " + std::to_string(count) +
         (unaligned ? " unaligned" : "") + " seed " + std::to_string(seed);
}

namespace {

class MessagesProgram : public RankProgram {
 public:
  MessagesProgram(std::vector<MessageStep> steps, int rank, int nranks)
      : steps_(std::move(steps)), rank_(rank), nranks_(nranks) {}

  int steps() const override { return static_cast<int>(steps_.size()); }
  std::string describeStep(int step) const override {
    const auto& messages = steps_[step].messages;
    std::string text = std::to_string(messages.size()) + " message(s)";
    if (!messages.empty()) text += ", first " + messages.front().describe();
    return text;
  }

  void prepare(int step, RankContext&) override {
    sends_.clear();
    recvs_.clear();
    for (const Message& m : steps_[step].messages) {
      const ElementType& type = elementType(m.type);
      if (m.from == rank_) {
        auto arena = std::make_unique<GuardedArena>(type, m.count, m.unaligned);
        for (std::size_t i = 0; i < m.count; ++i)
          arena->setInitial(i, movedInputBits(type, m.seed, m.from, i));
        sends_.push_back(std::move(arena));
      } else {
        sends_.push_back(nullptr);
      }
      recvs_.push_back(m.to == rank_ ? std::make_unique<GuardedArena>(type, m.count, m.unaligned)
                                     : nullptr);
    }
  }

  ncclResult_t launch(int step, RankContext& context) override {
    const MessageStep& s = steps_[step];
    if (s.grouped) ncclGroupStart();
    ncclResult_t first = ncclSuccess;
    for (std::size_t i = 0; i < s.messages.size(); ++i) {
      const Message& m = s.messages[i];
      ncclResult_t result = ncclSuccess;
      if (sends_[i]) result = ncclSend(sends_[i]->data(), m.count, m.type, m.to, context.comm, nullptr);
      if (result == ncclSuccess && recvs_[i])
        result = ncclRecv(recvs_[i]->data(), m.count, m.type, m.from, context.comm, nullptr);
      if (first == ncclSuccess) first = result;
    }
    if (s.grouped) {
      ncclResult_t ended = ncclGroupEnd();
      if (first == ncclSuccess) first = ended;
    }
    return first;
  }

  void verify(int step, RankContext&) override {
    const MessageStep& s = steps_[step];
    for (std::size_t i = 0; i < s.messages.size(); ++i) {
      const Message& m = s.messages[i];
      const ElementType& type = elementType(m.type);
      if (recvs_[i]) {
        for (std::size_t j = 0; j < m.count; ++j)
          recvs_[i]->expect(j, movedInputBits(type, m.seed, m.from, j));
        if (auto problem = recvs_[i]->firstMismatch("receive buffer"))
          ADD_FAILURE() << "rank " << rank_ << ", " << m.describe() << ": " << *problem;
      }
      if (sends_[i])
        if (auto problem = sends_[i]->firstMismatch("send buffer"))
          ADD_FAILURE() << "rank " << rank_ << ", " << m.describe() << ": " << *problem;
    }
    sends_.clear();
    recvs_.clear();
  }

 private:
  std::vector<MessageStep> steps_;
  int rank_, nranks_;
  std::vector<std::unique_ptr<GuardedArena>> sends_, recvs_;
};

ncclDataType_t typeNumber(std::size_t k) {
  return allElementTypes()[k % allElementTypes().size()].id;
}

}  // namespace

ProgramFactory messagesProgram(std::vector<MessageStep> steps) {
  return [steps = std::move(steps)](int rank, int nranks) -> std::unique_ptr<RankProgram> {
    return std::make_unique<MessagesProgram>(steps, rank, nranks);
  };
}

std::vector<MessageStep> ringShiftSteps(int nranks, const std::vector<std::size_t>& counts,
                                        std::uint64_t seed) {
  std::vector<MessageStep> steps;
  std::size_t variant = 0;
  for (int shift = 0; shift < nranks; ++shift)
    for (std::size_t count : counts) {
      MessageStep step;
      const ncclDataType_t type = typeNumber(variant);
      const bool unaligned = (variant & 1) != 0;
      for (int r = 0; r < nranks; ++r)
        step.messages.push_back({r, (r + shift) % nranks, type, count, unaligned, seed + variant});
      steps.push_back(step);
      ++variant;
    }
  return steps;
}

std::vector<MessageStep> allPairsSteps(int nranks, std::size_t count, std::uint64_t seed) {
  std::vector<MessageStep> steps;
  std::size_t variant = 0;
  for (int from = 0; from < nranks; ++from)
    for (int to = 0; to < nranks; ++to) {
      if (from == to) continue;  // alone, a message to self could not be received
      MessageStep step;
      step.grouped = false;
      step.messages.push_back({from, to, typeNumber(variant), count + variant, (variant & 1) != 0,
                               seed + variant});
      steps.push_back(step);
      ++variant;
    }
  return steps;
}

MessageStep unevenAllToAllStep(int nranks, std::uint64_t seed) {
  MessageStep step;
  for (int from = 0; from < nranks; ++from)
    for (int to = 0; to < nranks; ++to) {
      // 0 for one pair, otherwise different for every pair.
      const std::size_t count = (from + 2 * to) % 5 == 0 ? 0 : 1 + 97 * from + 31 * to;
      step.messages.push_back({from, to, typeNumber(from + to), count, ((from + to) & 1) != 0,
                               seed + static_cast<std::uint64_t>(from * nranks + to)});
    }
  return step;
}

MessageStep orderedMessagesStep(int nranks, std::uint64_t seed) {
  MessageStep step;
  std::uint64_t k = 0;
  for (int repeat = 0; repeat < 3; ++repeat)
    for (int from = 0; from < nranks; ++from)
      for (int to : {(from + 1) % nranks, (from + nranks - 1) % nranks, from}) {
        // Same pair, different sizes and types: a receive matched with the
        // wrong send would get the wrong size or content.
        step.messages.push_back({from, to, typeNumber(k), 10 + 300 * static_cast<std::size_t>(repeat) + k,
                                 (k & 1) != 0, seed + k});
        ++k;
      }
  return step;
}

}  // namespace hora_coll_test

#include "grouped_programs.h"

#include <stdexcept>

namespace hora_coll_test {

namespace {
class GroupedPrograms : public RankProgram {
 public:
  explicit GroupedPrograms(std::vector<std::unique_ptr<RankProgram>> parts) : parts_(std::move(parts)) {
    for (const auto& part : parts_)
      if (part->steps() != parts_.front()->steps())
        throw std::invalid_argument("grouped programs must have the same number of steps");
  }
  int steps() const override { return parts_.empty() ? 0 : parts_.front()->steps(); }
  std::string describeStep(int step) const override {
    std::string text;
    for (const auto& part : parts_) text += (text.empty() ? "" : " | ") + part->describeStep(step);
    return text;
  }
  void prepare(int step, RankContext& context) override {
    for (auto& part : parts_) part->prepare(step, context);
  }
  ncclResult_t launch(int step, RankContext& context) override {
    ncclGroupStart();
    ncclResult_t first = ncclSuccess;
    for (auto& part : parts_) {
      ncclResult_t result = part->launch(step, context);
      if (first == ncclSuccess) first = result;
    }
    ncclResult_t ended = ncclGroupEnd();
    return first != ncclSuccess ? first : ended;
  }
  void verify(int step, RankContext& context) override {
    for (auto& part : parts_) part->verify(step, context);
  }
  void finish(RankContext& context) override {
    for (auto& part : parts_) part->finish(context);
  }

 private:
  std::vector<std::unique_ptr<RankProgram>> parts_;
};
}  // namespace

ProgramFactory groupedTogether(std::vector<ProgramFactory> programs) {
  return [programs = std::move(programs)](int rank, int nranks) -> std::unique_ptr<RankProgram> {
    std::vector<std::unique_ptr<RankProgram>> parts;
    for (const auto& factory : programs) parts.push_back(factory(rank, nranks));
    return std::make_unique<GroupedPrograms>(std::move(parts));
  };
}

}  // namespace hora_coll_test

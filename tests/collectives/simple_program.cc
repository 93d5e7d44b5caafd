#include "simple_program.h"

#include <memory>

namespace hora_coll_test {

namespace {
class SimpleProgram : public RankProgram {
 public:
  explicit SimpleProgram(std::vector<SimpleStep> steps) : steps_(std::move(steps)) {}
  int steps() const override { return static_cast<int>(steps_.size()); }
  std::string describeStep(int step) const override { return steps_[step].name; }
  ncclResult_t launch(int step, RankContext& context) override {
    return steps_[step].launch(context);
  }
  void verify(int step, RankContext& context) override {
    if (steps_[step].verify) steps_[step].verify(context);
  }

 private:
  std::vector<SimpleStep> steps_;
};
}  // namespace

ProgramFactory programOf(StepsFactory steps) {
  return [steps = std::move(steps)](int rank, int nranks) -> std::unique_ptr<RankProgram> {
    return std::make_unique<SimpleProgram>(steps(rank, nranks));
  };
}

}  // namespace hora_coll_test

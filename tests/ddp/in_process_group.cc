#include "in_process_group.h"

#include <cstring>
#include <exception>
#include <functional>

#include "float_formats.h"

namespace hora::ddp::testing {

namespace {

// Every wait in the fake is bounded, so a broken test fails instead of hanging.
constexpr std::chrono::seconds kWaitLimit{20};

// Adds `scale` times one rank's contribution into the running sum (which the
// first contribution initialises). scale is 1 for Sum and 1/size for Avg:
// hora pre-multiplies for Avg, so the fake does too.
template <typename T>
void accumulate(void* sum, const void* value, std::size_t count, double scale, bool first) {
  auto* out = static_cast<T*>(sum);
  const auto* in = static_cast<const T*>(value);
  const auto factor = static_cast<T>(scale);
  for (std::size_t i = 0; i < count; ++i) out[i] = (first ? T{0} : out[i]) + factor * in[i];
}

template <float (*toFloat)(std::uint16_t), std::uint16_t (*fromFloat)(float)>
void accumulateSixteenBit(void* sum, const void* value, std::size_t count, double scale,
                          bool first) {
  auto* out = static_cast<std::uint16_t*>(sum);
  const auto* in = static_cast<const std::uint16_t*>(value);
  const auto factor = static_cast<float>(scale);
  for (std::size_t i = 0; i < count; ++i) {
    // Rounded to 16 bits after the scaling and after the addition, as a
    // 16-bit reduction does.
    const float scaled = toFloat(fromFloat(factor * toFloat(in[i])));
    out[i] = fromFloat((first ? 0.0f : toFloat(out[i])) + scaled);
  }
}

void accumulate(DataType type, void* sum, const void* value, std::size_t count, double scale,
                bool first) {
  switch (type) {
    case DataType::Float32: return accumulate<float>(sum, value, count, scale, first);
    case DataType::Float64: return accumulate<double>(sum, value, count, scale, first);
    case DataType::Uint64: return accumulate<std::uint64_t>(sum, value, count, scale, first);
    case DataType::Float16:
      return accumulateSixteenBit<halfToFloat, floatToHalf>(sum, value, count, scale, first);
    case DataType::Bfloat16:
      return accumulateSixteenBit<bfloat16ToFloat, floatToBfloat16>(sum, value, count, scale,
                                                                    first);
    default: throw Error(ErrorKind::InvalidUsage, "the in-process fake cannot add this type");
  }
}

}  // namespace

struct InProcessWorld::Pending {
  std::vector<IssuedCollective> calls;  // per rank
  std::vector<void*> outputs;           // per rank
  std::vector<bool> arrived;
  int arrivedCount = 0;
  RedOp op = RedOp::Sum;
  int root = 0;
  bool done = false;
  std::exception_ptr error;
  std::condition_variable finished;
};

namespace {

class FakeWork final : public Work {
 public:
  FakeWork(std::shared_ptr<InProcessWorld> world, std::mutex& mutex, bool& done,
           std::exception_ptr& error, std::condition_variable& finished)
      : world_(std::move(world)), mutex_(mutex), done_(done), error_(error), finished_(finished) {}

  bool test() override {
    std::lock_guard lock(mutex_);
    return done_;
  }
  void wait() override {
    std::unique_lock lock(mutex_);
    if (!finished_.wait_for(lock, kWaitLimit, [&] { return done_; }))
      throw Error(ErrorKind::Remote, "in-process fake: a collective waited too long for its peers");
    if (error_) std::rethrow_exception(error_);
  }
  std::exception_ptr error() override {
    std::lock_guard lock(mutex_);
    return error_;
  }

 private:
  std::shared_ptr<InProcessWorld> world_;  // keeps the referenced state alive
  std::mutex& mutex_;
  bool& done_;
  std::exception_ptr& error_;
  std::condition_variable& finished_;
};

class InProcessGroup final : public ProcessGroup {
 public:
  InProcessGroup(std::shared_ptr<InProcessWorld> world, int rank)
      : world_(std::move(world)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return world_->size(); }
  WorkPtr allReduce(void* buffer, std::size_t count, DataType type, RedOp op) override {
    return world_->issue(rank_, {"allreduce", count, type, buffer}, buffer, op, 0);
  }
  WorkPtr broadcast(void* buffer, std::size_t count, DataType type, int root) override {
    return world_->issue(rank_, {"broadcast", count, type, buffer}, buffer, RedOp::Sum, root);
  }
  WorkPtr allGather(const void* send, void* recv, std::size_t count, DataType type) override {
    return world_->issue(rank_, {"allgather", count, type, send}, recv, RedOp::Sum, 0);
  }

 private:
  std::shared_ptr<InProcessWorld> world_;
  int rank_;
};

}  // namespace

InProcessWorld::InProcessWorld(int size) : size_(size), issued_(static_cast<std::size_t>(size)) {}

std::shared_ptr<InProcessWorld> InProcessWorld::create(int size) {
  return std::make_shared<InProcessWorld>(size);
}

std::shared_ptr<ProcessGroup> InProcessWorld::group(int rank) {
  return std::make_shared<InProcessGroup>(shared_from_this(), rank);
}

void InProcessWorld::failFrom(std::size_t index) {
  std::lock_guard lock(mutex_);
  failFrom_ = index;
  // Collectives some ranks already issued fail too: their peer will never come.
  for (std::size_t k = index; k < collectives_.size(); ++k) {
    Pending& pending = *collectives_[k];
    if (pending.done) continue;
    pending.error = std::make_exception_ptr(Error(
        ErrorKind::Remote, "in-process fake: peer lost during collective " + std::to_string(k)));
    pending.done = true;
    pending.finished.notify_all();
  }
}

std::vector<IssuedCollective> InProcessWorld::issued(int rank) const {
  std::lock_guard lock(mutex_);
  return issued_[static_cast<std::size_t>(rank)];
}

WorkPtr InProcessWorld::issue(int rank, IssuedCollective collective, void* output, RedOp op,
                              int root) {
  std::lock_guard lock(mutex_);
  auto& mine = issued_[static_cast<std::size_t>(rank)];
  const std::size_t index = mine.size();
  mine.push_back(collective);
  if (collectives_.size() <= index) {
    auto pending = std::make_shared<Pending>();
    pending->calls.resize(static_cast<std::size_t>(size_));
    pending->outputs.resize(static_cast<std::size_t>(size_));
    pending->arrived.assign(static_cast<std::size_t>(size_), false);
    pending->op = op;
    pending->root = root;
    collectives_.push_back(pending);
  }
  Pending& pending = *collectives_[index];
  pending.calls[static_cast<std::size_t>(rank)] = collective;
  pending.outputs[static_cast<std::size_t>(rank)] = output;
  pending.arrived[static_cast<std::size_t>(rank)] = true;
  if (index >= failFrom_) {
    pending.error = std::make_exception_ptr(
        Error(ErrorKind::Remote, "rank " + std::to_string(rank) +
                                     ": in-process fake: peer lost during collective " +
                                     std::to_string(index)));
    pending.done = true;
    pending.finished.notify_all();
  } else if (++pending.arrivedCount == size_) {
    run(pending);
  }
  return std::make_shared<FakeWork>(shared_from_this(), mutex_, pending.done, pending.error,
                                    pending.finished);
}

// Runs a collective whose ranks have all arrived (under the mutex).
void InProcessWorld::run(Pending& pending) {
  const IssuedCollective& first = pending.calls[0];
  for (const auto& call : pending.calls) {
    if (call.kind != first.kind || call.count != first.count || call.type != first.type) {
      pending.error = std::make_exception_ptr(
          Error(ErrorKind::InvalidUsage, "in-process fake: ranks issued different collectives"));
      pending.done = true;
      pending.finished.notify_all();
      return;
    }
  }
  const std::size_t bytes = first.count * dataTypeSize(first.type);
  if (first.kind == "allreduce") {
    if (pending.op != RedOp::Sum && pending.op != RedOp::Avg) {
      pending.error = std::make_exception_ptr(
          Error(ErrorKind::InvalidUsage, "in-process fake: only sum and avg are implemented"));
      pending.done = true;
      pending.finished.notify_all();
      return;
    }
    const double scale = pending.op == RedOp::Avg ? 1.0 / size_ : 1.0;
    std::vector<std::byte> sum(bytes);
    for (std::size_t r = 0; r < pending.calls.size(); ++r)
      accumulate(first.type, sum.data(), pending.calls[r].buffer, first.count, scale, r == 0);
    for (void* output : pending.outputs) std::memcpy(output, sum.data(), bytes);
  } else if (first.kind == "broadcast") {
    std::vector<std::byte> value(bytes);
    std::memcpy(value.data(), pending.calls[static_cast<std::size_t>(pending.root)].buffer, bytes);
    for (void* output : pending.outputs) std::memcpy(output, value.data(), bytes);
  } else {  // allgather
    std::vector<std::byte> gathered(bytes * pending.calls.size());
    for (std::size_t r = 0; r < pending.calls.size(); ++r)
      std::memcpy(gathered.data() + r * bytes, pending.calls[r].buffer, bytes);
    for (void* output : pending.outputs) std::memcpy(output, gathered.data(), gathered.size());
  }
  pending.done = true;
  pending.finished.notify_all();
}

}  // namespace hora::ddp::testing

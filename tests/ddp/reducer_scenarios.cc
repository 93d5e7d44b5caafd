#include "reducer_scenarios.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "float_formats.h"
#include "hora/ddp/reducer.h"

namespace hora::ddp::testing {

namespace {

// Small caps so that a few hundred elements spread over several buckets.
constexpr BucketCaps kSmallCaps{.firstBucketBytes = 16, .bucketBytes = 256};

// A model whose parameters the test owns: float and double tensors.
class TestModel {
 public:
  struct Spec {
    std::size_t count;
    DataType type;
  };

  TestModel(const std::vector<Spec>& specs, int rank) {
    values_.reserve(specs.size());
    for (std::size_t i = 0; i < specs.size(); ++i) {
      // 8 bytes per element whatever the type, so both fit.
      values_.emplace_back(specs[i].count);
      Parameter parameter;
      parameter.name = std::string("p").append(std::to_string(i));
      parameter.data = values_.back().data();
      parameter.count = specs[i].count;
      parameter.type = specs[i].type;
      parameters_.push_back(parameter);
      // Distinct per rank: the broadcast must replace these with rank 0's.
      for (std::size_t j = 0; j < specs[i].count; ++j) set(i, j, initialValue(rank, i, j));
    }
  }

  static double initialValue(int rank, std::size_t i, std::size_t j) {
    return 100.0 * rank + 10.0 * static_cast<double>(i) + 0.5 * static_cast<double>(j);
  }

  const std::vector<Parameter>& parameters() const { return parameters_; }

  double get(std::size_t i, std::size_t j) const {
    const void* data = values_[i].data();
    return parameters_[i].type == DataType::Float32 ? static_cast<const float*>(data)[j]
                                                    : static_cast<const double*>(data)[j];
  }
  void set(std::size_t i, std::size_t j, double value) {
    void* data = values_[i].data();
    if (parameters_[i].type == DataType::Float32)
      static_cast<float*>(data)[j] = static_cast<float>(value);
    else
      static_cast<double*>(data)[j] = value;
  }

 private:
  std::vector<std::vector<std::uint64_t>> values_;
  std::vector<Parameter> parameters_;
};

const std::vector<TestModel::Spec> kMixedModel{
    {3, DataType::Float32},   {5, DataType::Float64}, {7, DataType::Float32},
    {300, DataType::Float32}, {2, DataType::Float64}, {40, DataType::Float32},
    {0, DataType::Float32},   {64, DataType::Float64}};

// Adds `value(i, j)` to every gradient element (float or double).
template <typename ValueFn>
void addToGradients(Reducer& reducer, ValueFn value) {
  for (std::size_t i = 0; i < reducer.numParameters(); ++i) {
    const GradientView view = reducer.gradient(i);
    for (std::size_t j = 0; j < view.count; ++j) {
      if (view.type == DataType::Float32)
        view.as<float>()[j] += static_cast<float>(value(i, j));
      else
        view.as<double>()[j] += value(i, j);
    }
  }
}

double gradientAt(const Reducer& reducer, std::size_t i, std::size_t j) {
  const GradientView view = reducer.gradient(i);
  return view.type == DataType::Float32 ? view.as<float>()[j] : view.as<double>()[j];
}

void markAll(Reducer& reducer, const std::vector<std::size_t>& order) {
  for (std::size_t index : order) reducer.markReady(index);
}

std::vector<std::size_t> reverseOrder(std::size_t n) {
  std::vector<std::size_t> order(n);
  std::iota(order.rbegin(), order.rend(), std::size_t{0});
  return order;
}

// The mean over ranks 0..n-1 of (rank + 1) is (n + 1) / 2.
double meanOfRankPlusOne(int worldSize) { return (worldSize + 1) / 2.0; }

void expectNearRelative(double actual, double expected, double relative, const std::string& where) {
  EXPECT_NEAR(actual, expected, relative * std::max(1.0, std::abs(expected))) << where;
}

}  // namespace

void expectBroadcastAndAveraging(const GroupPtr& group) {
  const int rank = group->rank();
  const int worldSize = group->size();
  TestModel model(kMixedModel, rank);
  Reducer reducer(group, model.parameters(), {.caps = kSmallCaps});
  EXPECT_GT(reducer.buckets().size(), 3u);

  for (std::size_t i = 0; i < kMixedModel.size(); ++i)
    for (std::size_t j = 0; j < kMixedModel[i].count; ++j)
      ASSERT_EQ(model.get(i, j), TestModel::initialValue(0, i, j))
          << "rank " << rank << " parameter " << i << " element " << j << " was not broadcast";

  std::mt19937 orderRandom(static_cast<std::uint32_t>(rank) + 17);
  for (int step = 0; step < 3; ++step) {
    reducer.zeroGradients();
    addToGradients(reducer, [&](std::size_t i, std::size_t j) {
      return (rank + 1) * (i + 1.0) + 0.25 * static_cast<double>(j) + step;
    });
    // Step 0 marks in backward order; later steps in a different random order
    // on every rank: buckets must still be reduced in the same order everywhere.
    std::vector<std::size_t> order = reverseOrder(reducer.numParameters());
    if (step > 0) std::shuffle(order.begin(), order.end(), orderRandom);
    markAll(reducer, order);
    reducer.finish();
    for (std::size_t i = 0; i < kMixedModel.size(); ++i)
      for (std::size_t j = 0; j < kMixedModel[i].count; ++j)
        expectNearRelative(gradientAt(reducer, i, j),
                           meanOfRankPlusOne(worldSize) * (i + 1.0) + 0.25 * j + step, 1e-5,
                           "rank " + std::to_string(rank) + " step " + std::to_string(step) +
                               " parameter " + std::to_string(i) + " element " +
                               std::to_string(j));
  }
}

void expectNoSyncAccumulation(const GroupPtr& group) {
  const int rank = group->rank();
  TestModel model(kMixedModel, rank);
  Reducer reducer(group, model.parameters(), {.caps = kSmallCaps});
  const auto order = reverseOrder(reducer.numParameters());
  reducer.zeroGradients();
  {
    auto guard = reducer.noSync();
    EXPECT_FALSE(reducer.syncEnabled());
    addToGradients(reducer, [&](std::size_t i, std::size_t) { return (rank + 1) * (i + 1.0); });
    markAll(reducer, order);
    reducer.finish();
    // Nothing was communicated: the gradients are still this rank's own.
    for (std::size_t i = 0; i < kMixedModel.size(); ++i)
      for (std::size_t j = 0; j < kMixedModel[i].count; ++j)
        ASSERT_EQ(gradientAt(reducer, i, j), (rank + 1) * (i + 1.0)) << "rank " << rank;
    addToGradients(reducer, [](std::size_t i, std::size_t) { return 0.5 * (i + 1.0); });
    markAll(reducer, order);
    reducer.finish();
  }
  EXPECT_TRUE(reducer.syncEnabled());
  addToGradients(reducer, [](std::size_t, std::size_t j) { return 0.25 * static_cast<double>(j); });
  markAll(reducer, order);
  reducer.finish();
  for (std::size_t i = 0; i < kMixedModel.size(); ++i)
    for (std::size_t j = 0; j < kMixedModel[i].count; ++j)
      expectNearRelative(gradientAt(reducer, i, j),
                         (meanOfRankPlusOne(group->size()) + 0.5) * (i + 1.0) + 0.25 * j, 1e-5,
                         "rank " + std::to_string(rank) + " parameter " + std::to_string(i));
}

namespace {

// Records what the Reducer hands to its hook, then averages as usual.
class RecordingHook final : public CommHook {
 public:
  struct Call {
    std::size_t index;
    bool isLast;
    std::size_t count;
    double firstValue;
  };
  std::string name() const override { return "recording"; }
  WorkPtr run(ProcessGroup& group, const GradBucket& bucket) override {
    calls.push_back({bucket.index, bucket.isLast, bucket.count,
                     bucket.count == 0 ? 0.0 : static_cast<const float*>(bucket.data)[0]});
    return group.allReduce(bucket.data, bucket.count, bucket.type, RedOp::Avg);
  }
  std::vector<Call> calls;
};

void expectCompressedMean(const GroupPtr& group, DataType wireType, double relative) {
  const int rank = group->rank();
  const std::vector<TestModel::Spec> specs{{10, DataType::Float32}, {500, DataType::Float32}};
  TestModel model(specs, rank);
  Reducer reducer(group, model.parameters(),
                  {.caps = kSmallCaps, .hook = makeCompressionHook(wireType)});
  for (int step = 0; step < 2; ++step) {
    reducer.zeroGradients();
    addToGradients(reducer, [&](std::size_t i, std::size_t j) {
      return (rank + 1) * (i + 1.0) + 0.01 * static_cast<double>(j);
    });
    markAll(reducer, reverseOrder(2));
    reducer.finish();
    for (std::size_t i = 0; i < specs.size(); ++i)
      for (std::size_t j = 0; j < specs[i].count; ++j)
        expectNearRelative(gradientAt(reducer, i, j),
                           meanOfRankPlusOne(group->size()) * (i + 1.0) + 0.01 * j, relative,
                           std::string("compressed to ") + dataTypeName(wireType) + ", rank " +
                               std::to_string(rank));
  }
}

}  // namespace

void expectHooks(const GroupPtr& group) {
  const int rank = group->rank();
  const int worldSize = group->size();
  const std::vector<TestModel::Spec> specs{{4, DataType::Float32}, {4, DataType::Float32},
                                           {100, DataType::Float32}};
  TestModel model(specs, rank);
  auto hook = std::make_shared<RecordingHook>();
  Reducer reducer(group, model.parameters(), {.caps = kSmallCaps, .hook = hook});
  const std::size_t buckets = reducer.buckets().size();
  // {p2} fills the 16-byte first bucket alone; {p1, p0} share the second.
  ASSERT_EQ(buckets, 2u);
  for (int step = 0; step < 2; ++step) {
    reducer.zeroGradients();
    addToGradients(reducer, [&](std::size_t, std::size_t) { return rank + 1.0; });
    markAll(reducer, {0, 1, 2});  // forward order: bucket 1 completes before bucket 0
    reducer.finish();
  }
  ASSERT_EQ(hook->calls.size(), 2 * buckets);
  for (std::size_t k = 0; k < hook->calls.size(); ++k) {
    const auto& call = hook->calls[k];
    EXPECT_EQ(call.index, k % buckets) << "buckets must reach the hook in order";
    EXPECT_EQ(call.isLast, k % buckets == buckets - 1);
    EXPECT_EQ(call.count, reducer.buckets()[k % buckets].count);
    // The hook receives this rank's own gradients (it takes the mean).
    EXPECT_FLOAT_EQ(call.firstValue, rank + 1.0);
  }
  EXPECT_FLOAT_EQ(static_cast<float>(gradientAt(reducer, 2, 99)), meanOfRankPlusOne(worldSize));

  expectCompressedMean(group, DataType::Float16, 2e-3);
  expectCompressedMean(group, DataType::Bfloat16, 2e-2);
}

void expectSixteenBitBuckets(const GroupPtr& group) {
  const int rank = group->rank();
  std::vector<std::uint16_t> halfValues(30, floatToHalf(static_cast<float>(rank)));
  std::vector<std::uint16_t> bfloatValues(20, floatToBfloat16(static_cast<float>(rank)));
  Reducer reducer(group,
                  {Parameter("half", halfValues.data(), halfValues.size(), DataType::Float16),
                   Parameter("bfloat", bfloatValues.data(), bfloatValues.size(),
                             DataType::Bfloat16)},
                  {.caps = kSmallCaps});
  EXPECT_EQ(halfToFloat(halfValues[7]), 0.0f) << "rank 0's values are broadcast";
  EXPECT_EQ(bfloat16ToFloat(bfloatValues[7]), 0.0f);
  for (auto& bits : reducer.gradientAs<std::uint16_t>(0))
    bits = floatToHalf(static_cast<float>(rank + 1));
  for (auto& bits : reducer.gradientAs<std::uint16_t>(1))
    bits = floatToBfloat16(static_cast<float>(rank + 1));
  EXPECT_THROW(reducer.gradientAs<float>(0), Error);
  markAll(reducer, {1, 0});
  reducer.finish();
  const double expected = meanOfRankPlusOne(group->size());
  for (std::uint16_t bits : reducer.gradientAs<std::uint16_t>(0))
    expectNearRelative(halfToFloat(bits), expected, 2e-3, "half");
  for (std::uint16_t bits : reducer.gradientAs<std::uint16_t>(1))
    expectNearRelative(bfloat16ToFloat(bits), expected, 2e-2, "bfloat16");
}

namespace {

// Runs `call`, expects hora::Error of `kind` whose text contains every part.
// Returns the message.
template <typename Call>
std::string expectError(Call call, ErrorKind kind, const std::vector<std::string>& parts) {
  try {
    call();
    ADD_FAILURE() << "no error; expected one mentioning " << parts.front();
    return {};
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), kind) << error.what();
    for (const auto& part : parts)
      EXPECT_NE(std::string(error.what()).find(part), std::string::npos)
          << "'" << part << "' missing from: " << error.what();
    return error.what();
  }
}

}  // namespace

void expectUsageErrors(const GroupPtr& group) {
  const int rank = group->rank();
  const std::string rankText = "rank " + std::to_string(rank);
  TestModel model(kMixedModel, rank);
  Reducer reducer(group, model.parameters(), {.caps = kSmallCaps});
  const std::size_t last = reducer.numParameters() - 1;

  // finish() before anything was marked.
  expectError([&] { reducer.finish(); }, ErrorKind::InvalidUsage, {rankText, "no step in progress"});

  reducer.markReady(last);
  expectError([&] { reducer.markReady(last); }, ErrorKind::InvalidUsage,
              {rankText, "'p" + std::to_string(last) + "'", "marked ready twice"});
  expectError([&] { reducer.markReady(last + 1); }, ErrorKind::InvalidArgument,
              {rankText, "out of range"});

  std::vector<float> late(4);
  expectError([&] { reducer.registerParameter(Parameter("late", late)); },
              ErrorKind::InvalidUsage, {rankText, "'late'", "after the first step"});

  for (std::size_t i = 1; i < last; ++i) reducer.markReady(i);
  expectError([&] { reducer.finish(); }, ErrorKind::InvalidUsage,
              {rankText, "1 of " + std::to_string(reducer.numParameters()), "'p0'"});
  // The step can still complete normally.
  reducer.markReady(0);
  reducer.finish();

  // A step whose gradients are all marked waits for finish(): marking one
  // again (the next step begun without it) says so, and the step still ends.
  for (std::size_t i = 0; i <= last; ++i) reducer.markReady(i);
  expectError([&] { reducer.markReady(0); }, ErrorKind::InvalidUsage, {rankText, "'p0'", "call finish()"});
  reducer.finish();
  expectError([&] { reducer.finish(); }, ErrorKind::InvalidUsage, {rankText, "no step in progress"});

  std::vector<int> integers(3);
  expectError(
      [&] {
        Reducer bad(group, {Parameter("ints", integers.data(), 3, DataType::Int32)});
      },
      ErrorKind::InvalidArgument, {rankText, "'ints'", "int32"});
}

void expectLayoutMismatchDetected(const GroupPtr& group) {
  const int rank = group->rank();
  const int odd = group->size() - 1;
  std::vector<TestModel::Spec> specs{{10, DataType::Float32}, {20, DataType::Float32}};
  if (rank == odd) specs.push_back({5, DataType::Float32});
  TestModel model(specs, rank);
  expectError([&] { Reducer reducer(group, model.parameters()); }, ErrorKind::InvalidUsage,
              {"rank " + std::to_string(rank) + ":", "differs between ranks",
               "rank " + std::to_string(odd) + " has 3 parameters", "rank 0 has 2 parameters"});
}

void expectFailureWhenARankLeaves(const GroupPtr& group, const std::function<void()>& leave,
                                  std::chrono::seconds limit) {
  const int rank = group->rank();
  TestModel model(kMixedModel, rank);
  Reducer reducer(group, model.parameters(), {.caps = kSmallCaps});
  if (rank == group->size() - 1) {
    leave();
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  addToGradients(reducer, [](std::size_t, std::size_t) { return 1.0; });
  for (std::size_t i : reverseOrder(reducer.numParameters())) reducer.markReady(i);
  const std::string message = expectError([&] { reducer.finish(); }, ErrorKind::Remote,
                                          {"rank " + std::to_string(rank) + ":", "gradient bucket"});
  const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start);
  std::printf("after %.2f s, finish() threw: %s\n", seconds.count(), message.c_str());
  EXPECT_LT(std::chrono::steady_clock::now() - start, limit) << "the failure took too long to surface";
  // The Reducer refuses to go on rather than hang or compute garbage.
  expectError([&] { reducer.markReady(0); }, ErrorKind::InvalidUsage,
              {"cannot continue after a failed step"});
}

void expectAHookFailingOnOneRankFailsEveryRank(Communicator& communicator, std::chrono::seconds limit) {
  const int rank = communicator.rank();
  const int failing = communicator.size() - 1;
  // All-reduces every bucket, except bucket 0 on the failing rank, where it
  // throws before it issues anything.
  struct FailingHook final : CommHook {
    FailingHook(bool fails) : fails(fails) {}
    std::string name() const override { return "fails-on-one-rank"; }
    WorkPtr run(ProcessGroup& group, const GradBucket& bucket) override {
      if (fails && bucket.index == 0) throw Error(ErrorKind::System, "out of scratch memory");
      return inner->run(group, bucket);
    }
    bool fails;
    std::shared_ptr<CommHook> inner = makeAllReduceHook();
  };
  TestModel model(kMixedModel, rank);
  Reducer reducer(wrapCommunicator(communicator), model.parameters(),
                  {.caps = kSmallCaps, .hook = std::make_shared<FailingHook>(rank == failing)});
  ASSERT_GT(reducer.buckets().size(), 2u);
  addToGradients(reducer, [](std::size_t, std::size_t) { return 1.0; });
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i : reverseOrder(reducer.numParameters())) reducer.markReady(i);
  try {
    reducer.finish();
    ADD_FAILURE() << "rank " << rank << ": the step succeeded although rank " << failing
                  << "'s hook failed: its buckets were paired with others";
  } catch (const Error& error) {
    const std::string text = error.what();
    if (rank == failing) {
      EXPECT_NE(text.find("out of scratch memory"), std::string::npos) << text;
      EXPECT_NE(text.find("gradient bucket 0"), std::string::npos) << text;
    } else {
      EXPECT_EQ(error.failedRank(), failing) << "rank " << rank << ": " << text;
    }
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, limit) << "rank " << rank << ": the failure took too long";
  // A program that goes on (averaging its loss, say) is refused on every
  // rank, instead of pairing with a peer's unfinished bucket.
  float loss = 1.0f;
  EXPECT_THROW(communicator.allReduce(&loss, &loss, 1, DataType::Float32, RedOp::Sum), Error) << "rank " << rank;
}

// The last rank leaves mid-run; the others learn which rank failed first
// from the step's error, shrink the communicator past it, and go on: the
// next steps average over the remaining ranks only.
void expectSurvivorsGoOnWhenARankLeaves(Communicator& communicator, const std::function<void()>& leave,
                                        std::chrono::milliseconds goOnFor) {
  const int rank = communicator.rank();
  const int leaving = communicator.size() - 1;
  TestModel model(kMixedModel, rank);
  Reducer reducer(communicator, model.parameters(), {.caps = kSmallCaps});
  if (rank == leaving) {
    leave();
    return;
  }
  addToGradients(reducer, [](std::size_t, std::size_t) { return 1.0; });
  for (std::size_t i : reverseOrder(reducer.numParameters())) reducer.markReady(i);
  int failed = -1;
  try {
    reducer.finish();
    ADD_FAILURE() << "rank " << rank << ": the step succeeded although rank " << leaving << " left";
    return;
  } catch (const Error& error) {
    failed = error.failedRank();
    EXPECT_EQ(failed, leaving) << "rank " << rank << ": " << error.what();
  }
  if (failed < 0) return;
  std::unique_ptr<Communicator> remaining = communicator.shrink({failed});
  ASSERT_EQ(remaining->size(), communicator.size() - 1);
  reducer.continueWith(*remaining);
  // Every survivor decides alike whether to go on (the first rank's clock):
  // they must all make the same number of steps.
  const auto until = std::chrono::steady_clock::now() + goOnFor;
  for (int step = 0;; ++step) {
    std::int64_t more = step < 2 || std::chrono::steady_clock::now() < until ? 1 : 0;
    remaining->broadcast(&more, &more, 1, DataType::Int64, 0);
    if (more == 0) break;
    if (goOnFor.count() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));  // "compute"
    reducer.zeroGradients();
    addToGradients(reducer, [&](std::size_t i, std::size_t j) { return (rank + 1.0) * (i + 1.0) + 0.25 * j; });
    for (std::size_t i : reverseOrder(reducer.numParameters())) reducer.markReady(i);
    reducer.finish();
    for (std::size_t i = 0; i < kMixedModel.size(); ++i)
      for (std::size_t j = 0; j < kMixedModel[i].count; ++j)
        expectNearRelative(gradientAt(reducer, i, j), meanOfRankPlusOne(remaining->size()) * (i + 1.0) + 0.25 * j,
                           1e-6, "rank " + std::to_string(rank) + " after the shrink, parameter " +
                                     std::to_string(i) + " element " + std::to_string(j));
  }
}

}  // namespace hora::ddp::testing

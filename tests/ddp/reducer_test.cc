// The Reducer over the in-process fake group: the shared scenarios for 1-4
// ranks, and what only the fake can observe (which collectives were issued,
// when, and in which order).
#include <gtest/gtest.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstddef>
#include <string>
#include <vector>

#include "float_formats.h"
#include "hora/ddp/comm_hook.h"
#include "hora/ddp/reducer.h"
#include "in_process_group.h"
#include "reducer_scenarios.h"
#include "works.h"

namespace hora::ddp::testing {
namespace {

class ReducerOnFake : public ::testing::TestWithParam<int> {
 protected:
  // Runs scenario(group) on every rank of a fresh fake world.
  void runOnAllRanks(const std::function<void(const GroupPtr&)>& scenario) {
    auto world = InProcessWorld::create(GetParam());
    onEachRank(GetParam(), [&](int rank) { scenario(world->group(rank)); });
  }
};

TEST_P(ReducerOnFake, BroadcastAndAveraging) { runOnAllRanks(expectBroadcastAndAveraging); }
TEST_P(ReducerOnFake, NoSyncAccumulation) { runOnAllRanks(expectNoSyncAccumulation); }
TEST_P(ReducerOnFake, Hooks) { runOnAllRanks(expectHooks); }
TEST_P(ReducerOnFake, SixteenBitBuckets) { runOnAllRanks(expectSixteenBitBuckets); }
TEST_P(ReducerOnFake, UsageErrors) { runOnAllRanks(expectUsageErrors); }

INSTANTIATE_TEST_SUITE_P(Ranks, ReducerOnFake, ::testing::Values(1, 2, 3, 4),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

// Failures need a second rank.
class ReducerFailuresOnFake : public ReducerOnFake {};

TEST_P(ReducerFailuresOnFake, LayoutMismatch) { runOnAllRanks(expectLayoutMismatchDetected); }

TEST_P(ReducerFailuresOnFake, RankLeaves) {
  auto world = InProcessWorld::create(GetParam());
  onEachRank(GetParam(), [&](int rank) {
    auto group = world->group(rank);
    expectFailureWhenARankLeaves(
        group, [&] { world->failFrom(world->issued(rank).size()); }, std::chrono::seconds(5));
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, ReducerFailuresOnFake, ::testing::Values(2, 3, 4),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

std::vector<Parameter> floatParameters(std::vector<std::vector<float>>& storage) {
  std::vector<Parameter> parameters;
  for (std::size_t i = 0; i < storage.size(); ++i)
    parameters.emplace_back(std::string("w").append(std::to_string(i)), std::span<float>(storage[i]));
  return parameters;
}

// Device buckets where the process sees no CUDA device (the host suites
// hide GPUs) or the build has no CUDA: refused at construction, saying so.
TEST(Reducer, DeviceParametersWithoutADeviceAreRefused) {
  auto world = InProcessWorld::create(1);
  std::vector<float> values(16);
  std::vector<Parameter> parameters{
      Parameter("w", values.data(), values.size(), DataType::Float32, MemoryKind::Device)};
  try {
    Reducer reducer(world->group(0), parameters);
    FAIL() << "a Reducer with device parameters was built without a CUDA device";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidUsage);
    const std::string text = error.what();
    EXPECT_EQ(text.rfind("rank 0: parameter 'w': gradient buckets in device memory", 0), 0u) << text;
  }
}

// A memory kind outside the enumeration is the caller's mistake, not a
// limit of the build.
TEST(Reducer, AMemoryKindThatIsNeitherHostNorDeviceIsRefused) {
  auto world = InProcessWorld::create(1);
  std::vector<float> values(4);
  std::vector<Parameter> parameters{
      Parameter("w", values.data(), values.size(), DataType::Float32, static_cast<MemoryKind>(7))};
  try {
    Reducer reducer(world->group(0), parameters);
    FAIL() << "a Reducer took memory kind 7";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
    const std::string text = error.what();
    EXPECT_EQ(text, "rank 0: parameter 'w' has memory kind 7, which is neither MemoryKind::Host nor "
                    "MemoryKind::Device") << text;
  }
}

TEST(Reducer, GradientsAreViewsIntoBuckets) {
  auto world = InProcessWorld::create(1);
  std::vector<std::vector<float>> storage{std::vector<float>(3), std::vector<float>(5),
                                          std::vector<float>(100)};
  Reducer reducer(world->group(0), floatParameters(storage),
                  {.caps = {.firstBucketBytes = 30, .bucketBytes = 1000}});
  // Walk 2 (400 bytes) closes the first bucket; 1 and 0 share the second.
  ASSERT_EQ(reducer.buckets().size(), 2u);
  const auto& shared = reducer.buckets()[1];
  ASSERT_EQ(shared.parameters, (std::vector<std::size_t>{1, 0}));
  const auto* base = static_cast<float*>(reducer.gradient(1).data);
  EXPECT_EQ(reducer.gradient(0).data, base + 5) << "p0 lies right after p1 in the bucket";
  EXPECT_EQ(reducer.gradient(0).count, 3u);
  EXPECT_EQ(reducer.gradientAs<float>(2).size(), 100u);
  EXPECT_NE(reducer.gradient(2).data, reducer.gradient(0).data);
  try {
    reducer.gradientAs<double>(0);
    FAIL() << "a float gradient was viewed as double";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
    EXPECT_EQ(std::string(error.what()).rfind("rank 0: gradientAs(): parameter 'w0' (index 0): gradient of "
                                              "type float viewed as a C++ type of 8 bytes", 0), 0u)
        << error.what();
  }
  EXPECT_THROW(reducer.gradient(0).as<std::uint16_t>(), Error);
}

TEST(Reducer, BucketsStartInOrderAsSoonAsTheyAndTheirPredecessorsAreReady) {
  auto world = InProcessWorld::create(1);
  std::vector<std::vector<float>> storage(6, std::vector<float>(4));  // 16 bytes each
  Reducer reducer(world->group(0), floatParameters(storage),
                  {.caps = {.firstBucketBytes = 16, .bucketBytes = 32}});
  // Buckets: {5}, {4, 3}, {2, 1}, {0}.
  ASSERT_EQ(reducer.buckets().size(), 4u);
  const std::size_t setup = world->issued(0).size();  // the layout all-gather
  auto allReducesIssued = [&] { return world->issued(0).size() - setup; };

  reducer.markReady(0);  // completes the last bucket: it must wait
  reducer.markReady(2);
  reducer.markReady(1);  // completes bucket 2: still waits for 0 and 1
  EXPECT_EQ(allReducesIssued(), 0u);
  reducer.markReady(5);  // bucket 0 complete: starts alone
  EXPECT_EQ(allReducesIssued(), 1u);
  reducer.markReady(4);
  EXPECT_EQ(allReducesIssued(), 1u);
  reducer.markReady(3);  // bucket 1 complete: 1, 2 and 3 start, in that order
  EXPECT_EQ(allReducesIssued(), 4u);
  reducer.finish();

  const auto issued = world->issued(0);
  for (std::size_t b = 0; b < 4; ++b) {
    EXPECT_EQ(issued[setup + b].kind, "allreduce");
    EXPECT_EQ(issued[setup + b].buffer, reducer.gradient(reducer.buckets()[b].parameters[0]).data)
        << "bucket " << b << " was not issued in its turn";
  }
}

TEST(Reducer, NoSyncStepsIssueNoCollectives) {
  auto world = InProcessWorld::create(2);
  onEachRank(2, [&](int rank) {
    std::vector<std::vector<float>> storage(3, std::vector<float>(8));
    Reducer reducer(world->group(rank), floatParameters(storage));
    const std::size_t before = world->issued(rank).size();
    {
      auto guard = reducer.noSync();
      for (int step = 0; step < 3; ++step) {
        for (std::size_t i = 0; i < 3; ++i) reducer.markReady(i);
        reducer.finish();
      }
    }
    EXPECT_EQ(world->issued(rank).size(), before);
    for (std::size_t i = 0; i < 3; ++i) reducer.markReady(i);
    reducer.finish();
    EXPECT_EQ(world->issued(rank).size(), before + reducer.buckets().size());
  });
}

TEST(Reducer, ConstructionBroadcastsOncePerBucketAfterTheLayoutCheck) {
  auto world = InProcessWorld::create(2);
  onEachRank(2, [&](int rank) {
    std::vector<std::vector<float>> storage(5, std::vector<float>(100, float(rank)));
    Reducer reducer(world->group(rank), floatParameters(storage),
                    {.caps = {.firstBucketBytes = 400, .bucketBytes = 800}});
    const auto issued = world->issued(rank);
    ASSERT_EQ(issued.size(), 1 + reducer.buckets().size());
    EXPECT_EQ(issued[0].kind, "allgather");
    for (std::size_t k = 1; k < issued.size(); ++k) EXPECT_EQ(issued[k].kind, "broadcast");
    for (const auto& values : storage)
      for (float value : values) ASSERT_EQ(value, 0.0f);
  });
}

TEST(Reducer, RegisterParameterBeforeTheFirstStepKeepsGradients) {
  auto world = InProcessWorld::create(2);
  onEachRank(2, [&](int rank) {
    std::vector<std::vector<float>> storage(2, std::vector<float>(4, float(rank)));
    Reducer reducer(world->group(rank), floatParameters(storage));
    reducer.gradientAs<float>(1)[3] = 7.0f * rank;
    std::vector<double> extra(6, rank + 1.0);
    const std::size_t index = reducer.registerParameter(Parameter("extra", extra));
    EXPECT_EQ(index, 2u);
    EXPECT_EQ(extra[5], 1.0) << "the new parameter is broadcast from rank 0";
    EXPECT_EQ(reducer.gradientAs<float>(1)[3], 7.0f * rank) << "gradients survive the re-layout";
    EXPECT_EQ(reducer.buckets().size(), 2u);  // float and double never share
    for (auto& g : reducer.gradientAs<double>(2)) g = rank;
    for (std::size_t i = 0; i < 3; ++i) reducer.markReady(i);
    reducer.finish();
    EXPECT_DOUBLE_EQ(reducer.gradientAs<double>(2)[0], 0.5);
    EXPECT_FLOAT_EQ(reducer.gradientAs<float>(1)[3], 3.5f);
  });
}

// A parameter registered with another size on one rank: the layout check
// fails on every rank, the registration is taken back (the earlier layout
// and its gradients stay), and the reducer still runs a step.
TEST(Reducer, ARegistrationThatRanksDisagreeOnIsTakenBack) {
  auto world = InProcessWorld::create(2);
  onEachRank(2, [&](int rank) {
    std::vector<std::vector<float>> storage(2, std::vector<float>(4, float(rank)));
    Reducer reducer(world->group(rank), floatParameters(storage));
    reducer.gradientAs<float>(1)[3] = 7.0f * rank;
    std::vector<float> extra(rank == 0 ? 5 : 6, 1.0f);
    EXPECT_THROW(reducer.registerParameter(Parameter("extra", extra)), Error);
    EXPECT_EQ(reducer.numParameters(), 2u);
    EXPECT_EQ(reducer.gradientAs<float>(1)[3], 7.0f * rank) << "gradients survive the rollback";
    for (auto& g : reducer.gradientAs<float>(0)) g = static_cast<float>(rank);
    reducer.markReady(1);
    reducer.markReady(0);
    reducer.finish();
    EXPECT_FLOAT_EQ(reducer.gradientAs<float>(0)[0], 0.5f);
    EXPECT_FLOAT_EQ(reducer.gradientAs<float>(1)[3], 3.5f);
  });
}

// The compression hook sends a host Float32 bucket as Float16 (what it is
// for), and a bucket in device memory, which it cannot convert on the
// host, as it is: averaged, not refused.
TEST(CompressionHook, CompressesHostBucketsAndAveragesDeviceBucketsAsTheyAre) {
  auto world = InProcessWorld::create(2);
  onEachRank(2, [&](int rank) {
    auto hook = makeCompressionHook(DataType::Float16);
    auto group = world->group(rank);
    for (MemoryKind memory : {MemoryKind::Host, MemoryKind::Device}) {
      std::vector<float> values(8, 2.0f * static_cast<float>(rank + 1));  // 2 and 4: mean 3
      GradBucket bucket;
      bucket.data = values.data();
      bucket.count = values.size();
      bucket.memory = memory;  // the fake moves host memory either way
      const std::size_t before = world->issued(rank).size();
      hook->run(*group, bucket)->wait();
      const auto issued = world->issued(rank);
      ASSERT_EQ(issued.size(), before + 1);
      EXPECT_EQ(issued.back().type, memory == MemoryKind::Host ? DataType::Float16 : DataType::Float32);
      for (float value : values) EXPECT_FLOAT_EQ(value, 3.0f);
    }
  });
}

// What the compression hook sends is what PyTorch's compression hooks send:
// buffer.to(16 bits).div_(world size), so the value is rounded to 16 bits
// before the division (and is infinite there when beyond Float16's range),
// not divided in float and rounded once.
TEST(CompressionHook, SendsWhatPyTorchsCompressionHooksSend) {
  struct WireCapture final : ProcessGroup {
    int rank() const override { return 0; }
    int size() const override { return 3; }
    WorkPtr allReduce(void* buffer, std::size_t count, DataType type, RedOp op) override {
      const auto* wire = static_cast<const std::uint16_t*>(buffer);
      sent.assign(wire, wire + count);
      sentType = type;
      sentOp = op;
      return std::make_shared<CompletedWork>();
    }
    WorkPtr broadcast(void*, std::size_t, DataType, int) override { return std::make_shared<CompletedWork>(); }
    WorkPtr allGather(const void*, void*, std::size_t, DataType) override {
      return std::make_shared<CompletedWork>();
    }
    std::vector<std::uint16_t> sent;
    DataType sentType = DataType::Float32;
    RedOp sentOp = RedOp::Avg;
  };
  // 1.0004 rounds to 1 in both 16-bit types before the division; 80000 is
  // beyond Float16's range; 3e-5 is near Float16's subnormals.
  const std::vector<float> gradients = {1.0004f, 80000.0f, -87793.06f, 3e-5f, -2.5f, 0.0f};
  for (const DataType wireType : {DataType::Float16, DataType::Bfloat16}) {
    SCOPED_TRACE(dataTypeName(wireType));
    const bool half = wireType == DataType::Float16;
    auto toWire = [half](float value) { return half ? floatToHalf(value) : floatToBfloat16(value); };
    auto fromWire = [half](std::uint16_t bits) { return half ? halfToFloat(bits) : bfloat16ToFloat(bits); };
    std::vector<float> values = gradients;
    WireCapture group;
    GradBucket bucket;
    bucket.data = values.data();
    bucket.count = values.size();
    makeCompressionHook(wireType)->run(group, bucket)->wait();
    EXPECT_EQ(group.sentType, wireType);
    EXPECT_EQ(group.sentOp, RedOp::Sum);
    ASSERT_EQ(group.sent.size(), gradients.size());
    for (std::size_t i = 0; i < gradients.size(); ++i) {
      const std::uint16_t expected = toWire(fromWire(toWire(gradients[i])) / 3.0f);
      EXPECT_EQ(group.sent[i], expected) << gradients[i];
      // What comes back (here the one rank's share) is what was sent.
      EXPECT_EQ(std::bit_cast<std::uint32_t>(values[i]), std::bit_cast<std::uint32_t>(fromWire(expected)));
    }
    EXPECT_EQ(fromWire(group.sent[0]), fromWire(toWire(1.0f / 3.0f)));
    if (half) EXPECT_TRUE(std::isinf(values[1]) && std::isinf(values[2])) << values[1] << " " << values[2];
  }
}

// A trailing bucket of zero-element parameters has nothing to reduce and
// never reaches the hook: the last bucket the hook sees says isLast.
TEST(Reducer, TheLastBucketAHookSeesIsMarkedLastWhenEmptyBucketsFollow) {
  struct LastSeen final : CommHook {
    std::vector<std::pair<std::size_t, bool>> calls;
    std::string name() const override { return "last-seen"; }
    WorkPtr run(ProcessGroup& group, const GradBucket& bucket) override {
      calls.emplace_back(bucket.index, bucket.isLast);
      return group.allReduce(bucket.data, bucket.count, bucket.type, RedOp::Avg);
    }
  };
  auto world = InProcessWorld::create(2);
  onEachRank(2, [&](int rank) {
    // Walked last first: w1 fills the first bucket to its cap, then the
    // empty w0 opens a bucket of its own.
    std::vector<std::vector<float>> storage = {{}, std::vector<float>(100, 1.0f)};
    auto hook = std::make_shared<LastSeen>();
    Reducer reducer(world->group(rank), floatParameters(storage),
                    {.caps = {.firstBucketBytes = 400, .bucketBytes = 400}, .hook = hook});
    ASSERT_EQ(reducer.buckets().size(), 2u);
    ASSERT_EQ(reducer.buckets()[1].count, 0u);
    reducer.markReady(1);
    reducer.markReady(0);
    reducer.finish();
    ASSERT_EQ(hook->calls.size(), 1u);
    EXPECT_EQ(hook->calls[0].first, 0u);
    EXPECT_TRUE(hook->calls[0].second) << "no call the hook saw was marked last";
  });
}

// A hook of the program's that gives no Work, or throws something that is
// not a std::exception: finish() fails with InvalidUsage naming the hook and
// the bucket, never leaves this rank's own gradients as the mean, and the
// reducer stops.
TEST(Reducer, AHookThatGivesNoWorkOrThrowsAnythingFailsTheStep) {
  struct NullHook final : CommHook {
    std::string name() const override { return "gives-nothing"; }
    WorkPtr run(ProcessGroup&, const GradBucket&) override { return nullptr; }
  };
  struct IntHook final : CommHook {
    std::string name() const override { return "throws-int"; }
    WorkPtr run(ProcessGroup&, const GradBucket&) override { throw 42; }
  };
  auto world = InProcessWorld::create(1);
  const std::vector<std::pair<std::shared_ptr<CommHook>, std::string>> cases = {
      {std::make_shared<NullHook>(), "returned no Work"}, {std::make_shared<IntHook>(), "not a std::exception"}};
  for (const auto& [hook, words] : cases) {
    SCOPED_TRACE(hook->name());
    std::vector<std::vector<float>> storage(2, std::vector<float>(8, 1.0f));
    Reducer reducer(world->group(0), floatParameters(storage), {.caps = {}, .hook = hook});
    reducer.markReady(1);
    reducer.markReady(0);
    try {
      reducer.finish();
      FAIL() << "finish() hid the hook's failure";
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::InvalidUsage);
      const std::string text = error.what();
      EXPECT_NE(text.find(words), std::string::npos) << text;
      EXPECT_NE(text.find(hook->name()), std::string::npos) << text;
      EXPECT_NE(text.find("gradient bucket 0"), std::string::npos) << text;
    }
    EXPECT_THROW(reducer.markReady(0), Error);
  }
}

// A ProcessGroup is the program's to implement: one whose collective gives
// no Work is refused by name at construction, not dereferenced.
TEST(Reducer, AProcessGroupThatGivesNoWorkIsRefused) {
  struct NoWorkGroup final : ProcessGroup {
    int rank() const override { return 0; }
    int size() const override { return 2; }
    WorkPtr allReduce(void*, std::size_t, DataType, RedOp) override { return nullptr; }
    WorkPtr broadcast(void*, std::size_t, DataType, int) override { return nullptr; }
    WorkPtr allGather(const void*, void*, std::size_t, DataType) override { return nullptr; }
  };
  std::vector<std::vector<float>> storage(1, std::vector<float>(4));
  try {
    Reducer reducer(std::make_shared<NoWorkGroup>(), floatParameters(storage));
    FAIL() << "a group that gives no Work was used";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(error.what()).find("allGather returned no Work"), std::string::npos) << error.what();
  }
}

TEST(Reducer, FailedCollectiveSurfacesFromFinishAndStopsTheReducer) {
  auto world = InProcessWorld::create(2);
  onEachRank(2, [&](int rank) {
    std::vector<std::vector<float>> storage(4, std::vector<float>(64));
    Reducer reducer(world->group(rank), floatParameters(storage),
                    {.caps = {.firstBucketBytes = 256, .bucketBytes = 256}});
    ASSERT_EQ(reducer.buckets().size(), 4u);
    world->failFrom(world->issued(rank).size() + 2);  // the third bucket fails
    for (std::size_t i = 4; i-- > 0;) reducer.markReady(i);
    try {
      reducer.finish();
      FAIL() << "finish() hid a failed all-reduce";
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::Remote);
      EXPECT_NE(std::string(error.what()).find("gradient bucket 2"), std::string::npos)
          << error.what();
    }
    EXPECT_THROW(reducer.markReady(0), Error);
    EXPECT_THROW(reducer.finish(), Error);
  });
}

}  // namespace
}  // namespace hora::ddp::testing

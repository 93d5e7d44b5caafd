// The planner's decisions: which algorithm an op takes and with which sizes.
// Every rank must decide alike, so each decision here depends only on what
// ranks share.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/planner.h"
#include "base/error.h"
#include "transport/shm/shm_layout.h"

namespace hora::core {
namespace {

Op allReduce(std::size_t count, DataType type = DataType::Float32) {
  static std::vector<char> send(1), recv(1);
  return makeOp(OpKind::AllReduce, send.data(), recv.data(), count, type);
}

Tuning defaults() { return Tuning{}; }

TEST(Planner, SmallAllReducesGoDirectLargerOnesTakeTheRing) {
  const Planner planner(defaults(), 2 << 20);
  const CommShape shape{0, 4, false, false};
  EXPECT_EQ(planner.plan(allReduce(4096), shape).algorithm, Algorithm::Direct);  // 16 KiB
  EXPECT_EQ(planner.plan(allReduce(4097), shape).algorithm, Algorithm::Ring);
  EXPECT_EQ(planner.plan(allReduce(0), shape).algorithm, Algorithm::Direct);
}

TEST(Planner, OnlyAllReducesGoDirectAndOnlyUpToSixteenRanks) {
  const Planner planner(defaults(), 2 << 20);
  static char buffer[64];
  Op gather = makeOp(OpKind::AllGather, buffer, buffer, 4, DataType::Float32);
  EXPECT_EQ(planner.plan(gather, {0, 4, false, false}).algorithm, Algorithm::Ring);
  EXPECT_EQ(planner.plan(allReduce(4), {0, 16, false, false}).algorithm, Algorithm::Direct);
  EXPECT_EQ(planner.plan(allReduce(4), {0, 17, false, false}).algorithm, Algorithm::Ring);
  EXPECT_EQ(planner.plan(allReduce(4), {0, 1, false, false}).algorithm, Algorithm::Ring);
}

TEST(Planner, WindowsOnlyWhereUsableAndLargeEnoughWithTheRingAsFallback) {
  const Planner planner(defaults(), 2 << 20);
  const std::size_t large = (64 << 10) / 4;
  EXPECT_EQ(planner.plan(allReduce(large), {0, 2, false, false}).algorithm, Algorithm::Ring);
  const Plan plan = planner.plan(allReduce(large), {0, 2, false, true});
  EXPECT_EQ(plan.algorithm, Algorithm::Windows);
  EXPECT_EQ(plan.fallback, Algorithm::Ring);
  EXPECT_EQ(planner.plan(allReduce(large - 1), {0, 2, false, true}).algorithm, Algorithm::Ring);
}

TEST(Planner, StepsAreChunksOfTheTuningInElementsAlignedToCacheLines) {
  Tuning tuning;
  tuning.chunkBytes = 1 << 20;
  const Planner planner(tuning, 2 << 20);
  const Plan reduce = planner.plan(allReduce(1 << 24, DataType::Float64), {0, 2, false, false});
  EXPECT_EQ(reduce.chunkElems, (1u << 20) / 8);
  EXPECT_EQ(reduce.alignElems, 8u);
  static char buffer[64];
  Op broadcast = makeOp(OpKind::Broadcast, buffer, buffer, 1 << 24, DataType::Int8);
  broadcast.root = 0;
  EXPECT_EQ(planner.plan(broadcast, {0, 2, false, false}).chunkElems, 2u << 20);
}

TEST(Planner, SingleCopyAllGathersTakeWholeBlocksWhenEveryRankReadsItsNeighbour) {
  const Planner planner(defaults(), 2 << 20);
  static char buffer[64];
  const Op gather = makeOp(OpKind::AllGather, buffer, buffer, 1 << 18, DataType::Float32);  // 1 MiB each
  const Plan ring = planner.plan(gather, {0, 2, true, false});
  EXPECT_TRUE(ring.singleCopy);
  EXPECT_EQ(ring.chunkElems * 4, 2u << 20);  // the whole 2-rank output
  EXPECT_EQ(planner.plan(gather, {0, 2, false, false}).chunkElems * 4, 2u << 20);
  const Op big = makeOp(OpKind::AllGather, buffer, buffer, 1 << 24, DataType::Float32);
  EXPECT_FALSE(planner.plan(big, {0, 2, true, false}).singleCopy);  // 128 MiB output
}

TEST(Planner, StreamingStoresForLargeOutputsExceptReductionsInPlace) {
  const Planner planner(defaults(), 2 << 20);
  // Addresses only: the planner compares buffers, it never touches them.
  auto* a = reinterpret_cast<float*>(std::uintptr_t{1} << 32);
  auto* b = reinterpret_cast<float*>(std::uintptr_t{2} << 32);
  Op outOfPlace = makeOp(OpKind::AllReduce, a, b, 8 << 20, DataType::Float32);
  EXPECT_TRUE(planner.plan(outOfPlace, {0, 2, false, false}).streamingStores);
  Op inPlace = makeOp(OpKind::AllReduce, a, a, 8 << 20, DataType::Float32);
  EXPECT_FALSE(planner.plan(inPlace, {0, 2, false, false}).streamingStores);
  Op small = makeOp(OpKind::AllReduce, a, b, 1 << 10, DataType::Float32);
  EXPECT_FALSE(planner.plan(small, {0, 2, false, false}).streamingStores);
}

// When ranks share CPUs the communicator lowers the reductions' threshold
// alone (tuning.h): a broadcast or all-gather of the same size keeps
// ordinary stores, since it forwards what it just wrote.
TEST(Planner, ReductionsHaveTheirOwnStreamingThreshold) {
  Tuning tuning = defaults();
  tuning.reductionStreamingMinBytes = Tuning::kSharedCoresStreamingMinBytes;
  const Planner planner(tuning, 2 << 20);
  auto* a = reinterpret_cast<float*>(std::uintptr_t{1} << 32);
  auto* b = reinterpret_cast<float*>(std::uintptr_t{2} << 32);
  const std::size_t count = (1 << 20) / 4;  // 1 MiB
  for (OpKind kind : {OpKind::AllReduce, OpKind::Reduce})
    EXPECT_TRUE(planner.plan(makeOp(kind, a, b, count, DataType::Float32), {0, 8, false, false}).streamingStores)
        << opKindName(kind);
  EXPECT_FALSE(planner.plan(makeOp(OpKind::AllReduce, a, a, count, DataType::Float32), {0, 8, false, false})
                   .streamingStores)
      << "in place: the output was just read, it is in cache";
  EXPECT_FALSE(planner.plan(makeOp(OpKind::Broadcast, a, b, count, DataType::Float32), {0, 8, false, false})
                   .streamingStores);
  EXPECT_FALSE(planner.plan(makeOp(OpKind::AllReduce, a, b, 1 << 10, DataType::Float32), {0, 8, false, false})
                   .streamingStores);
}

TEST(Planner, TheStreamingThresholdFromTheEnvironmentIsBoth) {
  EXPECT_FALSE(Tuning::fromEnvironment().streamingMinSet);
  ::setenv("HORA_STREAMING_MIN", "1M", 1);
  const Tuning tuning = Tuning::fromEnvironment();
  ::unsetenv("HORA_STREAMING_MIN");
  EXPECT_TRUE(tuning.streamingMinSet);
  EXPECT_EQ(tuning.streamingMinBytes, std::size_t{1} << 20);
  EXPECT_EQ(tuning.reductionStreamingMinBytes, std::size_t{1} << 20);
}

// FIFOs are written around the cache from the larger buffer's size up
// (an all-gather's output counts), in place too; not where ranks share
// CPUs, unless the environment asks.
TEST(Planner, LargeCollectivesWriteFifosAroundTheCache) {
  const Planner planner(defaults(), 2 << 20);
  auto* a = reinterpret_cast<float*>(std::uintptr_t{1} << 32);
  auto* b = reinterpret_cast<float*>(std::uintptr_t{2} << 32);
  const std::size_t threshold = defaults().fifoStreamingMinBytes / 4;  // in floats
  EXPECT_TRUE(planner.plan(makeOp(OpKind::AllReduce, a, a, threshold, DataType::Float32), {0, 2, false, false})
                  .streamingFifo);
  EXPECT_FALSE(planner.plan(makeOp(OpKind::AllReduce, a, b, threshold - 1, DataType::Float32), {0, 2, false, false})
                   .streamingFifo);
  // An all-gather's output is n times its input.
  EXPECT_TRUE(planner.plan(makeOp(OpKind::AllGather, a, b, threshold / 2, DataType::Float32), {0, 2, false, false})
                  .streamingFifo);
  EXPECT_FALSE(planner.plan(makeOp(OpKind::AllGather, a, b, threshold / 4, DataType::Float32), {0, 2, false, false})
                   .streamingFifo);

  Tuning shared = defaults();
  shared.fitToSharedCpus(true);
  EXPECT_FALSE(Planner(shared, 2 << 20)
                   .plan(makeOp(OpKind::AllReduce, a, b, 1 << 26, DataType::Float32), {0, 8, false, false})
                   .streamingFifo);
  ::setenv("HORA_FIFO_STREAMING_MIN", "1M", 1);
  Tuning asked = Tuning::fromEnvironment();
  ::unsetenv("HORA_FIFO_STREAMING_MIN");
  asked.fitToSharedCpus(true);
  EXPECT_EQ(asked.fifoStreamingMinBytes, std::size_t{1} << 20);
}

TEST(Planner, SmallMessagesTakeLLLargerOnesSimple) {
  Tuning tuning;
  tuning.llMaxBytes = 64;
  const Planner planner(tuning, 2 << 20);
  EXPECT_EQ(planner.plan(allReduce(16), {0, 2, false, false}).protocol, Protocol::LL);  // 64 B
  EXPECT_EQ(planner.plan(allReduce(17), {0, 2, false, false}).protocol, Protocol::Simple);
  EXPECT_EQ(planner.protocolFor(8), Protocol::LL);
  // The host default: never LL.
  EXPECT_EQ(Planner(defaults(), 2 << 20).plan(allReduce(2), {0, 2, false, false}).protocol,
            Protocol::Simple);
}

// A ring step over LL fits in half of the LL FIFO: with HORA_LL_MAX_BYTES
// above that, steps are cut to it (an all-gather of 32 KiB blocks over LL
// left three ranks waiting for room for ever before), for reductions and
// data movement alike; Simple steps keep the tuning's size.
TEST(Planner, StepsOverLLFitInHalfTheLLFifo) {
  Tuning tuning;
  tuning.llMaxBytes = 1 << 20;
  tuning.chunkBytes = 1 << 20;
  const Planner planner(tuning, 2 << 20);
  const Plan reduce = planner.plan(allReduce(1 << 18), {0, 3, false, false});  // 1 MiB: LL
  EXPECT_EQ(reduce.protocol, Protocol::LL);
  EXPECT_EQ(reduce.chunkElems * 4, transport::kShmLLStepMaxBytes);
  static char buffer[64];
  const Op gather = makeOp(OpKind::AllGather, buffer, buffer, 8192, DataType::Float32);  // 32 KiB blocks
  EXPECT_EQ(planner.plan(gather, {0, 3, false, false}).chunkElems * 4, transport::kShmLLStepMaxBytes);
  EXPECT_LE(transport::kShmLLStepMaxBytes * 2,
            transport::kShmLLSlotBytes * transport::kShmLLSlotCount / 2)  // half the ring's lines hold data
      << "a step must fit in half the LL FIFO";
  EXPECT_EQ(planner.plan(allReduce((1 << 18) + 1), {0, 3, false, false}).chunkElems * 4, 1u << 20);  // Simple
}

TEST(Planner, SendsAndReceivesArePointToPoint) {
  const Planner planner(defaults(), 2 << 20);
  static char buffer[8];
  Op send = makeOp(OpKind::Send, buffer, nullptr, 8, DataType::Int8);
  EXPECT_EQ(planner.plan(send, {0, 2, false, false}).algorithm, Algorithm::PointToPoint);
}

TEST(Tuning, ReadsEveryKnobFromTheEnvironmentAndRefusesBadValues) {
  ::setenv("HORA_CHUNK_SIZE", "64K", 1);
  ::setenv("HORA_DIRECT_MAX_BYTES", "0", 1);
  ::setenv("HORA_SPIN_US", "7", 1);
  ::setenv("HORA_LL_MAX_BYTES", "1K", 1);
  const Tuning tuning = Tuning::fromEnvironment();
  EXPECT_EQ(tuning.llMaxBytes, 1024u);
  EXPECT_EQ(tuning.chunkBytes, 64u << 10);
  EXPECT_EQ(tuning.directMaxBytes, 0u);
  EXPECT_EQ(tuning.spin.count(), 7);
  ::setenv("HORA_CHUNK_SIZE", "32", 1);
  EXPECT_THROW(Tuning::fromEnvironment(), Error);
  ::setenv("HORA_CHUNK_SIZE", "lots", 1);
  EXPECT_THROW(Tuning::fromEnvironment(), Error);
  ::unsetenv("HORA_CHUNK_SIZE");
  ::unsetenv("HORA_DIRECT_MAX_BYTES");
  ::unsetenv("HORA_SPIN_US");
  ::unsetenv("HORA_LL_MAX_BYTES");
}

}  // namespace
}  // namespace hora::core

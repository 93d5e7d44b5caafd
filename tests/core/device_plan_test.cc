// The CUDA executor's launch choices (device/device_plan.h), which every
// build tests: they must be the same on every rank and keep every rank's
// blocks resident together.
#include "device/device_plan.h"

#include <gtest/gtest.h>

#include <vector>

#include "hora/error.h"

namespace hora::device {
namespace {

core::Op opOf(core::OpKind kind, std::size_t count, DataType type) {
  static char buffer[1];
  core::Op op = core::makeOp(kind, buffer, buffer, count, type);
  op.reduce.kind = kernels::ReduceKind::Sum;
  return op;
}

DeviceShape shape(int nranks, int minChannels, int maxChannels) {
  DeviceShape s;
  s.nranks = nranks;
  s.minChannels = minChannels;
  s.maxChannels = maxChannels;
  s.slotBytes = 128 << 10;
  return s;
}

TEST(DevicePlan, ChannelsGrowWithTheBytesWithinTheLimits) {
  const DeviceShape s = shape(4, 1, 16);
  EXPECT_EQ(planDeviceLaunch(opOf(core::OpKind::AllReduce, 1, DataType::Float32), s).channels, 1);
  EXPECT_EQ(planDeviceLaunch(opOf(core::OpKind::AllReduce, kBytesPerChannel / 4 * 3, DataType::Float32), s).channels, 3);
  EXPECT_EQ(planDeviceLaunch(opOf(core::OpKind::AllReduce, 64 << 20, DataType::Float32), s).channels, 16);
  // NCCL_MIN_NCHANNELS raises the floor.
  EXPECT_EQ(planDeviceLaunch(opOf(core::OpKind::AllReduce, 1, DataType::Float32), shape(4, 4, 16)).channels, 4);
  // Reduce-scatter and all-gather count every rank's block.
  EXPECT_EQ(planDeviceLaunch(opOf(core::OpKind::AllGather, kBytesPerChannel / 4, DataType::Float32), s).channels, 4);
  EXPECT_EQ(planDeviceLaunch(opOf(core::OpKind::ReduceScatter, kBytesPerChannel / 4, DataType::Float32), s).channels,
            4);
}

TEST(DevicePlan, StepsAreWholeSlotsAlignedTo64Bytes) {
  const DeviceShape s = shape(3, 1, 8);
  for (DataType type : {DataType::Int8, DataType::Float16, DataType::Float32, DataType::Float64}) {
    const DeviceLaunchPlan plan = planDeviceLaunch(opOf(core::OpKind::AllReduce, 1000, type), s);
    const std::size_t size = dataTypeSize(type);
    EXPECT_EQ(plan.align * size, 64u);
    EXPECT_EQ(plan.chunk * size, 2 * s.slotBytes);
    EXPECT_EQ(plan.count, 1000u);
    EXPECT_EQ(plan.spec.type, type);
  }
}

TEST(DevicePlan, SmallOperationsUseLLInPiecesOfHalfAnLLSlot) {
  DeviceShape s = shape(4, 1, 16);
  s.llSlotBytes = 16 << 10;
  s.llMaxBytes = 64 << 10;
  const auto plan = [&](core::OpKind kind, std::size_t count, DataType type) {
    return planDeviceLaunch(opOf(kind, count, type), s);
  };
  const DeviceLaunchPlan small = plan(core::OpKind::AllReduce, 2, DataType::Float32);
  EXPECT_EQ(small.protocol, DeviceProtocol::LL);
  EXPECT_EQ(small.channels, 1);
  EXPECT_EQ(small.chunk * 4, llPieceBytes(s.llSlotBytes));
  // Up to the limit, a channel per kLLBytesPerChannel; one element more is Simple.
  const DeviceLaunchPlan atLimit = plan(core::OpKind::AllReduce, (64 << 10) / 4, DataType::Float32);
  EXPECT_EQ(atLimit.protocol, DeviceProtocol::LL);
  EXPECT_EQ(atLimit.channels, static_cast<int>((64 << 10) / kLLBytesPerChannel));
  const DeviceLaunchPlan over = plan(core::OpKind::AllReduce, (64 << 10) / 4 + 1, DataType::Float32);
  EXPECT_EQ(over.protocol, DeviceProtocol::Simple);
  EXPECT_EQ(over.chunk * 4, 2 * s.slotBytes);
  // All-gather and reduce-scatter count every rank's block (4 ranks).
  EXPECT_EQ(plan(core::OpKind::AllGather, 16 << 10, DataType::Int8).protocol, DeviceProtocol::LL);
  EXPECT_EQ(plan(core::OpKind::AllGather, (16 << 10) + 1, DataType::Int8).protocol, DeviceProtocol::Simple);
  EXPECT_EQ(plan(core::OpKind::ReduceScatter, (16 << 10) + 1, DataType::Int8).protocol, DeviceProtocol::Simple);
  // Steps still start on 64-byte boundaries.
  EXPECT_EQ(plan(core::OpKind::Broadcast, 100, DataType::Float64).align, 64u);
  // No LL where the ranks agreed on none.
  s.llMaxBytes = 0;
  EXPECT_EQ(plan(core::OpKind::AllReduce, 2, DataType::Float32).protocol, DeviceProtocol::Simple);
}

TEST(DevicePlan, NcclProtoRulesLLInOrOutAsNcclReadsIt) {
  EXPECT_EQ(deviceLLMaxBytes(std::nullopt, 100), 100u);
  EXPECT_EQ(deviceLLMaxBytes("LL", 100), 100u);
  EXPECT_EQ(deviceLLMaxBytes("ll,simple", 100), 100u);
  EXPECT_EQ(deviceLLMaxBytes(" LL , Simple", 100), 100u);
  EXPECT_EQ(deviceLLMaxBytes("Simple", 100), 0u);
  EXPECT_EQ(deviceLLMaxBytes("LL128,Simple", 100), 0u);
  EXPECT_EQ(deviceLLMaxBytes("^LL", 100), 0u);
  EXPECT_EQ(deviceLLMaxBytes("^Simple,LL", 100), 0u);
  EXPECT_EQ(deviceLLMaxBytes("^LL128", 100), 100u);
  EXPECT_EQ(deviceLLMaxBytes("^Simple", 100), 100u);
}

TEST(DevicePlan, CopyingCollectivesMoveBytes) {
  const DeviceShape s = shape(2, 1, 8);
  for (core::OpKind kind : {core::OpKind::AllGather, core::OpKind::Broadcast}) {
    const DeviceLaunchPlan plan = planDeviceLaunch(opOf(kind, 1001, DataType::Float64), s);
    EXPECT_EQ(plan.spec.type, DataType::Uint8);
    EXPECT_EQ(plan.count, 8008u);
    EXPECT_EQ(plan.align, 64u);
  }
  EXPECT_EQ(planDeviceLaunch(opOf(core::OpKind::AllGather, 1, DataType::Int8), s).collective, algorithms::RingCollective::AllGather);
  EXPECT_EQ(planDeviceLaunch(opOf(core::OpKind::Broadcast, 1, DataType::Int8), s).collective, algorithms::RingCollective::Broadcast);
  EXPECT_EQ(planDeviceLaunch(opOf(core::OpKind::Reduce, 1, DataType::Int8), s).collective, algorithms::RingCollective::Reduce);
}

// The ring kernels other than the copying one are compiled without the
// copying schedules, so every copying plan must name that kernel.
TEST(DevicePlan, OnlyTheCopyingKernelRunsTheCopyingCollectives) {
  const DeviceShape s = shape(2, 1, 8);
  for (core::OpKind kind : {core::OpKind::AllGather, core::OpKind::Broadcast})
    for (DataType type : {DataType::Int8, DataType::Uint8, DataType::Float16, DataType::Float64, DataType::Float8e5m2}) {
      const DeviceLaunchPlan plan = planDeviceLaunch(opOf(kind, 100, type), s);
      EXPECT_TRUE(ringKernelRuns(plan.spec, plan.collective)) << core::opKindName(kind);
    }
  using algorithms::RingCollective;
  const kernels::ReduceSpec floatSum{DataType::Float32, kernels::ReduceKind::Sum, 0};
  const kernels::ReduceSpec byteMax{DataType::Uint8, kernels::ReduceKind::Max, 0};
  EXPECT_FALSE(ringKernelRuns(floatSum, RingCollective::AllGather));
  EXPECT_FALSE(ringKernelRuns(byteMax, RingCollective::Broadcast));
  EXPECT_TRUE(ringKernelRuns(kCopyingSpec, RingCollective::Broadcast));
  for (RingCollective reducing : {RingCollective::AllReduce, RingCollective::ReduceScatter, RingCollective::Reduce}) {
    EXPECT_TRUE(ringKernelRuns(floatSum, reducing));
    EXPECT_TRUE(ringKernelRuns(byteMax, reducing));
  }
}

TEST(DevicePlan, OneRankCopiesUnlessItPreMultiplies) {
  for (core::OpKind kind : {core::OpKind::AllReduce, core::OpKind::ReduceScatter, core::OpKind::AllGather,
                            core::OpKind::Broadcast, core::OpKind::Reduce}) {
    EXPECT_TRUE(planDeviceLaunch(opOf(kind, 1000, DataType::Float32), shape(1, 1, 32)).copyOnly);
    EXPECT_FALSE(planDeviceLaunch(opOf(kind, 1000, DataType::Float32), shape(2, 1, 32)).copyOnly);
  }
  core::Op average = opOf(core::OpKind::AllReduce, 1000, DataType::Int32);
  average.reduce.kind = kernels::ReduceKind::SumPostDiv;
  average.reduce.scalarBits = 1;
  EXPECT_TRUE(planDeviceLaunch(average, shape(1, 1, 32)).copyOnly);
  core::Op scaled = opOf(core::OpKind::AllReduce, 1000, DataType::Float32);
  scaled.reduce.kind = kernels::ReduceKind::PreMulSum;
  EXPECT_FALSE(planDeviceLaunch(scaled, shape(1, 1, 32)).copyOnly);
}

core::Op peerOp(core::OpKind kind, const void* send, void* recv, std::size_t bytes, int peerOrRoot) {
  core::Op op = core::makeOp(kind, send, recv, bytes, DataType::Uint8);
  (kind == core::OpKind::Send || kind == core::OpKind::Recv ? op.peer : op.root) = peerOrRoot;
  return op;
}

// A group's collectives share a ring kernel launch while the kernel and
// the stream stay the same, up to the limit; each launch is cut where
// either changes.
TEST(DevicePlan, AGroupSharesALaunchPerKernelAndStream) {
  using kernels::ReduceKind;
  using kernels::ReduceSpec;
  const ReduceSpec sumF{DataType::Float32, ReduceKind::Sum, 0};
  const ReduceSpec maxF{DataType::Float32, ReduceKind::Max, 0};
  const ReduceSpec sumI{DataType::Int32, ReduceKind::Sum, 0};
  const ReduceSpec bytes{DataType::Uint8, ReduceKind::Sum, 0};  // every all-gather and broadcast
  int a = 0, b = 0;
  const void* s1 = &a;
  const void* s2 = &b;
  // Every launch's size, cutting the group launch after launch.
  auto sizes = [](std::vector<ReduceSpec> specs, std::vector<const void*> streams, int max) {
    std::vector<DeviceLaunchPlan> plans(specs.size());
    for (std::size_t i = 0; i < specs.size(); ++i) plans[i].spec = specs[i];
    std::vector<int> cut;
    for (std::size_t first = 0; first < plans.size(); first += static_cast<std::size_t>(cut.back()))
      cut.push_back(static_cast<int>(ringLaunchSize(plans, streams, first, max)));
    return cut;
  };
  EXPECT_EQ(sizes({}, {}, 8), std::vector<int>{});
  EXPECT_EQ(sizes({sumF}, {s1}, 8), std::vector<int>{1});
  EXPECT_EQ(sizes({sumF, sumF, sumF}, {s1, s1, s1}, 8), std::vector<int>{3});
  // Another reduction, another type, another stream: a new launch.
  EXPECT_EQ(sizes({sumF, sumF, maxF, maxF, sumI, bytes, bytes}, {s1, s1, s1, s1, s1, s1, s1}, 8),
            (std::vector<int>{2, 2, 1, 2}));
  EXPECT_EQ(sizes({sumF, sumF, sumF}, {s1, s2, s2}, 8), (std::vector<int>{1, 2}));
  // Runs only: a kernel seen before but not just before starts a launch.
  EXPECT_EQ(sizes({sumF, maxF, sumF}, {s1, s1, s1}, 8), (std::vector<int>{1, 1, 1}));
  // The limit, and 1: a launch per collective.
  EXPECT_EQ(sizes(std::vector<ReduceSpec>(19, sumF), std::vector<const void*>(19, s1), 8),
            (std::vector<int>{8, 8, 3}));
  EXPECT_EQ(sizes({sumF, sumF}, {s1, s1}, 1), (std::vector<int>{1, 1}));
}

// Pre-multiplied sums share a launch only with the launch's scalar, or
// with a scalar of their own in memory, which the kernel reads per
// collective.
TEST(DevicePlan, APreMultipliedSumSharesALaunchOnlyWithItsScalar) {
  using kernels::ReduceKind;
  using kernels::ReduceSpec;
  float scalar = 2.0f;
  const ReduceSpec twice{DataType::Float32, ReduceKind::PreMulSum, 0x40000000};
  const ReduceSpec thrice{DataType::Float32, ReduceKind::PreMulSum, 0x40400000};
  const ReduceSpec inMemory{DataType::Float32, ReduceKind::PreMulSum, 0, &scalar};
  EXPECT_TRUE(sameRingKernel(twice, twice));
  EXPECT_FALSE(sameRingKernel(twice, thrice));
  EXPECT_TRUE(sameRingKernel(twice, inMemory));
  EXPECT_TRUE(sameRingKernel(inMemory, inMemory));
  // The launch's kernel takes its first collective's by-value scalar.
  EXPECT_FALSE(sameRingKernel(inMemory, twice));
  EXPECT_FALSE(sameRingKernel(ReduceSpec{DataType::Float32, ReduceKind::SumPostDiv, 2},
                              ReduceSpec{DataType::Float32, ReduceKind::SumPostDiv, 3}));
  EXPECT_FALSE(sameRingKernel(ReduceSpec{DataType::Float32, ReduceKind::Sum, 0},
                              ReduceSpec{DataType::Float64, ReduceKind::Sum, 0}));
}

TEST(DevicePeerPlan, AllToAllIsASendAndAReceivePerPeerAndACopyToItself) {
  static char send[400], recv[400];
  const core::Op op = peerOp(core::OpKind::AllToAll, send, recv, 100, -1);
  const DevicePeerPlan plan = planPeerLaunch(std::span(&op, 1), 1, 4, 32);
  ASSERT_EQ(plan.transfers.size(), 6u);
  for (const DevicePeerOp& t : plan.transfers) {
    EXPECT_NE(t.peer, 1);
    EXPECT_EQ(t.bytes, 100u);
    if (t.sending != 0) EXPECT_EQ(t.in, send + 100 * t.peer);
    else EXPECT_EQ(t.out, recv + 100 * t.peer);
  }
  ASSERT_EQ(plan.copies.size(), 1u);
  EXPECT_EQ(plan.copies[0].from, send + 100);
  EXPECT_EQ(plan.copies[0].to, recv + 100);
  EXPECT_EQ(plan.copies[0].bytes, 100u);
}

TEST(DevicePeerPlan, GatherAndScatterMoveBlocksThroughTheRoot) {
  static char send[300], recv[300];
  const core::Op gather = peerOp(core::OpKind::Gather, send, recv, 100, 2);
  const DevicePeerPlan atRoot = planPeerLaunch(std::span(&gather, 1), 2, 3, 32);
  EXPECT_EQ(atRoot.transfers.size(), 2u);  // a receive from each other rank
  for (const DevicePeerOp& t : atRoot.transfers) EXPECT_EQ(t.sending, 0);
  ASSERT_EQ(atRoot.copies.size(), 1u);
  EXPECT_EQ(atRoot.copies[0].to, recv + 200);
  const DevicePeerPlan offRoot = planPeerLaunch(std::span(&gather, 1), 0, 3, 32);
  ASSERT_EQ(offRoot.transfers.size(), 1u);
  EXPECT_EQ(offRoot.transfers[0].peer, 2);
  EXPECT_EQ(offRoot.transfers[0].sending, 1);
  EXPECT_TRUE(offRoot.copies.empty());

  const core::Op scatter = peerOp(core::OpKind::Scatter, send, recv, 100, 0);
  const DevicePeerPlan fromRoot = planPeerLaunch(std::span(&scatter, 1), 0, 3, 32);
  EXPECT_EQ(fromRoot.transfers.size(), 2u);
  for (const DevicePeerOp& t : fromRoot.transfers) EXPECT_EQ(t.in, send + 100 * t.peer);
  const DevicePeerPlan toOther = planPeerLaunch(std::span(&scatter, 1), 1, 3, 32);
  ASSERT_EQ(toOther.transfers.size(), 1u);
  EXPECT_EQ(toOther.transfers[0].peer, 0);
  EXPECT_EQ(toOther.transfers[0].out, recv);
}

TEST(DevicePeerPlan, CollectivesInTheGroupAreLeftOutAndEmptyTransfersSkipped) {
  static char buffer[64];
  const core::Op ops[] = {peerOp(core::OpKind::Send, buffer, nullptr, 64, 0),
                          peerOp(core::OpKind::Recv, nullptr, buffer, 0, 0),
                          opOf(core::OpKind::AllReduce, 16, DataType::Float32)};
  const DevicePeerPlan plan = planPeerLaunch(ops, 1, 2, 32);
  ASSERT_EQ(plan.transfers.size(), 1u);
  EXPECT_EQ(plan.transfers[0].sending, 1);
}

TEST(DevicePeerPlan, WhatTheKernelCannotRunIsRefused) {
  static char buffer[64];
  auto refusal = [](std::span<const core::Op> ops, int maxBlocks) -> std::string {
    try {
      planPeerLaunch(ops, 0, 4, maxBlocks);
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::InvalidUsage);
      return error.what();
    }
    return "";
  };
  const core::Op twice[] = {peerOp(core::OpKind::Send, buffer, nullptr, 8, 1),
                            peerOp(core::OpKind::Send, buffer, nullptr, 8, 1)};
  EXPECT_NE(refusal(twice, 32).find("two sends to rank 1"), std::string::npos);
  const core::Op lonely[] = {peerOp(core::OpKind::Send, buffer, nullptr, 8, 0)};
  EXPECT_NE(refusal(lonely, 32).find("send(s) to itself"), std::string::npos);
  const core::Op unequal[] = {peerOp(core::OpKind::Send, buffer, nullptr, 8, 0),
                              peerOp(core::OpKind::Recv, nullptr, buffer, 16, 0)};
  EXPECT_NE(refusal(unequal, 32).find("meets a receive of 16 bytes"), std::string::npos);
  const core::Op all = peerOp(core::OpKind::AllToAll, buffer, buffer, 8, -1);
  EXPECT_NE(refusal(std::span(&all, 1), 5).find("at most 5"), std::string::npos);  // 6 transfers
  const core::Op stranger[] = {peerOp(core::OpKind::Send, buffer, nullptr, 8, 4)};
  EXPECT_THROW(planPeerLaunch(stranger, 0, 4, 32), Error);
}

TEST(DevicePlan, KindsWithoutADeviceScheduleAreRefusedByName) {
  const DeviceShape s = shape(2, 1, 8);
  for (core::OpKind kind : {core::OpKind::AllToAll, core::OpKind::Gather, core::OpKind::Scatter, core::OpKind::Send,
                            core::OpKind::Recv}) {
    try {
      planDeviceLaunch(opOf(kind, 10, DataType::Float32), s);
      ADD_FAILURE() << core::opKindName(kind) << " was planned";
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::InvalidUsage);
      EXPECT_NE(std::string(error.what()).find(core::opKindName(kind)), std::string::npos) << error.what();
    }
  }
}

TEST(DevicePlan, RanksOnOneGpuShareItsResidentBlocks) {
  EXPECT_EQ(channelsPerRank(132, 1, 16), 16);   // capped by NCCL_MAX_NCHANNELS
  EXPECT_EQ(channelsPerRank(132, 8, 32), 16);   // 132 / 8
  EXPECT_EQ(channelsPerRank(264, 1, 64), DeviceRing::kMaxChannels);
  EXPECT_EQ(channelsPerRank(132, 100, 16), 1);
  EXPECT_EQ(channelsPerRank(132, 133, 16), 0);  // not even one block each: refused
  EXPECT_EQ(channelsPerRank(132, 2, 0), 1);     // at least one
}

}  // namespace
}  // namespace hora::device

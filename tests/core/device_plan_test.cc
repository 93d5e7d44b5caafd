// The CUDA executor's launch choices (device/device_plan.h), which every
// build tests: they must be the same on every rank and keep every rank's
// blocks resident together.
#include "device/device_plan.h"

#include <gtest/gtest.h>

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

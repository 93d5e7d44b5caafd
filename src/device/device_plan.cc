#include "device/device_plan.h"

#include <algorithm>

#include "base/error.h"

namespace hora::device {

DeviceLaunchPlan planDeviceLaunch(const core::Op& op, const DeviceShape& shape) {
  DeviceLaunchPlan plan;
  plan.spec = op.reduce;
  plan.count = op.count;
  const auto collective = core::ringCollectiveOf(op.kind);
  if (!collective)
    fail(ErrorKind::InvalidUsage, core::opKindName(op.kind),
         " on device buffers is not supported yet (the CUDA executor runs all-reduce, reduce-scatter, "
         "all-gather, broadcast and reduce)");
  plan.collective = *collective;
  plan.copyOnly = shape.nranks == 1 && op.reduce.kind != kernels::ReduceKind::PreMulSum;
  const bool copies =
      *collective == algorithms::RingCollective::AllGather || *collective == algorithms::RingCollective::Broadcast;
  if (copies) {
    // Moving bytes does not depend on the element type: one kernel serves all.
    plan.spec = kernels::ReduceSpec{DataType::Uint8, kernels::ReduceKind::Sum, 0};
    plan.count = op.bytes;
  }
  const std::size_t elementBytes = dataTypeSize(plan.spec.type);
  // Ring steps start on 64-byte boundaries, so that every piece of a buffer
  // that starts aligned moves in 16-byte packs.
  plan.align = std::max<std::size_t>(1, 64 / elementBytes);
  // Two slots per step: the next rank starts on the first while the second
  // is still being filled.
  plan.chunk = std::max<std::size_t>(plan.align, 2 * shape.slotBytes / elementBytes);
  const bool perRankBlocks = op.kind == core::OpKind::ReduceScatter || op.kind == core::OpKind::AllGather;
  const std::size_t total = op.bytes * (perRankBlocks ? static_cast<std::size_t>(shape.nranks) : 1);
  const std::size_t wanted = (total + kBytesPerChannel - 1) / kBytesPerChannel;
  plan.channels = static_cast<int>(std::clamp<std::size_t>(wanted, static_cast<std::size_t>(shape.minChannels),
                                                           static_cast<std::size_t>(shape.maxChannels)));
  return plan;
}

int channelsPerRank(int residentBlocks, int ranksOnGpu, int maxWanted) {
  const int fit = residentBlocks / std::max(1, ranksOnGpu);
  if (fit < 1) return 0;
  return std::max(1, std::min({fit, maxWanted, DeviceRing::kMaxChannels}));
}

}  // namespace hora::device

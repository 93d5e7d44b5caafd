#include "device/device_plan.h"

#include <algorithm>
#include <string_view>
#include <vector>

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
  if (algorithms::isCopying(*collective)) {
    plan.spec = kCopyingSpec;
    plan.count = op.bytes;
  }
  const std::size_t elementBytes = dataTypeSize(plan.spec.type);
  const bool perRankBlocks = op.kind == core::OpKind::ReduceScatter || op.kind == core::OpKind::AllGather;
  const std::size_t total = op.bytes * (perRankBlocks ? static_cast<std::size_t>(shape.nranks) : 1);
  const bool ll = shape.llMaxBytes != 0 && shape.llSlotBytes != 0 && total <= shape.llMaxBytes;
  plan.protocol = ll ? DeviceProtocol::LL : DeviceProtocol::Simple;
  // Ring steps start on 64-byte boundaries, so that every piece of a buffer
  // that starts aligned moves in 16-byte packs.
  plan.align = std::max<std::size_t>(1, 64 / elementBytes);
  // Simple: two slots per step, so that the next rank starts on the first
  // while the second is still being filled. LL: one piece per step, since
  // every line is handed over on its own anyway.
  const std::size_t stepBytes = ll ? llPieceBytes(shape.llSlotBytes) : 2 * shape.slotBytes;
  plan.chunk = std::max<std::size_t>(plan.align, stepBytes / elementBytes);
  const std::size_t perChannel = ll ? kLLBytesPerChannel : kBytesPerChannel;
  const std::size_t wanted = (total + perChannel - 1) / perChannel;
  plan.channels = static_cast<int>(std::clamp<std::size_t>(wanted, static_cast<std::size_t>(shape.minChannels),
                                                           static_cast<std::size_t>(shape.maxChannels)));
  return plan;
}

bool ringKernelRuns(const kernels::ReduceSpec& spec, algorithms::RingCollective collective) {
  return !algorithms::isCopying(collective) || (spec.type == kCopyingSpec.type && spec.kind == kCopyingSpec.kind);
}

bool sameRingKernel(const kernels::ReduceSpec& first, const kernels::ReduceSpec& next) {
  return first.type == next.type && first.kind == next.kind &&
         (next.scalarAt != nullptr || first.scalarBits == next.scalarBits);
}

std::size_t ringLaunchSize(std::span<const DeviceLaunchPlan> plans, std::span<const void* const> streams,
                           std::size_t first, int maxPerLaunch) {
  std::size_t end = first + 1;
  while (end < plans.size() && static_cast<int>(end - first) < maxPerLaunch && streams[end] == streams[first] &&
         sameRingKernel(plans[first].spec, plans[end].spec))
    ++end;
  return end - first;
}

bool isPeerKind(core::OpKind kind) {
  using core::OpKind;
  return kind == OpKind::Send || kind == OpKind::Recv || kind == OpKind::AllToAll || kind == OpKind::Gather ||
         kind == OpKind::Scatter;
}

namespace {

// Collects one rank's transfers, pairing its sends to itself with its
// receives from itself.
class PeerPlanner {
 public:
  PeerPlanner(int rank, int nranks)
      : rank_(rank), nranks_(nranks), sendsTo_(static_cast<std::size_t>(nranks)),
        receivesFrom_(static_cast<std::size_t>(nranks)) {}

  void send(const void* in, std::size_t bytes, int peer) { add(in, nullptr, bytes, peer, true); }
  void recv(void* out, std::size_t bytes, int peer) { add(nullptr, out, bytes, peer, false); }

  DevicePeerPlan finish(int maxBlocks) {
    if (selfSends_.size() != selfRecvs_.size())
      fail(ErrorKind::InvalidUsage, "rank ", rank_, ": ", selfSends_.size(), " send(s) to itself and ",
           selfRecvs_.size(), " receive(s) from itself in one group; each send to itself needs a receive");
    for (std::size_t i = 0; i < selfSends_.size(); ++i) {
      if (selfSends_[i].bytes != selfRecvs_[i].bytes)
        fail(ErrorKind::InvalidUsage, "rank ", rank_, ": a send of ", selfSends_[i].bytes,
             " bytes to itself meets a receive of ", selfRecvs_[i].bytes, " bytes");
      if (selfSends_[i].bytes != 0)
        plan_.copies.push_back({selfSends_[i].in, selfRecvs_[i].out, selfSends_[i].bytes});
    }
    const int limit = std::min(maxBlocks, DevicePeerWork::kMaxOps);
    if (static_cast<int>(plan_.transfers.size()) > limit)
      fail(ErrorKind::InvalidUsage, "rank ", rank_, ": one group gives this rank ", plan_.transfers.size(),
           " sends and receives on device buffers; the CUDA executor runs at most ", limit,
           " at once (one thread block each, all resident together)");
    return std::move(plan_);
  }

 private:
  void add(const void* in, void* out, std::size_t bytes, int peer, bool sending) {
    HORA_CHECK_ARG(peer >= 0 && peer < nranks_, "rank ", rank_, ": peer ", peer, " is not a rank (0 to ",
                   nranks_ - 1, ")");
    if (peer == rank_) {
      (sending ? selfSends_ : selfRecvs_).push_back(DevicePeerOp{in, out, bytes, peer, sending ? 1 : 0});
      return;
    }
    char& seen = (sending ? sendsTo_ : receivesFrom_)[static_cast<std::size_t>(peer)];
    if (seen != 0)
      fail(ErrorKind::InvalidUsage, "rank ", rank_, ": two ", sending ? "sends to" : "receives from", " rank ",
           peer, " in one group on device buffers; the CUDA executor runs one of each per peer and group");
    seen = 1;
    if (bytes != 0) plan_.transfers.push_back(DevicePeerOp{in, out, bytes, peer, sending ? 1 : 0});
  }

  int rank_;
  int nranks_;
  DevicePeerPlan plan_;
  std::vector<DevicePeerOp> selfSends_, selfRecvs_;
  // Per rank: whether this group already sends to it, receives from it.
  std::vector<char> sendsTo_, receivesFrom_;
};

}  // namespace

DevicePeerPlan planPeerLaunch(std::span<const core::Op> ops, int rank, int nranks, int maxBlocks) {
  using core::OpKind;
  PeerPlanner planner(rank, nranks);
  const auto block = [](const void* base, std::size_t bytes, int peer) {
    return static_cast<const char*>(base) + bytes * static_cast<std::size_t>(peer);
  };
  for (const core::Op& op : ops) {
    const std::size_t bytes = op.bytes;
    switch (op.kind) {
      case OpKind::Send: planner.send(op.send, bytes, op.peer); break;
      case OpKind::Recv: planner.recv(op.recv, bytes, op.peer); break;
      case OpKind::AllToAll:
        for (int peer = 0; peer < nranks; ++peer) {
          planner.send(block(op.send, bytes, peer), bytes, peer);
          planner.recv(const_cast<char*>(block(op.recv, bytes, peer)), bytes, peer);
        }
        break;
      case OpKind::Gather:
        planner.send(op.send, bytes, op.root);
        if (rank == op.root)
          for (int peer = 0; peer < nranks; ++peer) planner.recv(const_cast<char*>(block(op.recv, bytes, peer)), bytes, peer);
        break;
      case OpKind::Scatter:
        if (rank == op.root)
          for (int peer = 0; peer < nranks; ++peer) planner.send(block(op.send, bytes, peer), bytes, peer);
        planner.recv(op.recv, bytes, op.root);
        break;
      default: break;
    }
  }
  return planner.finish(maxBlocks);
}

std::uint64_t deviceLLMaxBytes(const std::optional<std::string>& ncclProto, std::uint64_t wanted) {
  if (!ncclProto) return wanted;
  std::string_view list = *ncclProto;
  const bool excluding = !list.empty() && list.front() == '^';
  if (excluding) list.remove_prefix(1);
  bool named = false;
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    std::string_view name = list.substr(0, comma);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    named = named || (name.size() == 2 && (name[0] == 'L' || name[0] == 'l') && (name[1] == 'L' || name[1] == 'l'));
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  return named != excluding ? wanted : 0;
}

int channelsPerRank(int residentBlocks, int ranksOnGpu, int maxWanted) {
  const int fit = residentBlocks / std::max(1, ranksOnGpu);
  if (fit < 1) return 0;
  return std::max(1, std::min({fit, maxWanted, DeviceRing::kMaxChannels}));
}

}  // namespace hora::device

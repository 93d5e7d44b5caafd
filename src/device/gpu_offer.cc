#include "device/gpu_offer.h"

#include <algorithm>
#include <cstdio>

#include "base/error.h"
#include "device/device_plan.h"

namespace hora::device {

std::string gpuName(const GpuUuid& uuid) {
  // 8-4-4-4-12 hexadecimal digits.
  std::string name = "GPU-";
  char digits[3];
  for (std::size_t i = 0; i < uuid.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) name += '-';
    std::snprintf(digits, sizeof(digits), "%02x", uuid[i]);
    name += digits;
  }
  return name;
}

int ranksOnGpu(const std::vector<GpuOffer>& gpus, const GpuOffer& gpu, bool sameProcess) {
  return static_cast<int>(std::count_if(gpus.begin(), gpus.end(), [&](const GpuOffer& other) {
    return other.uuid == gpu.uuid && (!sameProcess || other.process == gpu.process);
  }));
}

ChannelAgreement agreeOnChannels(const std::vector<GpuOffer>& gpus, const std::vector<int>& ringRanks,
                                 bool networkPossible) {
  ChannelAgreement agreed;
  agreed.maxChannels = DeviceRing::kMaxChannels;
  for (const GpuOffer& g : gpus) {
    // Every rank on a GPU needs its blocks resident at once, whichever
    // process or host id it has: their kernels wait for each other.
    const int sharing = ranksOnGpu(gpus, g, /*sameProcess=*/false);
    const int fit = channelsPerRank(g.residentBlocks, sharing, g.maxChannels);
    if (fit == 0) {
      agreed.unusable = strCat(sharing, " ranks share ", gpuName(g.uuid), ", which keeps only ", g.residentBlocks,
                               " blocks of the ring kernel resident: their kernels could not all run at once");
      return agreed;
    }
    agreed.maxChannels = std::min(agreed.maxChannels, fit);
    agreed.minChannels = std::max(agreed.minChannels, static_cast<int>(g.minChannels));
  }
  agreed.llMaxBytes = gpus.front().llMaxBytes;
  for (const GpuOffer& g : gpus) agreed.llMaxBytes = std::min(agreed.llMaxBytes, g.llMaxBytes);
  agreed.minChannels = std::min(agreed.minChannels, agreed.maxChannels);
  const std::size_t n = ringRanks.size();
  for (std::size_t p = 0; p < n; ++p)
    if (gpus[static_cast<std::size_t>(ringRanks[p])].hostHash !=
        gpus[static_cast<std::size_t>(ringRanks[(p + 1) % n])].hostHash)
      agreed.crossesHosts = true;
  if (agreed.crossesHosts && !networkPossible)
    agreed.unusable = "the ring crosses hosts, and this communicator has no connections for the network proxy";
  // The relays carry Simple slots only (transport/proxy/fifo_relay.h), and
  // one channel: channels sharing one connection could wait for each
  // other around a ring of hosts (a block keeps its received slot while it
  // waits for room to send, and a frame for a full FIFO holds up the
  // frames behind it).
  if (agreed.crossesHosts) {
    agreed.llMaxBytes = 0;
    agreed.minChannels = agreed.maxChannels = 1;
  }
  return agreed;
}

std::vector<std::uint8_t> reachRow(const std::vector<GpuOffer>& gpus, int rank,
                                   const std::function<bool(const GpuUuid&)>& reachesGpu) {
  const GpuOffer& mine = gpus[static_cast<std::size_t>(rank)];
  std::vector<std::uint8_t> row(gpus.size(), 1);
  for (std::size_t peer = 0; peer < gpus.size(); ++peer)
    if (gpus[peer].hostHash == mine.hostHash && gpus[peer].uuid != mine.uuid) row[peer] = reachesGpu(gpus[peer].uuid) ? 1 : 0;
  return row;
}

std::vector<FifoPlacement> placeFifos(const std::vector<GpuOffer>& gpus, const std::vector<std::uint8_t>& reaches) {
  const std::size_t n = gpus.size();
  HORA_ENFORCE(reaches.size() == n * n, "one answer per pair of ranks");
  int disabledOn = -1;
  for (std::size_t r = 0; r < n && disabledOn < 0; ++r)
    if (gpus[r].p2pDisabled != 0) disabledOn = static_cast<int>(r);
  std::vector<FifoPlacement> placements(n);
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t p = 0; p < n; ++p) {
      // Peers on other hosts write through the network proxy's own FIFOs.
      if (p == r || gpus[p].hostHash != gpus[r].hostHash) continue;
      if (disabledOn >= 0) {
        placements[r] = {true, strCat("P2P is disabled (NCCL_P2P_DISABLE or HORA_P2P_DISABLE on rank ", disabledOn,
                                      ")")};
        break;
      }
      if (reaches[p * n + r] == 0) {
        placements[r] = {true, strCat("the GPU of rank ", p, " (", gpuName(gpus[p].uuid), ") cannot reach ",
                                      gpuName(gpus[r].uuid), " directly")};
        break;
      }
    }
  }
  return placements;
}

}  // namespace hora::device

// What each rank tells the others about its GPU when a CUDA executor
// starts, and the decisions every rank makes alike from what all offered.
// Plain data without CUDA types (it travels in an all-gather), so these
// decisions are built and tested on machines without CUDA.
//
// A GPU is known by its UUID, not its CUDA ordinal: an ordinal is an index
// into what CUDA_VISIBLE_DEVICES lets one process see, so one GPU can have
// different ordinals in two processes and one ordinal can name two GPUs.
// The host is not part of a GPU's identity either: ranks given different
// NCCL_HOSTIDs on one machine still share its GPUs' blocks.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hora::device {

using GpuUuid = std::array<std::uint8_t, 16>;

struct GpuOffer {
  std::uint64_t hostHash;
  std::uint64_t process;        // which process, among its host's (cuda_executor.cc)
  std::int64_t pid;
  GpuUuid uuid;                 // the GPU, the same in every process
  std::int32_t device;          // its CUDA ordinal in the offering process only
  std::int32_t residentBlocks;  // ring-kernel blocks its GPU keeps resident
  std::int32_t minChannels;     // NCCL_MIN_NCHANNELS there
  std::int32_t maxChannels;     // NCCL_MAX_NCHANNELS there
  std::uint64_t llMaxBytes;     // deviceLLMaxBytes() there
  std::int32_t p2pDisabled;     // NCCL_P2P_DISABLE / HORA_P2P_DISABLE there
  std::int32_t launchSetting;   // HORA_DEVICE_MAX_QUEUED there, -1 where unset (launch_order.h)
  // Where its ring kernels record the collectives they started, as its
  // process addresses the word (start_words.h); read by the ranks of that
  // process on the same GPU only.
  std::uint64_t startWord;
};

// "GPU-1a2b3c4d-...", as nvidia-smi -L names it.
std::string gpuName(const GpuUuid& uuid);

// Ranks of `gpus` on `gpu`'s GPU (itself included); with `sameProcess`,
// only those in its process.
int ranksOnGpu(const std::vector<GpuOffer>& gpus, const GpuOffer& gpu, bool sameProcess);

// The channels every rank uses, decided alike on every rank from what all
// ranks offered; or why device collectives cannot run on this communicator.
struct ChannelAgreement {
  int minChannels = 1;
  int maxChannels = 0;
  std::uint64_t llMaxBytes = 0;  // the smallest any rank allows
  bool crossesHosts = false;     // some link of the ring goes through the network proxy
  std::string unusable;
};

// `ringRanks`: user ranks in ring order; `networkPossible`: the ranks can
// make connections for the network proxy.
ChannelAgreement agreeOnChannels(const std::vector<GpuOffer>& gpus, const std::vector<int>& ringRanks,
                                 bool networkPossible);

// Where a rank's receive FIFOs live, which the peers of its host write
// into: its GPU's memory where each of those peers reaches that memory
// directly (the same GPU, or peer access between GPUs over NVLink or PCIe);
// else pinned host memory, shared with those peers, which every GPU of the
// host reaches over PCIe (NCCL's shm transport for GPUs does the same).
// NCCL_P2P_DISABLE on any rank puts every FIFO that a peer of the same host
// writes in host memory.
struct FifoPlacement {
  bool inHostMemory = false;
  std::string why;  // for the log, when inHostMemory
};

// `reaches[p * n + r]` != 0: rank p's GPU can write rank r's GPU memory
// directly, as rank p's process found (n = gpus.size()). Decided alike on
// every rank from the same offers and answers.
std::vector<FifoPlacement> placeFifos(const std::vector<GpuOffer>& gpus, const std::vector<std::uint8_t>& reaches);

// Rank `rank`'s row of that matrix: for each peer of its host on another
// GPU, whether this rank's GPU reaches that one directly (`reachesGpu`,
// which asks CUDA in this rank's process); 1 for every other rank (itself,
// peers on its GPU, peers on other hosts).
std::vector<std::uint8_t> reachRow(const std::vector<GpuOffer>& gpus, int rank,
                                   const std::function<bool(const GpuUuid&)>& reachesGpu);

}  // namespace hora::device

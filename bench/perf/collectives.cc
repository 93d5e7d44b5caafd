#include "collectives.h"

#include <array>
#include <stdexcept>
#include <string>

namespace hora::perf {
namespace {

constexpr std::array<CollectiveInfo, 9> kCollectives = {{
    {Collective::AllReduce, "all_reduce", true, false, InPlaceForm::Checked},
    {Collective::ReduceScatter, "reduce_scatter", true, false, InPlaceForm::Checked},
    {Collective::AllGather, "all_gather", false, false, InPlaceForm::Checked},
    {Collective::Broadcast, "broadcast", false, true, InPlaceForm::Checked},
    {Collective::Reduce, "reduce", true, true, InPlaceForm::Checked},
    {Collective::SendRecv, "sendrecv", false, false, InPlaceForm::TimedOnly},
    {Collective::AlltoAll, "alltoall", false, false, InPlaceForm::TimedOnly},
    {Collective::Gather, "gather", false, true, InPlaceForm::Checked},
    {Collective::Scatter, "scatter", false, true, InPlaceForm::Checked},
}};

constexpr std::string_view kBinarySuffix = "_perf";

}  // namespace

std::span<const CollectiveInfo> allCollectives() { return kCollectives; }

const CollectiveInfo& collectiveInfo(Collective collective) {
  for (const CollectiveInfo& info : kCollectives) {
    if (info.collective == collective) return info;
  }
  throw std::out_of_range("unknown collective " + std::to_string(static_cast<int>(collective)));
}

std::optional<Collective> parseCollectiveName(std::string_view name) {
  if (name.ends_with(kBinarySuffix)) name.remove_suffix(kBinarySuffix.size());
  for (const CollectiveInfo& info : kCollectives) {
    if (name == info.name) return info.collective;
  }
  return std::nullopt;
}

CollectiveSizing sizeCollective(Collective collective, std::size_t requestedBytes, std::size_t typeSize,
                                int nranks) {
  const std::size_t count = requestedBytes / typeSize;
  // A rank's piece of a split buffer is a multiple of 16 bytes, as
  // nccl-tests cuts it since 2.13.12: every piece then starts as aligned as
  // the buffer, whatever the number of ranks, and the same size names the
  // same call in both tools.
  const std::size_t elementsPer16Bytes = typeSize < 16 ? 16 / typeSize : 1;
  const std::size_t perRank =
      count / static_cast<std::size_t>(nranks) / elementsPer16Bytes * elementsPer16Bytes;
  const std::size_t wholeRanks = perRank * static_cast<std::size_t>(nranks);
  switch (collective) {
    case Collective::AllReduce:
    case Collective::Broadcast:
    case Collective::Reduce:
    case Collective::SendRecv: return {count, count, count};
    case Collective::ReduceScatter:
      // Each rank sends the whole array and receives its 1/n piece.
      return {perRank, wholeRanks, perRank};
    case Collective::AllGather:
      // Each rank sends its piece and receives the whole array.
      return {perRank, perRank, wholeRanks};
    case Collective::AlltoAll:
      // Each rank sends one piece to every rank, and receives one from each.
      return {perRank, wholeRanks, wholeRanks};
    case Collective::Gather:
      // Each rank sends its piece; the root receives the whole array.
      return {perRank, perRank, wholeRanks};
    case Collective::Scatter:
      // The root sends the whole array; each rank receives its piece.
      return {perRank, wholeRanks, perRank};
  }
  throw std::out_of_range("unknown collective " + std::to_string(static_cast<int>(collective)));
}

double busBandwidthFactor(Collective collective, int nranks) {
  const double n = nranks;
  switch (collective) {
    // Every element is reduced (n-1 transfers in) and distributed (n-1 out)
    // over n links.
    case Collective::AllReduce: return 2.0 * (n - 1.0) / n;
    // Only one of those two halves; the size is the whole array, so each
    // rank's own 1/n never crosses a link.
    case Collective::ReduceScatter:
    case Collective::AllGather:
    case Collective::AlltoAll:
    // The root's link carries every piece but its own (nccl-tests' factor).
    case Collective::Gather:
    case Collective::Scatter: return (n - 1.0) / n;
    // All data leaves (or reaches) one rank through its single link, and a
    // send/recv pair is one transfer: the algorithm bandwidth is the bus's.
    case Collective::Broadcast:
    case Collective::Reduce:
    case Collective::SendRecv: return 1.0;
  }
  throw std::out_of_range("unknown collective " + std::to_string(static_cast<int>(collective)));
}

double algorithmBandwidth(std::size_t bytes, double seconds) {
  if (seconds <= 0.0) return 0.0;
  return static_cast<double>(bytes) / 1.0e9 / seconds;
}

}  // namespace hora::perf

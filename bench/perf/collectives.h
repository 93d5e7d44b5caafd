// The collectives hora-perf measures, and the arithmetic nccl-tests defines
// for each: how a requested byte size becomes element counts, and the
// bus-bandwidth factor that makes results comparable across rank counts.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

namespace hora::perf {

enum class Collective { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce, SendRecv, AlltoAll, Gather, Scatter };

// What the in-place columns of a collective hold.
enum class InPlaceForm {
  Checked,    // NCCL defines the in-place form and its result
  TimedOnly,  // the calls are legal but the result is not defined (sendrecv
              // and alltoall on one buffer: a rank overwrites data it has
              // yet to send)
};

struct CollectiveInfo {
  Collective collective;
  const char* name;  // "all_reduce"; the nccl-tests binary is name + "_perf"
  bool reduces;      // takes a reduction op (the redop column)
  bool rooted;       // takes a root rank (the root column)
  InPlaceForm inPlace;
};

// Whether the table has a row per -o op: every reducing collective, and
// sendrecv, which nccl-tests' sendrecv_perf runs once per op and names it
// in the redop column although a send reduces nothing.
inline bool rowPerOp(const CollectiveInfo& info) { return info.reduces || info.collective == Collective::SendRecv; }

std::span<const CollectiveInfo> allCollectives();
const CollectiveInfo& collectiveInfo(Collective collective);

// "all_reduce" or nccl-tests' binary name "all_reduce_perf".
std::optional<Collective> parseCollectiveName(std::string_view name);

// The element counts of one measurement. Counts are whole elements per rank,
// so the requested size is rounded down (to a multiple of nranks elements
// where the buffer is split among ranks).
struct CollectiveSizing {
  std::size_t paramCount = 0;  // the count argument of the NCCL call
  std::size_t sendCount = 0;   // elements each rank sends from
  std::size_t recvCount = 0;   // elements each rank receives into

  // The size column: the larger of the two buffers, which is what the
  // bandwidths are computed from (for all_gather and reduce_scatter, the
  // full array of n per-rank pieces).
  std::size_t bytes(std::size_t typeSize) const {
    return (sendCount > recvCount ? sendCount : recvCount) * typeSize;
  }
};

CollectiveSizing sizeCollective(Collective collective, std::size_t requestedBytes, std::size_t typeSize,
                                int nranks);

// busbw = algbw * factor; see docs/hora-perf.md for where each comes from.
double busBandwidthFactor(Collective collective, int nranks);

// GB/s (10^9 bytes per second) for `bytes` moved in `seconds`.
double algorithmBandwidth(std::size_t bytes, double seconds);

}  // namespace hora::perf

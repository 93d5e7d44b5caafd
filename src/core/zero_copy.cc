// Windows, and the collectives that run on them without FIFOs.
//
// Through the shared-memory FIFOs every byte of an all-reduce is copied
// into a FIFO, reduced out of it into the next one and copied out again:
// per rank four passes over the data, which on a machine whose cores are
// bound by memory traffic caps the bus bandwidth well below what memory
// could carry. When every rank's buffers are mapped into every other rank
// (windows), each rank instead reads the others' buffers directly: the
// schedules of algorithms/windows.h, over WindowPrimitives.
//
// Agreement: whether a collective runs here must be the same decision on
// every rank, yet only each rank knows where its own buffers are. So at the
// start of every collective that may qualify (the planner's conditions are
// the same on every rank), each rank tells all others
// where its buffers are, or that they are not in windows; the collective
// runs here only if all ranks offered. The same message is the proof that a
// peer has entered the collective, so its buffers may be touched; a second
// exchange at the end tells each rank that nobody touches its buffers any
// more, so it may return.
#include <algorithm>
#include <vector>

#include "algorithms/windows.h"
#include "base/error.h"
#include "core/host_executor.h"
#include "core/window_primitives.h"

namespace hora::core {

bool HostExecutor::runWindows(const Op& op, const Plan& plan) {
  const int rank = ctx_.rank, nranks = ctx_.nranks;
  const OpBufferBytes mine = opBufferBytes(op, rank, nranks);
  const bool scaled = op.reduce.kind == kernels::ReduceKind::PreMulSum;
  WindowOffer offer{1, -1, -1, 0, 0, 0, scaled ? op.reduce.scalarBits : 0};
  // Names a buffer the collective uses here by its window, or withdraws the
  // offer when it lies outside every usable window.
  auto place = [&](const void* buffer, std::size_t bytes, std::int32_t* window,
                   std::uint64_t* offset) {
    if (bytes == 0) return;
    const auto location = ctx_.windows.find(buffer, bytes);
    if (!location) {
      offer.offered = 0;
      return;
    }
    *window = location->window;
    *offset = location->offset;
  };
  place(op.send, mine.send, &offer.sendWindow, &offer.sendOffset);
  place(op.recv, mine.recv, &offer.recvWindow, &offer.recvOffset);
  std::vector<WindowOffer> offers(nranks);
  exchangeWithAll(&offer, offers.data(), sizeof(offer), "exchanging window offers");
  for (const WindowOffer& o : offers)
    if (o.offered == 0 || o.scalarBits != offer.scalarBits) return false;
  // Every rank's ranges must lie in its windows as this rank knows them,
  // checked before any buffer is touched. Registration is collective, so
  // the tables agree, unless a rank deregistered a window a peer still
  // names: then this rank stops here, and its peers with it.
  for (int r = 0; r < nranks; ++r) {
    const OpBufferBytes theirs = opBufferBytes(op, r, nranks);
    const WindowOffer& o = offers[r];
    const bool inWindows =
        (theirs.send == 0 || ctx_.windows.address(o.sendWindow, r, o.sendOffset, theirs.send) != nullptr) &&
        (theirs.recv == 0 || ctx_.windows.address(o.recvWindow, r, o.recvOffset, theirs.recv) != nullptr);
    if (!inWindows)
      fail(ErrorKind::InvalidUsage, "rank ", rank, ": rank ", r, " named a window range this rank does not have ",
           "(a window it deregistered, or windows registered in a different order on different ranks?)");
  }

  const bool large = std::max(mine.send, mine.recv) >= planner_.tuning().streamingMinBytes;
  WindowPrimitives prims(ctx_.windows, offers, rank, op.reduce, large);
  // The host executor runs one channel per rank: its thread is the channel.
  const algorithms::Channel channel{0, 1};
  const std::size_t align = plan.alignElems;
  switch (op.kind) {
    case OpKind::AllReduce:
      algorithms::windowReduce(prims, nranks, rank, algorithms::kEveryRank, channel, op.count, align);
      break;
    case OpKind::Reduce:
      algorithms::windowReduce(prims, nranks, rank, op.root, channel, op.count, align);
      break;
    case OpKind::ReduceScatter:
      algorithms::windowReduceScatter(prims, rank, channel, op.count, align);
      break;
    case OpKind::AllGather: algorithms::windowAllGather(prims, nranks, channel, op.count, align); break;
    case OpKind::Broadcast:
      algorithms::windowBroadcast(prims, op.root, channel, op.count, align);
      break;
    default: HORA_ENFORCE(false, "no window schedule for ", opKindName(op.kind));
  }
  prims.finish();
  // Nobody returns while another rank may still read or write its buffers.
  std::vector<std::uint64_t> done(nranks);
  const std::uint64_t finished = 1;
  exchangeWithAll(&finished, done.data(), sizeof(finished),
                  "waiting for the ranks to finish a zero-copy collective");
  return true;
}

}  // namespace hora::core

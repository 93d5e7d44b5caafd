// Windows, and the collectives that run on them without FIFOs.
//
// Through the shared-memory FIFOs every byte of an all-reduce is copied
// into a FIFO, reduced out of it into the next one and copied out again:
// per rank four passes over the data, which on a machine whose cores are
// bound by memory traffic caps the bus bandwidth well below what memory
// could carry. When every rank's buffers are mapped into every other rank
// (windows), each rank instead reads the others' buffers directly:
//   all-reduce      rank r reduces its 1/n of the elements from all inputs
//                   into all outputs;
//   reduce          the same, into the root's output only;
//   reduce-scatter  rank r reduces block r of all inputs into its output;
//   all-gather      rank r copies every rank's input into its output;
//   broadcast       rank r copies the root's input into its output.
// Each input byte is read once and each output byte written once, the
// least these collectives can move; each reduced element is computed by one
// rank, so all ranks hold the same bits.
//
// Agreement: whether a collective runs here must be the same decision on
// every rank, yet only each rank knows where its own buffers are. So at the
// start of every collective that may qualify (the conditions of
// mayUseZeroCopy are the same on every rank), each rank tells all others
// where its buffers are, or that they are not in windows; the collective
// runs here only if all ranks offered. The same message is the proof that a
// peer has entered the collective, so its buffers may be touched; a second
// exchange at the end tells each rank that nobody touches its buffers any
// more, so it may return.
#include <algorithm>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "core/host_executor.h"
#include "kernels/copy_host.h"
#include "kernels/reduce_many.h"

namespace hora::core {
namespace {

// Where one rank's buffers of this all-reduce are, as (window, offset).
struct ZeroCopyOffer {
  std::int32_t offered;  // 0: not both buffers in usable windows
  std::int32_t sendWindow;
  std::int32_t recvWindow;
  std::int32_t reserved;
  std::uint64_t sendOffset;
  std::uint64_t recvOffset;
};

}  // namespace

namespace {

// Copies a block whose destination nobody reads soon (streaming) or may.
void copyBlock(char* dst, const char* src, std::size_t bytes, bool streaming) {
  if (dst == src || bytes == 0) return;
  if (streaming) {
    kernels::copyStreaming(dst, src, bytes);
  } else {
    std::memcpy(dst, src, bytes);
  }
}

}  // namespace

bool HostExecutor::runWindows(const Op& op) {
  const int rank = ctx_.rank, nranks = ctx_.nranks;
  const WindowTable& windows = ctx_.windows;
  const std::size_t elemSize = dataTypeSize(op.type);
  const std::size_t block = op.count * elemSize;
  const OpBufferBytes mine = opBufferBytes(op, rank, nranks);
  ZeroCopyOffer offer{1, -1, -1, 0, 0, 0};
  // Names a buffer the collective uses here by its window, or withdraws the
  // offer when it lies outside every usable window.
  auto place = [&](const void* buffer, std::size_t bytes, std::int32_t* window,
                   std::uint64_t* offset) {
    if (bytes == 0) return;
    const auto location = windows.find(buffer, bytes);
    if (!location) {
      offer.offered = 0;
      return;
    }
    *window = location->window;
    *offset = location->offset;
  };
  place(op.send, mine.send, &offer.sendWindow, &offer.sendOffset);
  place(op.recv, mine.recv, &offer.recvWindow, &offer.recvOffset);
  std::vector<ZeroCopyOffer> offers(nranks);
  exchangeWithAll(&offer, offers.data(), sizeof(offer), "exchanging window offers");
  for (const ZeroCopyOffer& o : offers)
    if (o.offered == 0) return false;

  // Rank r's buffers, mapped here: [offset, offset + bytes) of its send or
  // receive buffer.
  auto locate = [&](int r, bool send, std::size_t offset, std::size_t bytes) {
    const ZeroCopyOffer& o = offers[r];
    char* at = windows.address(send ? o.sendWindow : o.recvWindow, r,
                                (send ? o.sendOffset : o.recvOffset) + offset, bytes);
    if (at == nullptr)
      fail(ErrorKind::InvalidUsage, "rank ", rank, ": ", ctx_.bootstrap.describe(r),
           " named a window range this rank does not have (windows registered in a "
           "different order on different ranks?)");
    return at;
  };
  auto sendOf = [&](int r, std::size_t offset, std::size_t bytes) {
    return locate(r, true, offset, bytes);
  };
  auto recvOf = [&](int r, std::size_t offset, std::size_t bytes) {
    return locate(r, false, offset, bytes);
  };

  // Reductions split the elements between the ranks: rank r takes
  // [bound(r), bound(r + 1)), parts starting on 64-byte multiples so that
  // streaming stores see the same alignment in each.
  const std::size_t align = std::max<std::size_t>(1, 64 / elemSize);
  auto bound = [&](int r) {
    const std::size_t even = op.count / nranks * r + op.count % nranks * r / nranks;
    return std::min(op.count, (even + align - 1) / align * align);
  };
  const std::size_t partBegin = bound(rank) * elemSize;
  const std::size_t partBytes = bound(rank + 1) * elemSize - partBegin;
  // Streaming stores skip reading the destination into the cache, which
  // pays where the output is not otherwise touched. In place, each output
  // line was just read as an input and is in cache: an ordinary store hits
  // it, while a streaming store would evict it (measured, 2-rank all-reduce,
  // 64-128 MiB: in place 5.4-7.6 GB/s busbw with streaming stores, 7.9-11.5
  // without; out of place 6.8-8.2 with, 3.3-4.3 without).
  const bool large = std::max(mine.send, mine.recv) >= tuning_.streamingMinBytes;
  std::vector<const void*> inputs(nranks);
  std::vector<void*> outputs;
  bool streaming = false;
  auto reduceInto = [&](std::size_t count) {
    bool inPlace = false;
    for (void* out : outputs)
      for (const void* in : inputs) inPlace = inPlace || out == in;
    streaming = large && !inPlace;
    kernels::reduceHostMany(op.reduce, outputs.data(), static_cast<int>(outputs.size()),
                            inputs.data(), nranks, count, streaming);
  };

  switch (op.kind) {
    case OpKind::AllReduce:
      // Rank r reduces its part of every input into every output.
      if (partBytes == 0) break;
      for (int r = 0; r < nranks; ++r) {
        inputs[r] = sendOf(r, partBegin, partBytes);
        outputs.push_back(recvOf(r, partBegin, partBytes));
      }
      reduceInto(partBytes / elemSize);
      break;
    case OpKind::Reduce:
      // The same, into the root's output only.
      if (partBytes == 0) break;
      for (int r = 0; r < nranks; ++r) inputs[r] = sendOf(r, partBegin, partBytes);
      outputs.push_back(recvOf(op.root, partBegin, partBytes));
      reduceInto(partBytes / elemSize);
      break;
    case OpKind::ReduceScatter:
      // Rank r reduces block r of every input into its own output.
      if (block == 0) break;
      for (int r = 0; r < nranks; ++r) inputs[r] = sendOf(r, rank * block, block);
      outputs.push_back(recvOf(rank, 0, block));
      reduceInto(op.count);
      break;
    case OpKind::AllGather: {
      // Rank r copies every rank's input into its own output.
      char* out = recvOf(rank, 0, block * nranks);
      streaming = large;
      for (int r = 0; r < nranks; ++r)
        copyBlock(out + r * block, sendOf(r, 0, block), block, streaming);
      break;
    }
    case OpKind::Broadcast:
      streaming = large;
      copyBlock(recvOf(rank, 0, block), sendOf(op.root, 0, block), block, streaming);
      break;
    default: HORA_ENFORCE(false, "no zero-copy path for ", opKindName(op.kind));
  }
  if (streaming) kernels::streamingFence();
  // Nobody returns while another rank may still read or write its buffers.
  std::vector<std::uint64_t> done(nranks);
  const std::uint64_t finished = 1;
  exchangeWithAll(&finished, done.data(), sizeof(finished),
                  "waiting for the ranks to finish a zero-copy collective");
  return true;
}

}  // namespace hora::core

#include "protocols/host_fifo.h"

#include <cstring>

#include "base/error.h"
#include "protocols/host_ordering.h"

namespace hora::protocols {

FifoHandle initFifo(void* block, std::size_t blockBytes, std::uint64_t slotBytes, std::uint64_t slotCount,
                    BlockIsZero isZero) {
  HORA_CHECK_ARG(slotBytes != 0 && slotBytes % kSlotGranule == 0, "protocols: a FIFO slot of ", slotBytes,
                 " bytes: must be a nonzero multiple of ", kSlotGranule);
  HORA_CHECK_ARG(slotCount != 0, "protocols: a FIFO needs at least one slot");
  HORA_CHECK_ARG(reinterpret_cast<std::uintptr_t>(block) % kCacheLineBytes == 0,
                 "protocols: a FIFO block must be ", kCacheLineBytes, "-byte aligned");
  const FifoLayout layout = fifoLayout(slotBytes, slotCount);
  HORA_CHECK_ARG(blockBytes >= layout.totalBytes, "protocols: a FIFO of ", slotCount, " slots of ", slotBytes,
                 " bytes needs ", layout.totalBytes, " bytes, the block has ", blockBytes);
  std::memset(block, 0, isZero == BlockIsZero::Yes ? layout.slotsOffset : layout.totalBytes);
  return fifoAt(block, slotBytes, slotCount);
}

void raiseAbort(const FifoHandle& fifo) { HostOrdering::storeFlag(fifo.abortFlag, 1); }

void throwIfFailed(Status status, const char* what) {
  switch (status) {
    case Status::Ok: return;
    case Status::Aborted: fail(ErrorKind::Remote, "protocols: ", what, ": aborted");
    case Status::TimedOut: fail(ErrorKind::Remote, "protocols: ", what, ": timed out");
    case Status::PeerStopped: fail(ErrorKind::Remote, "protocols: ", what, ": the peer stopped");
    case Status::Overflow:
    case Status::OtherProtocol: fail(ErrorKind::InvalidUsage, "protocols: ", what, ": ", statusName(status));
  }
  fail(ErrorKind::Internal, "protocols: ", what, ": unknown status ", static_cast<unsigned>(status));
}

}  // namespace hora::protocols

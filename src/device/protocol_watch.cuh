// Ranks whose calls differ in size may choose different protocols for one
// collective (device_plan.h: LL up to a size, Simple above it), and then
// never see each other's pieces: each waits on the FIFO of its own
// protocol. So while thread 0 of a block waits for a piece, it also looks,
// on the wait's slow path (protocols/spin_wait.h), at the same peer's FIFO
// of the other protocol. Data there, with still none on its own, means the
// peer sent this operation by the other protocol: the kernel stops with
// Status::OtherProtocol, which the host words as a collective mismatch.
//
// Why it must last: a peer that finished an operation on one protocol and
// began the next on the other wrote this rank's piece before its next
// operation's first, so this rank's piece is there by the time the other
// one is seen, give or take how late a store becomes visible. Only data
// seen on the other FIFO for kOtherProtocolNs on end, with none on this
// rank's, counts: far longer than any store takes to land, far shorter
// than the deadline a mismatch would otherwise wait for.
#pragma once

#include <cstdint>

#include "protocols/device_ordering.h"
#include "protocols/fifo_handle.h"
#include "protocols/ll.h"
#include "protocols/spin_wait.h"
#include "protocols/status.h"

namespace hora::device {

inline constexpr std::uint64_t kOtherProtocolNs = 10'000'000;  // 10 ms

// The watch on a FIFO's abort line, where a neighbour that stopped says so
// (device_work.h).
using StopLine = protocols::StopLineWatch<protocols::DeviceOrdering>;

// Whether the peer has data waiting on `*fifo`, a receiving FIFO this block
// does not use for the operation. The handle stays where it is (the ring's
// device memory) and is read only on the slow path, so that the 512
// threads of a block carry a pointer, not a handle only thread 0 needs.
// No FIFO (null, or one without slots: an LL ring of size 0 is not a ring):
// never.
struct SimpleHasData {
  const protocols::FifoHandle* fifo;
  __device__ bool operator()() const {
    using protocols::DeviceOrdering;
    return fifo != nullptr && fifo->slots != nullptr &&
           DeviceOrdering::loadAcquire(fifo->head) != DeviceOrdering::loadRelaxed(fifo->tail);
  }
};
struct LLHasData {
  const protocols::FifoHandle* fifo;
  __device__ bool operator()() const {
    if (fifo == nullptr || fifo->slots == nullptr) return false;
    // The receiver returns every line it has read, so the next message
    // starts at the tail.
    const protocols::LLReceiver<protocols::DeviceOrdering> next(*fifo);
    std::uint32_t header = 0;
    return next.tryLine(0, &header);
  }
};

// The watch: Ok until the other FIFO has held data for kOtherProtocolNs.
template <class OtherHasData>
class OtherProtocolWatch {
 public:
  __device__ explicit OtherProtocolWatch(OtherHasData other) : other_(other) {}
  __device__ protocols::Status operator()() {
    if (!other_()) {
      seenSince_ = 0;
      return protocols::Status::Ok;
    }
    const std::uint64_t now = protocols::DeviceOrdering::now();
    if (seenSince_ == 0) seenSince_ = now;
    return now - seenSince_ >= kOtherProtocolNs ? protocols::Status::OtherProtocol : protocols::Status::Ok;
  }

 private:
  OtherHasData other_;
  std::uint64_t seenSince_ = 0;
};

}  // namespace hora::device

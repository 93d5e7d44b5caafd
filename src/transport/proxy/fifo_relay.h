// Relays between Simple FIFOs (protocols/simple.h) and a connection to a
// peer on another host: the proxy of the device network path. A kernel
// cannot drive a socket or a NIC queue, so on each side a host thread
// carries its FIFO slots over a hora connection (TCP, or the RDMA credit
// protocol), and the kernels at both ends run the same Simple protocol as
// between GPUs of one host, on FIFOs in pinned host memory that the GPU
// maps (its waits and orderings are at system scope, protocols/
// device_ordering.h).
//
//   kernel ──slots──▶ FIFO ─▶ FifoSendRelay ═connection═▶ FifoRecvRelay ─▶ FIFO ──slots──▶ kernel
//                  (host memory)                                    (host memory)
//
// Each slot travels as a frame: a header {the slot's size word, its
// channel}, then, when the slot begins an operation (kStamped), its stamps
// board entry, then its bytes. The receiving relay writes them into a slot
// of the FIFO of that channel and publishes it with the same size word, so
// the receiving kernel sees exactly what the sending kernel published,
// stamps and their checks included: the agreement check works across the
// relay as within a host. A relay can carry several channels (thread
// blocks, each with its own FIFO) over one connection, but a frame for a
// full FIFO holds up the frames behind it, and a ring kernel's block keeps
// its received slot while it waits for room to send: around a ring of
// hosts, channels sharing connections could wait for each other. So the
// CUDA executor gives a ring that crosses hosts one channel.
//
// The sending relay reads slots ahead (SimpleReceiver::tryPeek), posts
// their frames straight from the FIFO (no copy) and gives each slot back
// to the kernel once the connection has sent all of its frame.
//
// A relay that is done (its communicator is being destroyed) sends an
// end-of-stream frame once every slot has gone; the receiving relay then
// stops quietly. A connection that ends without one is a failure: the
// peer died or aborted. Only a relay with work outstanding watches its
// peer (checkAlive), so a peer that left in order is never an error.
//
// progress() never waits; errors are the connection's (naming the peer).
// One thread drives a relay.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "protocols/fifo_handle.h"
#include "protocols/host_ordering.h"
#include "protocols/simple.h"
#include "transport/connection.h"

namespace hora::transport::proxy {

// The fixed part of a frame.
struct FrameHeader {
  std::uint64_t sizeWord = 0;  // the slot's, as protocols/simple.h packs it
  std::uint64_t channel = 0;   // which FIFO of the relay; kEndOfStream: the last frame
};
static_assert(sizeof(FrameHeader) == 16);
inline constexpr std::uint64_t kEndOfStream = ~std::uint64_t{0};

class FifoSendRelay {
 public:
  // `fifos`: the FIFOs kernels fill, one per channel, in host memory;
  // `connection`: to the peer's FifoRecvRelay, which must have as many.
  FifoSendRelay(const std::vector<protocols::FifoHandle>& fifos, SendConnection& connection);

  // Posts the frames of every slot published so far and gives back every
  // slot whose frame has gone; true if anything moved.
  bool progress();
  // Nothing taken from a FIFO is still waiting to be sent.
  bool idle() const { return inFlight_.empty(); }
  // Nothing published is unsent: every slot the kernels published has gone.
  bool drained();
  // Posts the end-of-stream frame (once; after drained()).
  void sendEnd();
  // The end-of-stream frame has gone.
  bool ended() const { return endPosted_ && inFlight_.empty(); }
  // Throws if the peer is gone while frames are still going to it.
  void checkAlive() {
    if (!inFlight_.empty()) connection_.checkAlive();
  }

 private:
  // A frame posted and not yet sent: its header (whose address the
  // connection holds) and where it ends in the stream.
  struct Sent {
    FrameHeader header;
    std::uint64_t end;  // the connection's posted bytes after the frame
  };
  using Receiver = protocols::SimpleReceiver<protocols::HostOrdering>;
  std::vector<Receiver> fifos_;
  std::vector<std::uint64_t> ahead_;  // per channel: slots posted, not yet given back
  SendConnection& connection_;
  std::deque<Sent> inFlight_;        // oldest first (a deque: posted headers stay put)
  std::size_t nextChannel_ = 0;      // where the next round of posting starts
  bool endPosted_ = false;
};

class FifoRecvRelay {
 public:
  // `fifos`: the FIFOs kernels read, one per channel, in host memory;
  // `connection`: from the peer's FifoSendRelay.
  FifoRecvRelay(const std::vector<protocols::FifoHandle>& fifos, RecvConnection& connection);

  // Takes frames as far as they have come and FIFO room allows, and
  // publishes each slot once all of its frame is in; true if anything
  // moved. Throws when a frame is not one a FifoSendRelay sends.
  bool progress();
  // The peer's relay sent its end-of-stream frame: nothing more comes.
  bool ended() const { return ended_; }
  // Throws if the peer is gone without having ended its stream (what came
  // before its end is taken first).
  void checkAlive();

 private:
  enum class Stage { Header, Stamp, Data };
  // Posts the receive the stage needs unless posted; true once it is in.
  bool received(void* into, std::size_t bytes);
  using Sender = protocols::SimpleSender<protocols::HostOrdering>;
  std::vector<Sender> fifos_;
  RecvConnection& connection_;
  Stage stage_ = Stage::Header;
  bool posted_ = false;     // the stage's receive is posted
  std::uint64_t target_ = 0;  // the connection's completed bytes once it is in
  FrameHeader header_;
  std::uint64_t stamp_[protocols::kStampWords] = {};
  char* slot_ = nullptr;  // where the frame's bytes go
  bool ended_ = false;
};

}  // namespace hora::transport::proxy

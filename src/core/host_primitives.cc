#include "core/host_primitives.h"

#include <cstring>

#include "algorithms/primitives.h"
#include "base/error.h"
#include "kernels/copy_host.h"
#include "kernels/reduce_many.h"
#include "kernels/reduce_arguments.h"

namespace hora::core {

static_assert(algorithms::Primitives<HostPrimitives>);

namespace {
// Both ends pad at the same point of the stream (their first use of the
// connection in an operation, when the plan asks for it), so every
// operation's data starts aligned in a shared-memory FIFO and can be
// reduced there. At the same point both ends name the plan's protocol.
constexpr std::size_t kStreamAlignment = 64;
}  // namespace

StagingPool::StagingPool(std::size_t slotBytes, int slots)
    : slotBytes_(slotBytes), memory_(slotBytes * slots), marks_(slots, 0), targets_(slots, nullptr) {}

HostPrimitives::HostPrimitives(ProgressEngine& engine, transport::Connector& connector,
                               HostLinks& links, const void* in, void* out,
                               const kernels::ReduceSpec& spec, StagingPool& staging,
                               const Options& options)
    : engine_(engine),
      connector_(connector),
      links_(links),
      in_(static_cast<const char*>(in)),
      out_(static_cast<char*>(out)),
      spec_(spec),
      elemSize_(dataTypeSize(spec.type)),
      hasPre_(spec.kind == kernels::ReduceKind::PreMulSum),
      streaming_(options.streamingStores),
      streamingFifo_(options.streamingFifo),
      singleCopy_(options.singleCopy),
      alignStreams_(options.alignStreams),
      protocol_(options.protocol),
      stamp_(options.stamp),
      staging_(staging) {
  HORA_ENFORCE(staging.slotBytes() >= elemSize_, "staging slot smaller than an element");
  // Every reduction below is checked here, once per operation: the spec.
  // The caller's buffers were checked where the call entered
  // (Communicator::checkedMemoryOf: every buffer a rank uses starts on an
  // element, and partly overlapping buffers are refused); staging slots and
  // FIFO data are aligned by construction, and every slice advances by
  // whole elements. So the loops call reduceHostUnchecked.
  kernels::checkReduceArguments("a collective's reduction", spec, nullptr, nullptr, nullptr, 0);
  links_.reset();
}

template <typename Connection>
Connection* HostPrimitives::attach(Connection& connection) {
  engine_.add(&connection);
  connection.beginMessage(protocol_, stamp_);
  if (alignStreams_) connection.alignStream(kStreamAlignment);
  return &connection;
}

OutLink& HostPrimitives::to(int peer) {
  OutLink& link = links_.out[peer];
  if (link.connection != nullptr) return link;
  link.connection = attach(connector_.sendTo(peer));
  link.connection->streamCopies(streamingFifo_);
  if (peer == ringNext_) ringNext_ = -1;
  if (stamp_ != nullptr) stampsToFlush_ = true;
  if (singleCopy_) {
    // Both ends of a connection decide alike: the receiver from its own
    // test of the sender's memory, the sender from the receiver's answer.
    transport::PeerMemoryAccess access;
    engine_.waitUntil(
        [&] {
          return (access = link.connection->peerMemoryAccess()) != transport::PeerMemoryAccess::Unknown;
        },
        "waiting for a peer's shared-memory handshake");
    link.describe = access == transport::PeerMemoryAccess::Yes;
  }
  return link;
}

InLink& HostPrimitives::from(int peer) {
  InLink& link = links_.in[peer];
  if (link.connection != nullptr) return link;
  // A link to a peer outside the ring may first have to be made, which
  // waits for the peer to connect: the ring's stamps are exchanged first,
  // and checked while this rank waits (flushStampsNow).
  if (ringPrev_ >= 0 && peer != ringPrev_) flushStampsNow();
  link.connection = attach(connector_.recvFrom(peer, engine_.progressWhileWaiting()));
  if (peer == ringPrev_) ringPrev_ = -1;
  link.copyDescribed = singleCopy_ && link.connection->readsPeerMemory();
  return link;
}

void HostPrimitives::attachLinks(int toPeer, int fromPeer) {
  if (toPeer >= 0) to(toPeer);
  if (fromPeer >= 0) from(fromPeer);
}

void HostPrimitives::flushStampsNow() {
  // One pass per newly attached link is enough: a stamp left pending by it
  // rides on bytes already posted or being written.
  if (ringNext_ >= 0) to(ringNext_);
  // The previous rank's stamp is checked while this rank waits, not only
  // at the end: a rank that waits for another peer (a scatter's root that
  // ranks name differently) would otherwise wait for a peer that runs
  // another call until the deadline, while the stamp that shows it sits
  // unread on this link.
  if (ringPrev_ >= 0) from(ringPrev_);
  stampsToFlush_ = false;
  // The engine holds exactly the connections this operation uses.
  // flushStamp() progresses the connection: its errors name the peer.
  for (transport::SendConnection* connection : engine_.sends())
    if (connection->stampPending()) ProgressEngine::onConnection(*connection, [&] { connection->flushStamp(); });
}

namespace {
// What a single-copy sender puts in the stream instead of the bytes.
struct BufferDescription {
  std::uint64_t address;
  std::uint64_t bytes;
};
}  // namespace

void HostPrimitives::describe(transport::SendConnection& to, const char* data, std::size_t bytes) {
  std::span<char> room = waitRoom(to, sizeof(BufferDescription), sizeof(BufferDescription));
  const BufferDescription description{reinterpret_cast<std::uint64_t>(data), bytes};
  std::memcpy(room.data(), &description, sizeof(description));
  ProgressEngine::onConnection(to, [&] { to.commitWritten(sizeof(description)); });
  describedAny_ = true;
}

void HostPrimitives::copyDescribed(transport::RecvConnection& from, char* dst, std::size_t bytes) {
  from.postInPlace(sizeof(BufferDescription));
  std::span<const char> data = waitData(from, sizeof(BufferDescription));
  BufferDescription description;
  std::memcpy(&description, data.data(), sizeof(description));
  if (description.bytes != bytes)
    fail(ErrorKind::Internal, from.peerName(), " described ", description.bytes, " bytes where ",
         bytes, " were expected");
  from.readPeerMemory(dst, description.address, bytes);
  // Consuming the description tells the sender its buffer has been read.
  ProgressEngine::onConnection(from, [&] { from.consumeRead(sizeof(description)); });
}

void HostPrimitives::copyOut(char* dst, const char* src, std::size_t bytes) {
  if (streaming_) kernels::copyStreaming(dst, src, bytes);
  else std::memcpy(dst, src, bytes);
}

std::span<char> HostPrimitives::waitRoom(transport::SendConnection& to, std::size_t minBytes,
                                         std::size_t maxBytes) {
  std::span<char> room;
  auto roomThere = [&] { return (room = to.writable(maxBytes)).size() >= minBytes; };
  engine_.waitUntil([&] { return ProgressEngine::onConnection(to, roomThere); },
                    "waiting for room in a peer's buffer");
  return room;
}

std::span<const char> HostPrimitives::waitData(transport::RecvConnection& from,
                                               std::size_t minBytes) {
  flushStamps();
  std::span<const char> data;
  auto dataThere = [&] { return (data = from.readable()).size() >= minBytes; };
  engine_.waitUntil([&] { return ProgressEngine::onConnection(from, dataThere); },
                    "receiving from a peer");
  return data;
}

char* HostPrimitives::acquireSlot(int* index) {
  *index = nextSlot_;
  nextSlot_ = (nextSlot_ + 1) % staging_.slots();
  transport::SendConnection* target = staging_.sendTo(*index);
  const std::uint64_t mark = staging_.sendMark(*index);
  if (target != nullptr)
    engine_.waitUntil([&] { return target->completedBytes() >= mark; }, "sending to a peer");
  staging_.sendTo(*index) = nullptr;
  return staging_.slot(*index);
}

void HostPrimitives::receiveInto(transport::RecvConnection& from, char* dst, std::size_t bytes) {
  flushStamps();
  from.post(dst, bytes);
  const std::uint64_t target = from.postedBytes();
  engine_.waitUntil([&] { return from.completedBytes() >= target; }, "receiving from a peer");
}

void HostPrimitives::sendFromSlot(transport::SendConnection& to, int index, std::size_t bytes) {
  to.post(staging_.slot(index), bytes);
  staging_.sendTo(index) = &to;
  staging_.sendMark(index) = to.postedBytes();
}

void HostPrimitives::send(int peer, std::size_t inOffset, std::size_t count) {
  OutLink& link = to(peer);
  if (link.describe && !hasPre_) {
    if (count > 0) describe(*link.connection, inAt(inOffset), count * elemSize_);
    return;
  }
  if (!hasPre_) {
    link.connection->post(inAt(inOffset), count * elemSize_);
    engine_.progressAll();
    return;
  }
  // PreMulSum: what leaves is the scaled input, built slice by slice.
  for (std::size_t done = 0; done < count;) {
    std::size_t n = std::min(sliceElems(), count - done);
    int index;
    char* slot = acquireSlot(&index);
    kernels::reduceHostUnchecked(spec_, slot, inAt(inOffset + done), nullptr, n, false);
    sendFromSlot(*link.connection, index, n * elemSize_);
    engine_.progressAll();
    done += n;
  }
}

void HostPrimitives::recv(int peer, std::size_t outOffset, std::size_t count) {
  InLink& link = from(peer);
  transport::RecvConnection& connection = *link.connection;
  if (count == 0) return;
  if (link.copyDescribed) {
    copyDescribed(connection, outAt(outOffset), count * elemSize_);
    return;
  }
  if (!connection.receivesInPlace()) {
    receiveInto(connection, outAt(outOffset), count * elemSize_);
    return;
  }
  // Out of the sender's buffer, with the output's kind of stores.
  const std::size_t total = count * elemSize_;
  char* dst = outAt(outOffset);
  connection.postInPlace(total);
  for (std::size_t done = 0; done < total;) {
    std::span<const char> data = waitData(connection, 1);
    const std::size_t n = std::min(data.size(), total - done);
    copyOut(dst + done, data.data(), n);
    ProgressEngine::onConnection(connection, [&] { connection.consumeRead(n); });
    done += n;
  }
}

void HostPrimitives::recvReduce(transport::RecvConnection& from, transport::SendConnection* to,
                                std::size_t inOffset, char* dst, std::size_t count, bool finalize,
                                bool dstIsSlot) {
  if (from.receivesInPlace()) {
    recvReduceInPlace(from, to, inOffset, dstIsSlot ? nullptr : dst, count, finalize);
    return;
  }
  for (std::size_t done = 0; done < count;) {
    std::size_t n = std::min(sliceElems(), count - done);
    int index;
    char* slot = acquireSlot(&index);
    receiveInto(from, slot, n * elemSize_);
    char* target = dstIsSlot ? slot : dst + done * elemSize_;
    kernels::reduceHostUnchecked(spec_, target, inAt(inOffset + done), slot, n, finalize);
    if (to != nullptr) {
      if (dstIsSlot) sendFromSlot(*to, index, n * elemSize_);
      else to->post(target, n * elemSize_);
    }
    done += n;
  }
}

void HostPrimitives::recvReduceInPlace(transport::RecvConnection& from,
                                       transport::SendConnection* to, std::size_t inOffset,
                                       char* dst, std::size_t count, bool finalize) {
  const bool sendInPlace = to != nullptr && to->sendsInPlace();
  const bool viaSlot = to != nullptr && dst == nullptr && !sendInPlace;
  from.postInPlace(count * elemSize_);
  for (std::size_t done = 0; done < count;) {
    const std::size_t want = std::min(sliceElems(), count - done);
    // Room first, then data: while waiting for room we hold nothing of the
    // sender's, so it can always go on sending to us.
    std::span<char> room;
    int slotIndex = -1;
    if (sendInPlace) room = waitRoom(*to, elemSize_, want * elemSize_);
    else if (viaSlot) room = {acquireSlot(&slotIndex), want * elemSize_};
    std::span<const char> data = waitData(from, elemSize_);
    std::size_t n = std::min(want, data.size() / elemSize_);
    if (sendInPlace || viaSlot) n = std::min(n, room.size() / elemSize_);
    const std::size_t bytes = n * elemSize_;
    const char* local = inAt(inOffset + done);
    char* target = dst == nullptr ? nullptr : dst + done * elemSize_;
    if (sendInPlace && streamingFifo_) {
      reduceIntoFifo(room.data(), target, local, data.data(), n, finalize);
    } else if ((sendInPlace || viaSlot) && target == local) {
      // In place: the output's lines are in cache (just read); reduce there
      // and copy to the next rank.
      kernels::reduceHostUnchecked(spec_, target, local, data.data(), n, finalize);
      std::memcpy(room.data(), target, bytes);
    } else if (sendInPlace || viaSlot) {
      // Reduce into the next rank's buffer (or a slot), then keep a copy.
      kernels::reduceHostUnchecked(spec_, room.data(), local, data.data(), n, finalize && target != nullptr);
      if (target != nullptr) copyOut(target, room.data(), bytes);
    } else {
      kernels::reduceHostUnchecked(spec_, target, local, data.data(), n, finalize);
      if (to != nullptr) to->post(target, bytes);
    }
    if (sendInPlace) ProgressEngine::onConnection(*to, [&] { to->commitWritten(bytes); });
    else if (viaSlot) sendFromSlot(*to, slotIndex, bytes);
    ProgressEngine::onConnection(from, [&] { from.consumeRead(bytes); });
    done += n;
  }
}

void HostPrimitives::reduceIntoFifo(char* room, char* target, const char* local, const char* remote,
                                    std::size_t n, bool finalize) {
  const std::size_t bytes = n * elemSize_;
  // reduceHostMany's arithmetic is this reduction's (remote, then local
  // combined into it) where it pre-multiplies nothing (the remote bytes
  // were scaled where they began) and divides only a finished sum.
  const bool many = spec_.kind != kernels::ReduceKind::PreMulSum &&
                    (spec_.kind != kernels::ReduceKind::SumPostDiv || (finalize && target != nullptr));
  if (target == local || (target != nullptr && !streaming_)) {
    // Into the output with ordinary stores (in place its lines are in cache,
    // just read), then around the cache into the FIFO.
    kernels::reduceHostUnchecked(spec_, target, local, remote, n, finalize);
    kernels::copyStreaming(room, target, bytes);
  } else if (many) {
    // Into the FIFO and, where there is one, the output, both around the
    // cache, in one pass.
    void* outputs[2] = {room, target};
    const void* inputs[2] = {remote, local};
    kernels::reduceHostMany(spec_, outputs, target != nullptr ? 2 : 1, inputs, 2, n, true);
  } else {
    // A pre-multiplied sum, or a division not yet due on its way round the
    // ring: into the FIFO with ordinary stores, then the output around the
    // cache, as without this option.
    kernels::reduceHostUnchecked(spec_, room, local, remote, n, finalize && target != nullptr);
    if (target != nullptr) copyOut(target, room, bytes);
    return;
  }
  // The next rank reads the FIFO once the slot is published.
  kernels::streamingFence();
}

void HostPrimitives::recvReduceSend(int fromPeer, int toPeer, std::size_t inOffset,
                                    std::size_t count) {
  transport::RecvConnection& source = *from(fromPeer).connection;
  recvReduce(source, to(toPeer).connection, inOffset, nullptr, count, false, true);
}

void HostPrimitives::recvReduceCopy(int fromPeer, std::size_t inOffset, std::size_t outOffset,
                                    std::size_t count) {
  recvReduce(*from(fromPeer).connection, nullptr, inOffset, outAt(outOffset), count, true, false);
}

void HostPrimitives::recvReduceCopySend(int fromPeer, int toPeer, std::size_t inOffset,
                                        std::size_t outOffset, std::size_t count) {
  transport::RecvConnection& source = *from(fromPeer).connection;
  recvReduce(source, to(toPeer).connection, inOffset, outAt(outOffset), count, true, false);
}

void HostPrimitives::recvCopySend(int fromPeer, int toPeer, std::size_t outOffset,
                                  std::size_t count) {
  InLink& in = from(fromPeer);
  OutLink& out = to(toPeer);
  transport::RecvConnection& source = *in.connection;
  transport::SendConnection& target = *out.connection;
  if (count == 0) return;
  char* dst = outAt(outOffset);
  const std::size_t total = count * elemSize_;
  if (in.copyDescribed || out.describe) {
    if (in.copyDescribed) copyDescribed(source, dst, total);
    else receiveInto(source, dst, total);
    if (out.describe) describe(target, dst, total);
    else target.post(dst, total);
    return;
  }
  if (source.receivesInPlace() && target.sendsInPlace()) {
    // From the sender's buffer into the receiver's and the output.
    source.postInPlace(total);
    for (std::size_t done = 0; done < total;) {
      const std::size_t want = std::min(staging_.slotBytes(), total - done);
      std::span<char> room = waitRoom(target, 1, want);
      std::span<const char> data = waitData(source, 1);
      const std::size_t n = std::min({want, room.size(), data.size()});
      kernels::copyToPublish(room.data(), data.data(), n, streamingFifo_);
      ProgressEngine::onConnection(target, [&] { target.commitWritten(n); });
      copyOut(dst + done, data.data(), n);
      ProgressEngine::onConnection(source, [&] { source.consumeRead(n); });
      done += n;
    }
    return;
  }
  // Forward each slice as soon as it has arrived (cut-through).
  for (std::size_t done = 0; done < count;) {
    std::size_t n = std::min(sliceElems(), count - done);
    char* slice = outAt(outOffset + done);
    receiveInto(source, slice, n * elemSize_);
    target.post(slice, n * elemSize_);
    done += n;
  }
}

void HostPrimitives::copySend(int peer, std::size_t inOffset, std::size_t outOffset,
                              std::size_t count) {
  OutLink& link = to(peer);
  if (link.describe && count > 0) {
    describe(*link.connection, inAt(inOffset), count * elemSize_);
    localCopy(inOffset, outOffset, count);
    return;
  }
  // Send straight from the input, then copy locally while it leaves.
  link.connection->post(inAt(inOffset), count * elemSize_);
  engine_.progressAll();
  localCopy(inOffset, outOffset, count);
}

void HostPrimitives::localReduceCopy(std::size_t inOffset, std::size_t outOffset, std::size_t count) {
  if (count > 0) kernels::reduceHostUnchecked(spec_, outAt(outOffset), inAt(inOffset), nullptr, count, true);
}

void HostPrimitives::localCopy(std::size_t inOffset, std::size_t outOffset, std::size_t count) {
  const char* src = inAt(inOffset);
  char* dst = outAt(outOffset);
  const std::size_t bytes = count * elemSize_;
  if (bytes == 0 || src == dst) return;
  if (src < dst + bytes && dst < src + bytes) std::memmove(dst, src, bytes);  // overlapping
  else copyOut(dst, src, bytes);
}

void HostPrimitives::recvReduceCopyAll(const int* order, int nranks, int self,
                                       std::size_t inOffset, std::size_t outOffset,
                                       std::size_t count) {
  // Everything arrives into scratch first (this path serves small messages),
  // then the reduction runs in the given order: the same bits on every rank.
  const std::size_t bytes = count * elemSize_;
  char* const gathered = staging_.fanIn(bytes * static_cast<std::size_t>(nranks));
  for (int k = 0; k < nranks; ++k) {
    if (order[k] == self) continue;
    InLink& link = from(order[k]);
    link.connection->post(gathered + k * bytes, bytes);
  }
  flushStamps();
  engine_.drain("exchanging the inputs of a direct all-reduce");
  if (count == 0) return;
  // Every rank combines the same values in the same order: the peers'
  // elements arrive pre()-multiplied (and rounded to the type), so this
  // rank's must be too, and the combination runs without pre(). Values are
  // combined where they lie; this rank's input is copied aside only when it
  // needs pre(), or when it is the output and comes after the first
  // combination (which overwrites the output).
  kernels::ReduceSpec combine = spec_;
  if (hasPre_) combine.kind = kernels::ReduceKind::Sum;
  const char* own = inAt(inOffset);
  char* dst = outAt(outOffset);
  int ownIndex = 0;
  while (order[ownIndex] != self) ++ownIndex;
  const bool overlaps = own < dst + bytes && dst < own + bytes;
  if (hasPre_ || (overlaps && ownIndex >= 2)) {
    char* slot = gathered + static_cast<std::size_t>(ownIndex) * bytes;
    kernels::reduceHostUnchecked(spec_, slot, own, nullptr, count, false);
    own = slot;
  }
  auto source = [&](int k) -> const char* {
    return k == ownIndex ? own : gathered + static_cast<std::size_t>(k) * bytes;
  };
  // Every rank runs these same steps on the same values: the same bits.
  kernels::reduceHostUnchecked(combine, dst, source(1), source(0), count, nranks == 2);
  for (int k = 2; k < nranks; ++k)
    kernels::reduceHostUnchecked(combine, dst, source(k), dst, count, k == nranks - 1);
}

void HostPrimitives::finish() {
  // The ring's links a checked collective stamps but did not use.
  if (ringNext_ >= 0) to(ringNext_);
  if (ringPrev_ >= 0) from(ringPrev_);
  // Usually the last receive completed everything: then one progress pass
  // (which a transport with manual progress needs to push its last writes
  // out before this rank may return and exit) and one look at each
  // connection end the operation, with or without stamps (not so when a
  // receiver still reads this rank's buffers).
  engine_.progressAll();
  if (!describedAny_ && engine_.settled()) {
    if (streaming_) kernels::streamingFence();
    return;
  }
  if (stamp_ != nullptr) {
    // Stamps first: a peer may wait for ours before it sends what we wait
    // for. Stamps no bytes carried leave alone now; those due from peers
    // that sent us nothing are checked once they come. Usually every stamp
    // rode on data: then this is a load per connection.
    auto stampsDone = [&] {
      for (transport::SendConnection* connection : engine_.sends())
        if (connection->stampPending()) return false;
      for (transport::RecvConnection* connection : engine_.recvs())
        if (connection->stampsOutstanding() != 0 &&
            !ProgressEngine::onConnection(*connection, [&] { return connection->stampChecked(); }))
          return false;
      return true;
    };
    if (!stampsDone()) {
      for (transport::SendConnection* connection : engine_.sends())
        ProgressEngine::onConnection(*connection, [&] { connection->flushStamp(); });
      engine_.waitUntil(stampsDone, "exchanging operation stamps");
    }
  }
  engine_.drain("finishing sends");
  if (describedAny_) {
    // Our buffers stay ours to keep only once the receivers have read them.
    for (OutLink& link : links_.out) {
      if (link.connection == nullptr || !link.describe) continue;
      transport::SendConnection& connection = *link.connection;
      const std::uint64_t sent = connection.postedBytes();
      engine_.waitUntil([&] { return connection.acknowledgedBytes() >= sent; },
                        "waiting for a peer to read our buffers");
    }
  }
  if (streaming_) kernels::streamingFence();
}

}  // namespace hora::core

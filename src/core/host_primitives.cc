#include "core/host_primitives.h"

#include <cstring>

#include "base/error.h"
#include "kernels/copy_host.h"

namespace hora::core {

StagingPool::StagingPool(std::size_t slotBytes, int slots)
    : slotBytes_(slotBytes), memory_(slotBytes * slots), marks_(slots, 0) {}

HostPrimitives::HostPrimitives(ProgressEngine& engine, transport::SendConnection* next,
                               transport::RecvConnection* prev, const void* in, void* out,
                               const kernels::ReduceSpec& spec, StagingPool& staging,
                               bool streamingStores, bool singleCopy)
    : engine_(engine),
      next_(next),
      prev_(prev),
      in_(static_cast<const char*>(in)),
      out_(static_cast<char*>(out)),
      spec_(spec),
      elemSize_(dataTypeSize(spec.type)),
      hasPre_(spec.kind == kernels::ReduceKind::PreMulSum),
      streaming_(streamingStores),
      staging_(staging) {
  HORA_ENFORCE(staging.slotBytes() >= elemSize_, "staging slot smaller than an element");
  if (!singleCopy) return;
  // Both ends of a connection decide alike: the receiver from its own test
  // of the sender's memory, the sender from the receiver's answer to it.
  if (prev_ != nullptr) copyFromPrevious_ = prev_->readsPeerMemory();
  if (next_ != nullptr) {
    transport::PeerMemoryAccess access;
    engine_.waitUntil(
        [&] { return (access = next_->peerMemoryAccess()) != transport::PeerMemoryAccess::Unknown; },
        "waiting for the next rank's shared-memory handshake");
    describeToNext_ = access == transport::PeerMemoryAccess::Yes;
  }
}

namespace {
// What a single-copy sender puts in the stream instead of the bytes.
struct BufferDescription {
  std::uint64_t address;
  std::uint64_t bytes;
};
}  // namespace

void HostPrimitives::describe(const char* data, std::size_t bytes) {
  std::span<char> room = waitRoom(sizeof(BufferDescription), sizeof(BufferDescription));
  const BufferDescription description{reinterpret_cast<std::uint64_t>(data), bytes};
  std::memcpy(room.data(), &description, sizeof(description));
  next_->commitWritten(sizeof(description));
}

void HostPrimitives::copyDescribed(char* dst, std::size_t bytes) {
  prev_->postInPlace(sizeof(BufferDescription));
  std::span<const char> data = waitData(sizeof(BufferDescription));
  BufferDescription description;
  std::memcpy(&description, data.data(), sizeof(description));
  if (description.bytes != bytes)
    fail(ErrorKind::Internal, "the previous rank, ", prev_->peerName(), ", described ",
         description.bytes, " bytes where ", bytes, " were expected");
  prev_->readPeerMemory(dst, description.address, bytes);
  // Consuming the description tells the sender its buffer has been read.
  prev_->consumeRead(sizeof(description));
}

void HostPrimitives::copyOut(char* dst, const char* src, std::size_t bytes) {
  if (streaming_) kernels::copyStreaming(dst, src, bytes);
  else std::memcpy(dst, src, bytes);
}

std::span<char> HostPrimitives::waitRoom(std::size_t minBytes, std::size_t maxBytes) {
  std::span<char> room;
  engine_.waitUntil([&] { return (room = next_->writable(maxBytes)).size() >= minBytes; },
                    "waiting for room in the next rank's buffer");
  return room;
}

std::span<const char> HostPrimitives::waitData(std::size_t minBytes) {
  std::span<const char> data;
  engine_.waitUntil([&] { return (data = prev_->readable()).size() >= minBytes; },
                    "receiving from the previous rank");
  return data;
}

char* HostPrimitives::acquireSlot(int* index) {
  *index = nextSlot_;
  nextSlot_ = (nextSlot_ + 1) % staging_.slots();
  std::uint64_t mark = staging_.sendMark(*index);
  if (mark != 0 && next_ != nullptr)
    engine_.waitUntil([&] { return next_->completedBytes() >= mark; }, "sending to the next rank");
  staging_.sendMark(*index) = 0;
  return staging_.slot(*index);
}

void HostPrimitives::receiveInto(char* dst, std::size_t bytes) {
  prev_->post(dst, bytes);
  const std::uint64_t target = prev_->postedBytes();
  engine_.waitUntil([&] { return prev_->completedBytes() >= target; },
                    "receiving from the previous rank");
}

void HostPrimitives::sendFromSlot(int index, std::size_t bytes) {
  next_->post(staging_.slot(index), bytes);
  staging_.sendMark(index) = next_->postedBytes();
}

void HostPrimitives::send(std::size_t inOffset, std::size_t count) {
  if (describeToNext_ && !hasPre_) {
    if (count > 0) describe(inAt(inOffset), count * elemSize_);
    return;
  }
  if (!hasPre_) {
    next_->post(inAt(inOffset), count * elemSize_);
    engine_.progressAll();
    return;
  }
  // PreMulSum: what leaves is the scaled input, built slice by slice.
  for (std::size_t done = 0; done < count;) {
    std::size_t n = std::min(sliceElems(), count - done);
    int index;
    char* slot = acquireSlot(&index);
    kernels::reduceHost(spec_, slot, inAt(inOffset + done), nullptr, n, false);
    sendFromSlot(index, n * elemSize_);
    engine_.progressAll();
    done += n;
  }
}

void HostPrimitives::recv(std::size_t outOffset, std::size_t count) {
  if (count == 0) return;
  if (copyFromPrevious_) {
    copyDescribed(outAt(outOffset), count * elemSize_);
    return;
  }
  if (!prev_->receivesInPlace()) {
    receiveInto(outAt(outOffset), count * elemSize_);
    return;
  }
  // Out of the previous rank's buffer, with the output's kind of stores.
  const std::size_t total = count * elemSize_;
  char* dst = outAt(outOffset);
  prev_->postInPlace(total);
  for (std::size_t done = 0; done < total;) {
    std::span<const char> data = waitData(1);
    const std::size_t n = std::min(data.size(), total - done);
    copyOut(dst + done, data.data(), n);
    prev_->consumeRead(n);
    done += n;
  }
}

void HostPrimitives::recvReduce(std::size_t inOffset, char* dst, std::size_t count, bool finalize,
                                bool forward, bool dstIsSlot) {
  if (prev_->receivesInPlace()) {
    recvReduceInPlace(inOffset, dstIsSlot ? nullptr : dst, count, finalize, forward);
    return;
  }
  for (std::size_t done = 0; done < count;) {
    std::size_t n = std::min(sliceElems(), count - done);
    int index;
    char* slot = acquireSlot(&index);
    receiveInto(slot, n * elemSize_);
    char* target = dstIsSlot ? slot : dst + done * elemSize_;
    kernels::reduceHost(spec_, target, inAt(inOffset + done), slot, n, finalize);
    if (forward) {
      if (dstIsSlot) sendFromSlot(index, n * elemSize_);
      else next_->post(target, n * elemSize_);
    }
    done += n;
  }
}

void HostPrimitives::recvReduceInPlace(std::size_t inOffset, char* dst, std::size_t count,
                                       bool finalize, bool forward) {
  const bool sendInPlace = forward && next_->sendsInPlace();
  const bool viaSlot = forward && dst == nullptr && !sendInPlace;
  prev_->postInPlace(count * elemSize_);
  for (std::size_t done = 0; done < count;) {
    const std::size_t want = std::min(sliceElems(), count - done);
    // Room first, then data: while waiting for room we hold nothing of the
    // previous rank's, so it can always go on sending to us.
    std::span<char> room;
    int slotIndex = -1;
    if (sendInPlace) room = waitRoom(elemSize_, want * elemSize_);
    else if (viaSlot) room = {acquireSlot(&slotIndex), want * elemSize_};
    std::span<const char> data = waitData(elemSize_);
    std::size_t n = std::min(want, data.size() / elemSize_);
    if (sendInPlace || viaSlot) n = std::min(n, room.size() / elemSize_);
    const std::size_t bytes = n * elemSize_;
    const char* local = inAt(inOffset + done);
    char* target = dst == nullptr ? nullptr : dst + done * elemSize_;
    if ((sendInPlace || viaSlot) && target == local) {
      // In place: the output's lines are in cache (just read); reduce there
      // and copy to the next rank.
      kernels::reduceHost(spec_, target, local, data.data(), n, finalize);
      std::memcpy(room.data(), target, bytes);
    } else if (sendInPlace || viaSlot) {
      // Reduce into the next rank's buffer (or a slot), then keep a copy.
      kernels::reduceHost(spec_, room.data(), local, data.data(), n, finalize && target != nullptr);
      if (target != nullptr) copyOut(target, room.data(), bytes);
    } else {
      kernels::reduceHost(spec_, target, local, data.data(), n, finalize);
      if (forward) next_->post(target, bytes);
    }
    if (sendInPlace) next_->commitWritten(bytes);
    else if (viaSlot) sendFromSlot(slotIndex, bytes);
    prev_->consumeRead(bytes);
    done += n;
  }
}

void HostPrimitives::recvReduceSend(std::size_t inOffset, std::size_t count) {
  recvReduce(inOffset, nullptr, count, false, true, true);
}

void HostPrimitives::recvReduceCopy(std::size_t inOffset, std::size_t outOffset, std::size_t count) {
  recvReduce(inOffset, outAt(outOffset), count, true, false, false);
}

void HostPrimitives::recvReduceCopySend(std::size_t inOffset, std::size_t outOffset,
                                        std::size_t count) {
  recvReduce(inOffset, outAt(outOffset), count, true, true, false);
}

void HostPrimitives::recvCopySend(std::size_t outOffset, std::size_t count) {
  if (count == 0) return;
  if (copyFromPrevious_ || describeToNext_) {
    char* dst = outAt(outOffset);
    const std::size_t bytes = count * elemSize_;
    if (copyFromPrevious_) copyDescribed(dst, bytes);
    else receiveInto(dst, bytes);
    if (describeToNext_) describe(dst, bytes);
    else next_->post(dst, bytes);
    return;
  }
  if (prev_->receivesInPlace() && next_->sendsInPlace()) {
    // From the previous rank's buffer into the next rank's and the output.
    const std::size_t total = count * elemSize_;
    char* dst = outAt(outOffset);
    prev_->postInPlace(total);
    for (std::size_t done = 0; done < total;) {
      const std::size_t want = std::min(staging_.slotBytes(), total - done);
      std::span<char> room = waitRoom(1, want);
      std::span<const char> data = waitData(1);
      const std::size_t n = std::min({want, room.size(), data.size()});
      std::memcpy(room.data(), data.data(), n);
      next_->commitWritten(n);
      copyOut(dst + done, data.data(), n);
      prev_->consumeRead(n);
      done += n;
    }
    return;
  }
  // Forward each slice as soon as it has arrived (cut-through).
  for (std::size_t done = 0; done < count;) {
    std::size_t n = std::min(sliceElems(), count - done);
    char* dst = outAt(outOffset + done);
    receiveInto(dst, n * elemSize_);
    next_->post(dst, n * elemSize_);
    done += n;
  }
}

void HostPrimitives::copySend(std::size_t inOffset, std::size_t outOffset, std::size_t count) {
  if (describeToNext_ && count > 0) {
    describe(inAt(inOffset), count * elemSize_);
    localCopy(inOffset, outOffset, count);
    return;
  }
  // Send straight from the input, then copy locally while it leaves.
  next_->post(inAt(inOffset), count * elemSize_);
  engine_.progressAll();
  localCopy(inOffset, outOffset, count);
}

void HostPrimitives::localReduceCopy(std::size_t inOffset, std::size_t outOffset, std::size_t count) {
  if (count > 0) kernels::reduceHost(spec_, outAt(outOffset), inAt(inOffset), nullptr, count, true);
}

void HostPrimitives::localCopy(std::size_t inOffset, std::size_t outOffset, std::size_t count) {
  const char* src = inAt(inOffset);
  char* dst = outAt(outOffset);
  const std::size_t bytes = count * elemSize_;
  if (bytes == 0 || src == dst) return;
  if (src < dst + bytes && dst < src + bytes) std::memmove(dst, src, bytes);  // overlapping
  else copyOut(dst, src, bytes);
}

void HostPrimitives::finish() {
  if (next_ != nullptr) engine_.drain("finishing sends to the next rank");
  if (describeToNext_) {
    // Our buffers stay ours to keep only once the next rank has read them.
    const std::uint64_t sent = next_->postedBytes();
    engine_.waitUntil([&] { return next_->acknowledgedBytes() >= sent; },
                      "waiting for the next rank to read our buffers");
  }
  if (streaming_) kernels::streamingFence();
}

}  // namespace hora::core
